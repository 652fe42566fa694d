import {
  BrokenCircuitError,
  BulkheadRejectedError,
  bulkhead,
  ConsecutiveBreaker,
  circuitBreaker,
  ExponentialBackoff,
  handleWhen,
  type IPolicy,
  retry,
  wrap,
} from 'cockatiel';
import { type Dispatcher, Pool } from 'undici';
import { type Delivery, type ErrorCode, UpstreamError, type UpstreamName } from '../errors.js';
import { type CircuitName, circuitName } from '../lib/circuit.js';
import type { UpstreamCallEvent } from '../ops/metrics.js';
import type { RequestTrace } from '../ops/request-trace.js';
import { traceEvent, upstreamSpan } from '../ops/tracing.js';
import { type AbortLike, Cancellation } from './cancellation.js';

/**
 * HTTP to one upstream origin. A keep-alive undici Pool with a connection cap, and around each call
 * (cockatiel policies, outermost first):
 * - one retry of a GET after a connection failure or a 503, with a decorrelated-jitter delay;
 * - a circuit breaker that opens after consecutive failures (timeouts, refused or reset
 *   connections, 5xx, bodies that are not JSON), fails fast while open, and half-opens to recover;
 * - a bulkhead: at most `connections` calls in flight and a bounded queue, so that a slow upstream
 *   piles up its own callers only, never another upstream's;
 * all inside one time budget per call (queueing, connect, headers, body and the retry), with a
 * response size cap and the caller's abort signal. Every failure becomes an UpstreamError coded
 * per contract.md, which says how far the request got (`delivery`): a write's caller tells its
 * client from it whether the write may have happened.
 */

export interface ResilienceOptions {
  /** Consecutive failures that open the circuit. */
  failureThreshold: number;
  /** How long the circuit stays open before one trial call. */
  halfOpenAfterMs: number;
}

export interface UpstreamHttpOptions {
  name: UpstreamName;
  baseUrl: string;
  /** The whole budget of one call, retry included. */
  timeoutMs: number;
  /** Connections to the origin, which is also the number of calls in flight. */
  connections: number;
  maxResponseBytes?: number;
  resilience?: ResilienceOptions;
  /** Told of every HTTP request sent, when it ends (metrics). */
  observe?: (event: UpstreamCallEvent) => void;
}

export type QueryValue = string | number | null | undefined;

/** What a call carries of the GraphQL request it serves. */
export interface CallScope {
  /** The caller's signal: when the client goes away, the upstream call is cancelled. */
  signal?: AbortLike | undefined;
  /** Its request id and trace, sent upstream; it counts the calls made. */
  trace?: RequestTrace | undefined;
}

export interface CallOptions extends CallScope {
  query?: Record<string, QueryValue>;
  headers?: Record<string, string>;
  /** Maps an upstream non-2xx status to a code and message of the contract (default: UPSTREAM_ERROR). */
  statusError?: (status: number) => { code: ErrorCode; message?: string } | undefined;
}

export interface UpstreamResponse {
  status: number;
  body: unknown;
}

const DEFAULT_MAX_RESPONSE_BYTES = 8 * 1024 * 1024;
const DEFAULT_RESILIENCE: ResilienceOptions = { failureThreshold: 5, halfOpenAfterMs: 10_000 };
/** Calls that may wait for a free connection, per connection, before the bulkhead refuses more. */
const QUEUE_PER_CONNECTION = 8;

/** Socket-level failures: nobody answered, so a GET may safely be tried once more. */
const CONNECTION_FAILURES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/** An UpstreamError that says whether the call may be retried and whether it counts against the circuit. */
class CallError extends UpstreamError {
  retryable = false;
  breaksCircuit = false;
}

/** How far the current request of a call has got: written to its socket, and the status that came back. */
interface Progress {
  sent: boolean;
  status: number | undefined;
}

const deliveryOf = (progress: Progress): Delivery => progress.status ?? (progress.sent ? 'sent' : 'unsent');

/**
 * One request's undici handler: it notes how far the request got (written to its socket, the
 * status that came back) and collects the body's chunks, then settles once with the status and
 * the text. undici's `request()` would wrap the same events in an `AsyncResource`, a `Readable`
 * body and two promise layers, and still not say the two facts that tell a write's caller whether
 * it happened. A cancellation settles at once with its reason, even while the request waits for a
 * connection, and aborts the request as soon as undici hands over the means to.
 */
