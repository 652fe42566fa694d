import type { IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { CorsConfig, ServerLimits } from '../config.js';
import type { ErrorCode } from '../errors.js';
import { CorsPolicy, DEFAULT_CACHE_CONTROL } from '../graphql/exchange.js';
import type { GatewayMetrics } from '../ops/metrics.js';
import { startTrace } from '../ops/request-trace.js';
import { type ClientIdentity, clientAddress } from '../scale/rate-limit.js';
import { headersOf } from './node-response.js';

/**
 * Admission of a request before anything reads it (contract.md §8, intake is bounded), in front of
 * the gateway's listener, so that the JSON fast path and Yoga's own path are both behind it. Three
 * bounds, each refused with a coded JSON answer, `connection: close` (the refused body is never
 * read) and a count in `http_requests_refused_total{reason}`:
 *
 * - Bytes of request bodies in flight, per process (MAX_INFLIGHT_BODY_BYTES). A body is reserved
 *   at its declared length (one of unknown length, chunked, at MAX_REQUEST_BYTES: the worst case)
 *   when its request is admitted, and given back once, when the request closes: node:http closes
 *   it once its body has been read, or when its socket goes. Beyond the budget: 503 with
 *   `retry-after`, RATE_LIMITED (`body_budget`). A body never brings more than it declared (node's
 *   parser reads no further), so the bytes held for bodies stay within the budget however slowly
 *   they come; a length over MAX_REQUEST_BYTES is still answered 413 by the paths themselves
 *   (fast-path.ts, body-limit.ts), and reserves only the cap meanwhile.
 * - A client's connections (MAX_CONNECTIONS_PER_CLIENT), the client being the rate limit's
 *   (rate-limit.ts: an IPv4 address or an IPv6 /64, TRUST_PROXY hops). With TRUST_PROXY = 0 the
 *   socket names its client, and sockets are counted as they open: one beyond the cap answers its
 *   first request 429 and is closed, or is closed after a second if it sends none. With
 *   TRUST_PROXY > 0 every socket is a proxy's, and what it carries is counted instead: each
 *   client's requests in flight, streams included, 429 beyond (`client_connections`).
 * - A body's pace, in the spirit of Apache's mod_reqtimeout `body=…,MinRate=…`: an allowance of
 *   BODY_TIMEOUT_MS, extended by a second for every MIN_BODY_RATE bytes that arrive, but never
 *   banked beyond BODY_TIMEOUT_MS ahead, so that a burst cannot buy a long stall. A body whose
 *   allowance runs out is cut: 408 (or, once an answer has gone out, the socket closed),
 *   `slow_body`. One timer looks at every body still arriving, and runs only while there are some;
 *   progress is read from the socket's `bytesRead`, never from a `data` listener, which would take
 *   the body from whichever path reads it.
 *
 * This is every request's path: one whose body came with its headers (nearly all) costs two
 * header reads, an entry pushed on an array and one `close` listener, about 0.2 µs; one without a
 * body, the header reads. With TRUST_PROXY = 0 a client is counted per socket, not per request.
 */

export type IntakeLimits = Pick<
  ServerLimits,
  'maxInflightBodyBytes' | 'maxConnectionsPerClient' | 'minBodyRate' | 'bodyTimeoutMs'
>;

export type IntakeMetrics = Pick<GatewayMetrics, 'observeIntakeRefused' | 'bodyBytesInFlight'>;

export interface IntakeOptions {
  limits: IntakeLimits;
  /** MAX_REQUEST_BYTES: what a body of unknown length reserves. */
  maxRequestBytes: number;
  identity: ClientIdentity;
  /** Whose pages may read a refusal, as every other answer (graphql/exchange.ts). */
  cors: CorsConfig;
  metrics: IntakeMetrics;
}

const CLIENT = Symbol('intake client');
const BODY = Symbol('intake body');
type Counted = Socket & { [CLIENT]?: string };
type Reserving = IncomingMessage & { [BODY]?: Arriving };

/** How long a socket beyond its client's cap may stay without sending the request it is refused. */
const REFUSED_SOCKET_MS = 1_000;

/** When a refused client may try again: a connection or a body ends within a second or so. */
const RETRY_AFTER_MS = 1_000;

/** A body admitted and still arriving: what it reserved, and where it stands against its allowance. */
interface Arriving {
  req: IncomingMessage;
  res: ServerResponse;
  bytes: number;
  /** Its place in `Intake.arriving`; -1 once released. */
  index: number;
  /** The socket's `bytesRead` when the timer last looked; -1 until it first has. */
  seen: number;
  /** When its allowance runs out (performance.now()); set when the timer first sees it. */
  deadline: number;
}

export class Intake {
  private readonly limits: IntakeLimits;
  private readonly maxRequestBytes: number;
  private readonly identity: ClientIdentity;
  private readonly metrics: IntakeMetrics;
  private readonly cors: CorsPolicy;
  /** Bytes reserved by the bodies in `arriving`. */
  private inFlight = 0;
  /**
   * The bodies admitted and not yet released, in no order: an array with swap-removal, which costs
   * a tenth of a Map or Set keyed by objects (their identity hashes) on every request.
   */
  private readonly arriving: Arriving[] = [];
  private timer: NodeJS.Timeout | null = null;
  /** How often the timer looks: a tenth of the allowance, within [50 ms, 1 s]. */
  private readonly tickMs: number;
  /** Per client: its open sockets (TRUST_PROXY = 0) or its requests in flight (TRUST_PROXY > 0). */
  private readonly clients = new Map<string, number>();
  /** Sockets opened beyond their client's cap, answered 429 when their request comes. */
  private readonly refusedSockets = new WeakSet<Socket>();
  private refusedOpen = 0;

  constructor(options: IntakeOptions) {
    this.limits = options.limits;
    this.maxRequestBytes = options.maxRequestBytes;
    this.identity = options.identity;
    this.metrics = options.metrics;
    this.cors = new CorsPolicy(options.cors);
    this.tickMs = Math.min(1_000, Math.max(50, Math.ceil(options.limits.bodyTimeoutMs / 10)));
  }

  /** Puts `server`'s sockets under the per-client cap, when sockets name their clients. */
  watch(server: Server): void {
    if (this.identity.trustProxy === 0) server.on('connection', (socket: Socket) => this.opened(socket));
  }

  /**
   * `listener` behind admission: a refused request never reaches it. As node:http's
   * `checkContinue` listener (`writeContinue`), a request sent with `Expect: 100-continue` is told
   * to send its body only once admitted, so that a refused one never sends it.
   */
  admit(listener: RequestListener, writeContinue = false): RequestListener {
    return (req, res) => {
      if (this.refusedOpen > 0 && this.refusedSockets.has(req.socket)) {
        this.tooManyConnections(req, res);
        return;
      }
      const client = this.identity.trustProxy > 0 ? this.forwardedClient(req) : null;
      if (client !== null && (this.clients.get(client) ?? 0) >= this.limits.maxConnectionsPerClient) {
        this.metrics.observeIntakeRefused('client_connections');
        this.tooManyConnections(req, res);
        return;
      }
      if (!this.reserve(req, res)) {
        this.metrics.observeIntakeRefused('body_budget');
        refuse(this.cors, req, res, 503, {
          message: 'The server is receiving too many request bodies at once: retry shortly.',
          code: 'RATE_LIMITED',
          retryAfterMs: RETRY_AFTER_MS,
        });
        return;
      }
      if (client !== null) {
        this.clients.set(client, (this.clients.get(client) ?? 0) + 1);
        res.on('close', () => this.left(client));
      }
      if (writeContinue) res.writeContinue();
      listener(req, res);
    };
  }

  /** A new socket (TRUST_PROXY = 0): counted for its client, or marked refused beyond the cap. */
  private opened(socket: Socket): void {
    const client = clientAddress(socket.remoteAddress, null, this.identity);
    const open = this.clients.get(client) ?? 0;
    if (open >= this.limits.maxConnectionsPerClient) {
      this.metrics.observeIntakeRefused('client_connections');
      this.refusedSockets.add(socket);
      this.refusedOpen++;
      socket.on('close', () => this.refusedOpen--);
      // node:http closes a socket whose timeout fires with no request to tell: one that never
      // sends its request is not held for HEADERS_TIMEOUT_MS.
      socket.setTimeout(REFUSED_SOCKET_MS);
      return;
    }
    this.clients.set(client, open + 1);
    // One listener for every socket, its client on the socket: no closure per connection (a
    // process holds one per open stream).
    (socket as Counted)[CLIENT] = client;
    socket.on('close', this.socketClosed);
  }

  private readonly socketClosed = (() => {
    const intake = this;
    return function (this: Counted) {
      const client = this[CLIENT];
      if (client !== undefined) intake.left(client);
    };
  })();

  private left(client: string): void {
    const open = (this.clients.get(client) ?? 1) - 1;
    if (open === 0) this.clients.delete(client);
    else this.clients.set(client, open);
  }

  private forwardedClient(req: IncomingMessage): string {
    return clientAddress(
      req.socket.remoteAddress,
      req.headers['x-forwarded-for'] as string | undefined,
      this.identity,
    );
  }

  private tooManyConnections(req: IncomingMessage, res: ServerResponse): void {
    refuse(this.cors, req, res, 429, {
      message: `Too many connections from this client: at most ${this.limits.maxConnectionsPerClient} at once.`,
      code: 'RATE_LIMITED',
      retryAfterMs: RETRY_AFTER_MS,
    });
  }

  /**
   * Reserves the request's body, if it has one, and watches it until its request closes; false
   * when the budget has no room for it.
   */
  private reserve(req: IncomingMessage, res: ServerResponse): boolean {
    const declared = req.headers['content-length'];
    let bytes: number;
    if (declared !== undefined) bytes = Math.min(Number(declared), this.maxRequestBytes);
    else if (req.headers['transfer-encoding'] !== undefined) bytes = this.maxRequestBytes;
    else return true;
    if (!(bytes > 0)) return true;
    if (this.inFlight + bytes > this.limits.maxInflightBodyBytes) return false;
    this.inFlight += bytes;
    this.metrics.bodyBytesInFlight.inc(bytes);
    const body: Arriving = { req, res, bytes, index: this.arriving.length, seen: -1, deadline: 0 };
    this.arriving.push(body);
    // node:http closes a request once its body has been read (or its socket goes), long before a
    // stream's end: one listener for every request, the body on the request.
    (req as Reserving)[BODY] = body;
    req.on('close', this.requestClosed);
    if (this.timer === null) this.timer = setTimeout(this.tick, this.tickMs).unref();
    return true;
  }

  private readonly requestClosed = (() => {
    const intake = this;
    return function (this: Reserving) {
      const body = this[BODY];
      if (body !== undefined) intake.release(body);
    };
  })();

  /** Gives a body's reservation back, once. */
  private release(body: Arriving): void {
    (body.req as Reserving)[BODY] = undefined;
    if (body.index < 0) return;
    const last = this.arriving.pop() as Arriving;
    if (last !== body) {
      this.arriving[body.index] = last;
      last.index = body.index;
    }
    body.index = -1;
    this.inFlight -= body.bytes;
    this.metrics.bodyBytesInFlight.dec(body.bytes);
  }

  /** The one timer: every body still arriving, against its allowance. */
  private readonly tick = () => {
    this.timer = null;
    const now = performance.now();
    const { bodyTimeoutMs, minBodyRate } = this.limits;
    // From the end: a body cut here takes the last one's place, which has been looked at already.
    for (let i = this.arriving.length - 1; i >= 0; i--) {
      const body = this.arriving[i] as Arriving;
      const { req } = body;
      if (req.complete) continue;
      const read = req.socket?.bytesRead ?? body.seen;
      // Bytes the server has and not yet read are its own delay, not the client's.
      if (body.seen < 0 || req.readableLength > 0) {
        body.deadline = now + bodyTimeoutMs;
      } else if (read > body.seen) {
        body.deadline = Math.min(
          now + bodyTimeoutMs,
          body.deadline + ((read - body.seen) * 1_000) / minBodyRate,
        );
      }
      body.seen = read;
      if (now > body.deadline) this.cut(body);
    }
    if (this.arriving.length > 0) this.timer = setTimeout(this.tick, this.tickMs).unref();
  };

  /** A body that fell behind its allowance: 408 if nothing was answered yet, else the socket closed. */
  private cut(body: Arriving): void {
    const { req } = body;
    this.release(body);
    this.metrics.observeIntakeRefused('slow_body');
    if (body.res.headersSent) {
      req.socket?.destroy();
      return;
    }
    refuse(this.cors, req, body.res, 408, {
      message: `The request body arrived slower than ${this.limits.minBodyRate} bytes a second.`,
      code: 'BAD_USER_INPUT',
    });
  }
}

/**
 * A refusal, answered before (or instead of) reading the request's body, as answer.ts finishes
 * every answer (CORS, `x-request-id`, `cache-control`), and with `connection: close`: the body is
 * not read, so the connection cannot carry another request.
 */
function refuse(
  cors: CorsPolicy,
  req: IncomingMessage,
  res: ServerResponse,
  status: number,
  error: { message: string; code: ErrorCode; retryAfterMs?: number },
): void {
  const { message, ...extensions } = error;
  const text = JSON.stringify({ errors: [{ message, extensions }] });
  // A trace only for its request id (the caller's, or a new one): no span, nothing recorded.
  const { requestId } = startTrace(headersOf(req).get, false);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    ...cors.headers(req.headers.origin, requestId),
    'cache-control': DEFAULT_CACHE_CONTROL,
    connection: 'close',
    ...(error.retryAfterMs === undefined
      ? {}
      : { 'retry-after': String(Math.ceil(error.retryAfterMs / 1_000)) }),
  });
  res.end(text);
}
