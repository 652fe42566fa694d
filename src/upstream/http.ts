import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { type ErrorCode, UpstreamError, type UpstreamName } from '../errors.js';

/**
 * HTTP to one upstream origin: a keep-alive undici Pool with a connection cap, one time budget per
 * call (connect + headers + body), a response size cap, the caller's abort signal, one jittered
 * retry of a GET after a connection failure or a 503, and every failure mapped to a contract code.
 */

export interface UpstreamHttpOptions {
  name: UpstreamName;
  baseUrl: string;
  /** The whole budget of one call, retry included. */
  timeoutMs: number;
  connections: number;
  maxResponseBytes?: number;
}

export type QueryValue = string | number | null | undefined;

export interface CallOptions {
  query?: Record<string, QueryValue>;
  headers?: Record<string, string>;
  /** The caller's signal: when the client goes away, the upstream call is cancelled. */
  signal?: AbortSignal | undefined;
  /** Maps an upstream non-2xx status to a code and message of the contract (default: UPSTREAM_ERROR). */
  statusError?: (status: number) => { code: ErrorCode; message?: string } | undefined;
}

export interface UpstreamResponse {
  status: number;
  body: unknown;
}

const RETRYABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_CONNECT_TIMEOUT',
]);
export const DEFAULT_MAX_RESPONSE_BYTES = 8 * 1024 * 1024;

/** Builds `path?name=value&…` with every name and value percent-encoded: a value can never alter the path. */
export function buildPath(path: string, query: Record<string, QueryValue> = {}): string {
  const parts: string[] = [];
  for (const [name, value] of Object.entries(query)) {
    if (value === null || value === undefined) continue;
    parts.push(`${encodeURIComponent(name).replace(/%2E/g, '.')}=${encodeURIComponent(String(value))}`);
  }
  return parts.length === 0 ? path : `${path}?${parts.join('&')}`;
}

/** The contract code of a transport failure, from its Node or undici error code. */
function classify(code: string): ErrorCode {
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') return 'UPSTREAM_TIMEOUT';
  // Socket-level failures (ECONNREFUSED, ECONNRESET, EHOSTUNREACH, UND_ERR_SOCKET, …): nobody answered.
  if (/^E[A-Z]+$/.test(code) || RETRYABLE_CODES.has(code)) return 'UPSTREAM_UNAVAILABLE';
  return 'UPSTREAM_ERROR';
}

export class UpstreamHttp {
  readonly name: UpstreamName;
  private readonly pool: Pool;
  private readonly basePath: string;
  private readonly timeoutMs: number;

  constructor(options: UpstreamHttpOptions) {
    const url = new URL(options.baseUrl);
    this.name = options.name;
    this.timeoutMs = options.timeoutMs;
    this.basePath = url.pathname.replace(/\/+$/, '');
    this.pool = new Pool(url.origin, {
      connections: options.connections,
      pipelining: 1,
      keepAliveTimeout: 10_000,
      connectTimeout: options.timeoutMs,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      maxResponseSize: options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
    });
  }

  get(path: string, options: CallOptions = {}): Promise<UpstreamResponse> {
    return this.call('GET', path, undefined, options, true);
  }

  /** Never retried: a write reaches the upstream at most once. */
  put(path: string, body: unknown, options: CallOptions = {}): Promise<UpstreamResponse> {
    return this.call('PUT', path, JSON.stringify(body), options, false);
  }

  close(): Promise<void> {
    return this.pool.close();
  }

  private async call(
    method: 'GET' | 'PUT',
    path: string,
    body: string | undefined,
    options: CallOptions,
    retry: boolean,
  ): Promise<UpstreamResponse> {
    const deadline = AbortSignal.timeout(this.timeoutMs);
    const signal = options.signal ? AbortSignal.any([deadline, options.signal]) : deadline;
    const fullPath = this.basePath + buildPath(path, options.query);
    const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
    if (body !== undefined) headers['content-type'] = 'application/json';

    for (let attempt = 0; ; attempt++) {
      try {
        const res = await this.pool.request({ method, path: fullPath, headers, body, signal });
        if (retry && attempt === 0 && res.statusCode === 503) {
          await res.body.dump();
          await this.backoff(signal);
          continue;
        }
        const text = await res.body.text();
        return this.interpret(res.statusCode, text, options);
      } catch (error) {
        if (error instanceof UpstreamError) throw error;
        if (options.signal?.aborted) throw options.signal.reason ?? error;
        if (deadline.aborted) {
          throw new UpstreamError(
            this.name,
            'UPSTREAM_TIMEOUT',
            `${method} ${path}: no answer in ${this.timeoutMs} ms`,
          );
        }
        const code = (error as { code?: string }).code ?? '';
        if (retry && attempt === 0 && RETRYABLE_CODES.has(code)) {
          await this.backoff(signal);
          continue;
        }
        if (code === 'UND_ERR_RES_EXCEEDED_MAX_SIZE') {
          throw new UpstreamError(
            this.name,
            'UPSTREAM_ERROR',
            `${method} ${path}: response over the size cap`,
          );
        }
        throw new UpstreamError(
          this.name,
          classify(code),
          `${method} ${path}: ${code || (error as Error).message}`,
        );
      }
    }
  }

  private async backoff(signal: AbortSignal): Promise<void> {
    // 50–150 ms: enough for a restarting upstream, jittered so that retries do not arrive in lockstep.
    await sleep(50 + Math.random() * 100, undefined, { signal }).catch(() => {});
    if (signal.aborted) throw signal.reason;
  }

  private interpret(status: number, text: string, options: CallOptions): UpstreamResponse {
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      if (status >= 200 && status < 300) {
        throw new UpstreamError(this.name, 'UPSTREAM_ERROR', `status ${status} with a body that is not JSON`);
      }
    }
    if (status < 200 || status >= 300) {
      const mapped =
        options.statusError?.(status) ??
        (status === 401 || status === 403 ? { code: 'UNAUTHENTICATED' as const } : undefined);
      const upstreamMessage =
        typeof body === 'object' && body !== null ? JSON.stringify(body).slice(0, 300) : '';
      throw new UpstreamError(
        this.name,
        mapped?.code ?? 'UPSTREAM_ERROR',
        `status ${status} ${upstreamMessage}`,
        mapped?.message,
        status,
      );
    }
    return { status, body };
  }
}