class Collector implements Dispatcher.DispatchHandler {
  private chunks: Buffer[] = [];
  private abortRequest: ((reason?: Error) => void) | null = null;
  private settled = false;

  constructor(
    private readonly signal: Cancellation,
    private readonly progress: Progress,
    private readonly resolve: (answer: { status: number; text: string }) => void,
    private readonly reject: (error: unknown) => void,
  ) {
    progress.sent = false;
    progress.status = undefined;
    // A call cancelled before its turn (its caller gone, its budget spent in the queue) sends
    // nothing: undici hands over the abort before it writes a byte.
    if (signal.aborted) this.fail(signal.reason);
    else signal.addEventListener('abort', this.cancelled);
  }

  private readonly cancelled = (): void => {
    this.fail(this.signal.reason);
    this.abortRequest?.();
  };

  /** Marks the request settled and stops listening for its cancellation, once: false when it already was. */
  private settle(): boolean {
    if (this.settled) return false;
    this.settled = true;
    this.signal.removeEventListener('abort', this.cancelled);
    return true;
  }

  private fail(error: unknown): void {
    if (this.settle()) this.reject(error);
  }

  onConnect(abort: (reason?: Error) => void): void {
    if (this.settled) abort();
    else this.abortRequest = abort;
  }
  onBodySent(): void {
    this.progress.sent = true;
  }
  onRequestSent(): void {
    this.progress.sent = true;
  }
  onHeaders(status: number): boolean {
    // 1xx answers are not the final status.
    if (status >= 200) this.progress.status = status;
    return true;
  }
  onData(chunk: Buffer): boolean {
    this.chunks.push(chunk);
    return true;
  }
  onComplete(): void {
    if (this.settled) return;
    let text: string;
    try {
      const [first] = this.chunks;
      const body = first && this.chunks.length === 1 ? first : Buffer.concat(this.chunks);
      // A UTF-8 byte order mark is not part of the text (as undici's body.text() drops it).
      const start = body.length >= 3 && body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf ? 3 : 0;
      text = body.toString('utf8', start);
    } catch (error) {
      // A body past V8's longest string (only with a size cap raised that far).
      this.fail(error);
      return;
    }
    if (this.settle()) this.resolve({ status: this.progress.status ?? 0, text });
  }
  onError(error: Error): void {
    this.fail(error);
  }
}

/** Query parameter names as sent: the clients' own few names, encoded once each. */
const encodedNames = new Map<string, string>();
const encodeName = (name: string): string => {
  let encoded = encodedNames.get(name);
  if (encoded === undefined) {
    encoded = encodeURIComponent(name).replace(/%2E/g, '.');
    if (encodedNames.size < 1_000) encodedNames.set(name, encoded);
  }
  return encoded;
};

/** Builds `path?name=value&…` with every name and value percent-encoded: a value can never alter the path. */
export function buildPath(path: string, query: Record<string, QueryValue> = {}): string {
  let built = path;
  let separator = '?';
  for (const name in query) {
    const value = query[name];
    if (value === null || value === undefined) continue;
    built += `${separator}${encodeName(name)}=${encodeURIComponent(String(value))}`;
    separator = '&';
  }
  return built;
}

/** The contract code of a transport failure, from its Node or undici error code. */
function classify(code: string): ErrorCode {
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') return 'UPSTREAM_TIMEOUT';
  if (/^E[A-Z]+$/.test(code) || CONNECTION_FAILURES.has(code)) return 'UPSTREAM_UNAVAILABLE';
  return 'UPSTREAM_ERROR';
}

/** The abort reason of a call whose time budget ran out. */
const TIMED_OUT = Symbol('upstream call timed out');

/** Rejects with the signal's reason when it aborts. */
function aborted(signal: AbortLike): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    else signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}

export class UpstreamHttp {
  readonly name: UpstreamName;
  private readonly pool: Pool;
  private readonly basePath: string;
  private readonly origin: URL;
  private readonly timeoutMs: number;
  private readonly observe: ((event: UpstreamCallEvent) => void) | undefined;
  private readonly breaker;
  private readonly bulkhead;
  private readonly readPolicy: IPolicy;
  private readonly writePolicy: IPolicy;

