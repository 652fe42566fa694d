import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';

export interface HttpErrorOptions {
  headers?: Record<string, string>;
  /** A machine-readable reason (go-kratos `reason`, e.g. ROUND_NOT_FOUND); by default the status's. */
  reason?: string;
}

/** A failure the devnet answers with `status` and a body in the service's own error format. */
export class HttpError extends Error {
  readonly headers: Record<string, string>;
  readonly reason: string | undefined;

  constructor(
    readonly status: number,
    message: string,
    options: HttpErrorOptions = {},
  ) {
    super(message);
    this.headers = options.headers ?? {};
    this.reason = options.reason;
  }
}

export interface DevnetRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  /** The JSON body; rejects with 415, 413 or 400 as the request deserves. */
  json(): Promise<unknown>;
}

export interface Reply {
  status?: number;
  body: unknown;
}

export type Handler = (req: DevnetRequest) => Reply | Promise<Reply>;

export interface RecordedRequest {
  service: string;
  method: string;
  path: string;
  query: string;
  headers: IncomingHttpHeaders;
}

export interface ServiceOptions {
  name: string;
  /** Routes by path, then by method. */
  routes: Record<string, Partial<Record<string, Handler>>>;
  /** The service's own error body (each upstream reports errors in its own shape). */
  errorBody(status: number, message: string, reason?: string): unknown;
  /** Added before every response, to simulate a distant upstream. */
  latencyMs?: () => number;
  /** While true, every request is answered 503 (an outage, for the soak test). */
  failing?: () => boolean;
  /** While it returns a promise, every request waits for it before it is answered (a test's gate). */
  held?: () => Promise<void> | null;
  onRequest?(req: RecordedRequest): void;
}

const MAX_BODY_BYTES = 64 * 1024;

const STATUS_TEXT: Record<number, string> = { 404: 'not found', 405: 'method not allowed' };

// With `connection: close`: the client must not reuse a connection whose body was left unread.
const tooLarge = () =>
  new HttpError(413, `body larger than ${MAX_BODY_BYTES} bytes`, { headers: { connection: 'close' } });

function readJson(req: IncomingMessage): Promise<unknown> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/json') {
    return Promise.reject(new HttpError(415, 'content type must be application/json'));
  }
  const declared = Number(req.headers['content-length']);
  if (declared > MAX_BODY_BYTES) {
    return Promise.reject(tooLarge());
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        req.removeAllListeners('data');
        req.resume();
        reject(tooLarge());
      } else chunks.push(chunk);
    });
    req.on('error', reject);
    req.on('end', () => {
      if (size > MAX_BODY_BYTES) return;
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch {
        reject(new HttpError(400, 'body is not valid JSON'));
      }
    });
  });
}

function send(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const payload = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(payload),
    ...headers,
  });
  res.end(payload);
}

export function createService(options: ServiceOptions): Server {
  const { routes, errorBody } = options;

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    const rawQuery = q === -1 ? '' : url.slice(q + 1);
    const method = req.method ?? 'GET';
    options.onRequest?.({ service: options.name, method, path, query: rawQuery, headers: req.headers });
    await options.held?.();
    const latency = options.latencyMs?.() ?? 0;
    if (latency > 0) await new Promise((resolve) => setTimeout(resolve, latency));

    try {
      if (options.failing?.()) throw new HttpError(503, 'service unavailable');
      const byMethod = routes[path];
      if (!byMethod) throw new HttpError(404, `${STATUS_TEXT[404]}: ${path}`);
      const handler = byMethod[method];
      if (!handler) {
        throw new HttpError(405, `${STATUS_TEXT[405]}: ${method}`, {
          headers: { allow: Object.keys(byMethod).join(', ') },
        });
      }
      const reply = await handler({
        method,
        path,
        query: new URLSearchParams(rawQuery),
        headers: req.headers,
        json: () => readJson(req),
      });
      send(res, reply.status ?? 200, reply.body);
    } catch (error) {
      if (error instanceof HttpError) {
        send(res, error.status, errorBody(error.status, error.message, error.reason), error.headers);
      } else send(res, 500, errorBody(500, 'internal error'));
    }
  };

  const server = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  // A devnet never hangs on a client that stalls.
  server.headersTimeout = 5_000;
  server.requestTimeout = 10_000;
  server.keepAliveTimeout = 5_000;
  return server;
}