  constructor(options: UpstreamHttpOptions) {
    const url = new URL(options.baseUrl);
    const resilience = options.resilience ?? DEFAULT_RESILIENCE;
    this.name = options.name;
    this.timeoutMs = options.timeoutMs;
    this.observe = options.observe;
    this.basePath = url.pathname.replace(/\/+$/, '');
    this.origin = new URL(url.origin);
    this.pool = new Pool(url.origin, {
      connections: options.connections,
      pipelining: 1,
      keepAliveTimeout: 10_000,
      connectTimeout: options.timeoutMs,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      maxResponseSize: options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
    });
    this.breaker = circuitBreaker(
      handleWhen((e) => e instanceof CallError && e.breaksCircuit),
      {
        halfOpenAfter: resilience.halfOpenAfterMs,
        breaker: new ConsecutiveBreaker(resilience.failureThreshold),
      },
    );
    this.bulkhead = bulkhead(options.connections, options.connections * QUEUE_PER_CONNECTION);
    const retryOnce = retry(
      handleWhen((e) => e instanceof CallError && e.retryable),
      { maxAttempts: 1, backoff: new ExponentialBackoff({ initialDelay: 50, maxDelay: 150 }) },
    );
    this.readPolicy = wrap(retryOnce, this.breaker, this.bulkhead);
    this.writePolicy = wrap(this.breaker, this.bulkhead);
  }

  /** closed, open or half-open: for readiness and metrics. */
  get circuit(): CircuitName {
    return circuitName(this.breaker.state);
  }

  get(path: string, options: CallOptions = {}): Promise<UpstreamResponse> {
    return this.call('GET', path, undefined, options);
  }

  /** Never retried: a write reaches the upstream at most once. */
  put(path: string, body: unknown, options: CallOptions = {}): Promise<UpstreamResponse> {
    return this.call('PUT', path, JSON.stringify(body), options);
  }

  close(): Promise<void> {
    return this.pool.close();
  }

  private async call(method: 'GET' | 'PUT', path: string, body: string | undefined, options: CallOptions) {
    // One cancellation for the call: by its time budget or by the caller, whichever comes first.
    // A plain timer, cleared on completion, keeps nothing alive after the call.
    const cancel = new Cancellation();
    const timer = setTimeout(() => cancel.abort(TIMED_OUT), this.timeoutMs);
    const caller = options.signal;
    const onCallerAbort = () => cancel.abort(caller?.reason);
    if (caller?.aborted) onCallerAbort();
    else caller?.addEventListener('abort', onCallerAbort, { once: true });
    const endpoint = this.basePath + path;
    const request = {
      method,
      path: buildPath(endpoint, options.query),
      headers: {
        accept: 'application/json',
        ...options.headers,
        ...(body ? { 'content-type': 'application/json' } : {}),
        ...(options.trace ? { 'x-request-id': options.trace.requestId } : {}),
      },
      body,
    };
    // How far the call's latest request got; a call still queued has sent nothing.
    const progress: Progress = { sent: false, status: undefined };
    const policy = method === 'GET' ? this.readPolicy : this.writePolicy;
    try {
      // The signal is not handed to cockatiel: a queued call that it cancels never frees its place in
      // the bulkhead queue. A call whose budget runs out while queued is answered here at once, and
      // leaves the queue as soon as it reaches the front (its request aborts immediately).
      let attempts = 0;
      const running = policy.execute(() =>
        this.attempt(request, endpoint, { signal: cancel, progress }, options, attempts++),
      );
      // A call that runs at once is bounded by its own request's signal; only a queued one needs the race.
      return await (this.bulkhead.executionSlots > 0 ? running : Promise.race([running, aborted(cancel)]));
    } catch (error) {
      if (error instanceof UpstreamError) throw error;
      if (cancel.reason === TIMED_OUT) throw this.timeout(method, path, progress);
      if (caller?.aborted) throw caller.reason;
      if (error instanceof BrokenCircuitError) {
        throw this.refused(options, `${method} ${path}`, 'circuit open');
      }
      if (error instanceof BulkheadRejectedError) {
        throw this.refused(options, `${method} ${path}`, 'too many calls in flight');
      }
      throw error;
    } finally {
      clearTimeout(timer);
      caller?.removeEventListener('abort', onCallerAbort);
    }
  }

  /** A call refused before any request left: an event on the request's span, and its error. */
  private refused(options: CallOptions, call: string, reason: string): UpstreamError {
    if (options.trace)
      traceEvent(options.trace.context, 'upstream.refused', { 'upstream.name': this.name, reason });
    const error = new UpstreamError(this.name, 'UPSTREAM_UNAVAILABLE', `${call}: ${reason}`);
    error.delivery = 'unsent';
    return error;
  }

  /** The budget ran out: while queued or connecting, after the request left, or while its body came. */
  private timeout(method: string, path: string, progress: Progress): CallError {
    const error = new CallError(
      this.name,
      'UPSTREAM_TIMEOUT',
      `${method} ${path}: no answer in ${this.timeoutMs} ms`,
    );
    error.breaksCircuit = true;
    error.delivery = deliveryOf(progress);
    return error;
  }

  private async attempt(
    request: { method: string; path: string; headers: Record<string, string>; body: string | undefined },
    /** The path without its query, as a metric label. */
    endpoint: string,
    { signal, progress }: { signal: Cancellation; progress: Progress },
    options: CallOptions,
    /** 0 for the first request of a call, 1 for its retry. */
    resend: number,
  ): Promise<UpstreamResponse> {
    const trace = options.trace;
    if (trace) trace.upstreamCalls++;
    if (trace && resend > 0) traceEvent(trace.context, 'upstream.retry', { 'upstream.name': this.name });
    const span = trace
      ? upstreamSpan(trace.context, {
          upstream: this.name,
          method: request.method,
          origin: this.origin,
          path: endpoint,
          resend,
        })
      : null;
    const started = performance.now();
    let status: number;
    let text: string;
    try {
      const dispatch = {
        ...request,
        headers: span?.headers ? { ...request.headers, ...span.headers } : request.headers,
      };
      ({ status, text } = await new Promise<{ status: number; text: string }>((resolve, reject) => {
        this.pool.dispatch(dispatch, new Collector(signal, progress, resolve, reject));
      }));
    } catch (error) {
      const code = (error as { code?: string } | undefined)?.code ?? '';
      this.report(
        endpoint,
        signal.reason === TIMED_OUT ? 'timeout' : signal.aborted ? 'aborted' : code || 'error',
        started,
      );
      if (signal.reason === TIMED_OUT) {
        span?.end(null, 'UPSTREAM_TIMEOUT');
        throw this.timeout(request.method, request.path, progress);
      }
      if (signal.aborted) {
        span?.end(null, 'aborted');
        throw signal.reason ?? error;
      }
      const failure = new CallError(
        this.name,
        code === 'UND_ERR_RES_EXCEEDED_MAX_SIZE' ? 'UPSTREAM_ERROR' : classify(code),
        `${request.method} ${request.path}: ${code || (error as Error).message}`,
      );
      failure.retryable = CONNECTION_FAILURES.has(code);
      failure.breaksCircuit = true;
      failure.delivery = deliveryOf(progress);
      span?.end(null, failure.extensions.code as string);
      throw failure;
    }
    this.report(endpoint, String(status), started);
    try {
      const response = this.interpret(status, text, options);
      span?.end(status);
      return response;
    } catch (error) {
      span?.end(status, String((error as UpstreamError).extensions?.code ?? 'error'));
      throw error;
    }
  }

  private report(endpoint: string, status: string, started: number): void {
    this.observe?.({ upstream: this.name, endpoint, status, seconds: (performance.now() - started) / 1000 });
  }

  private interpret(status: number, text: string, options: CallOptions): UpstreamResponse {
    let body: unknown;
    let json = true;
    try {
      body = JSON.parse(text);
    } catch {
      json = false;
    }
    if (status >= 200 && status < 300) {
      if (json) return { status, body };
      const error = new CallError(
        this.name,
        'UPSTREAM_ERROR',
        `status ${status} with a body that is not JSON`,
        undefined,
        status,
      );
      error.breaksCircuit = true;
      error.delivery = status;
      throw error;
    }
    const mapped =
      options.statusError?.(status) ??
      (status === 401 || status === 403 ? { code: 'UNAUTHENTICATED' as const } : undefined);
    const detail = `status ${status} ${json ? JSON.stringify(body).slice(0, 300) : ''}`;
    const error = new CallError(this.name, mapped?.code ?? 'UPSTREAM_ERROR', detail, mapped?.message, status);
    error.delivery = status;
    error.retryable = status === 503;
    error.breaksCircuit = status >= 500;
    throw error;
  }
}
