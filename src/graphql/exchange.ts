import type { ServerResponse } from 'node:http';
import type { ExecutionResult } from 'graphql';
import type { CorsConfig } from '../config.js';
import {
  attachTrace,
  finishTrace,
  type RequestTrace,
  recordResult,
  startTrace,
  type Telemetry,
} from '../ops/request-trace.js';
import { budgetOf, writeRateLimitHeaders } from '../scale/rate-limit.js';
import { Cancellation } from '../upstream/cancellation.js';
import { contractResult } from './public-errors.js';

/**
 * How every request of the gateway is answered, whichever path carries it: Yoga's own (GET,
 * GraphiQL, batches, health, errors of the HTTP layer; plugins/answers.ts opens its exchange) and
 * the node:http adapter's JSON fast path and SSE writer (http/). One place decides the response
 * headers (CORS, `vary`, `x-request-id`, `cache-control`, the rate limit's), the error codes a client
 * may see, the cost a client asked for, what a result records in the request's trace, and when a
 * request ends (its log line, metrics and span).
 */

/**
 * Headers a browser may send cross-origin: auth, JSON, the CSRF-prevention headers, the ask for an
 * answer's cost; the W3C and Sentry trace headers (a page's SDK adds them to every request); the
 * client's name and version, Apollo Client's (`new ApolloClient({ name, version })`) and Hive's
 * (request-trace.ts labels requests by them). CORS_ALLOW_HEADERS adds more.
 */
export const DEFAULT_ALLOWED_HEADERS: readonly string[] = [
  'authorization',
  'content-type',
  'accept',
  'x-request-id',
  'x-graphql-csrf',
  'apollo-require-preflight',
  'x-graphql-cost',
  'traceparent',
  'tracestate',
  'sentry-trace',
  'baggage',
  'apollographql-client-name',
  'apollographql-client-version',
  'graphql-client-name',
  'graphql-client-version',
];

/** Headers a browser's script may read: the request id, the entity tag, and what a client plans by. */
const EXPOSED_HEADERS = 'x-request-id, etag, ratelimit, ratelimit-policy, retry-after';

/**
 * What every answer varies with; an answer that tells its cost, and a shared one (which a request
 * that asks for its cost must not be handed), vary with the ask too.
 */
const VARY = 'origin, accept';
const VARY_WITH_COST = `${VARY}, x-graphql-cost`;
const LOCALHOST_ORIGIN = /^http:\/\/(localhost|127\.0\.0\.1)(:\d{1,5})?$/;

/**
 * Which origins may read answers: the exact origins of CORS_ORIGINS, plus any localhost origin
 * when the gateway runs on the devnet without it. Never a reflection of whatever a caller sends,
 * never credentials (auth is the Authorization header, not a cookie).
 */
export class CorsPolicy {
  private readonly origins: ReadonlySet<string>;
  /** `access-control-allow-headers`, written once. */
  private readonly allowHeaders: string;

  constructor(private readonly config: CorsConfig) {
    this.origins = new Set(config.origins);
    this.allowHeaders = [...new Set([...DEFAULT_ALLOWED_HEADERS, ...(config.allowHeaders ?? [])])].join(', ');
  }

  allows(origin: string | null | undefined): origin is string {
    if (!origin) return false;
    return this.origins.has(origin) || (this.config.localhost && LOCALHOST_ORIGIN.test(origin));
  }

  /**
   * Headers of every answer: the same for a success, an error, a 413 or a health check. An answer
   * varies with the caller's Origin (the CORS headers) and Accept (its media type), which a CDN
   * keeping public GET answers must know.
   */
  headers(origin: string | null | undefined, requestId: string | undefined): Record<string, string> {
    const headers: Record<string, string> = { vary: VARY };
    if (this.allows(origin)) {
      headers['access-control-allow-origin'] = origin;
      headers['access-control-expose-headers'] = EXPOSED_HEADERS;
    }
    if (requestId) headers['x-request-id'] = requestId;
    return headers;
  }

  /**
   * What a CORS preflight (`OPTIONS` with `access-control-request-method`) adds to the headers of
   * every answer: nothing for an origin that may not call.
   */
  preflight(origin: string | null | undefined): Record<string, string> {
    if (!this.allows(origin)) return {};
    return {
      'access-control-allow-methods': 'GET, POST, OPTIONS',
      'access-control-allow-headers': this.allowHeaders,
      'access-control-max-age': '600',
    };
  }
}

/**
 * What every event stream carries besides, whoever writes it (Yoga, or the adapter's own writer and
 * refusals, sse.ts): nginx and the proxies that follow its header pass it on unbuffered.
 */
export const EVENT_STREAM_HEADERS = { 'x-accel-buffering': 'no' } as const;

/** Answers are personal unless a plugin (the public response cache) says otherwise for a GET. */
export const DEFAULT_CACHE_CONTROL = 'no-store';

/**
 * Whether a request asks for its answer's cost (`x-graphql-cost: true`). Such a request is answered
 * privately (contract.md §9): the response cache neither answers it nor keeps its result, and its
 * answer is never shared.
 */
export const asksForCost = (headers: { get(name: string): string | null }): boolean =>
  headers.get('x-graphql-cost') === 'true';

/**
 * The only way an answer is made public (`cache-control: public, max-age`), for CDNs and browsers
 * to keep and hand to everyone: shared answers are nobody's (contract.md §9). The headers its
 * exchange wrote lose the caller's RateLimit fields (a CDN would serve one client's budget to all),
 * and it varies with `x-graphql-cost`, so that no cache hands it to a request asking for its cost.
 * Its body carries no cost either: a request that asks for it is never shared (asksForCost).
 */
export function publicAnswerHeaders(
  headers: Readonly<Record<string, string>>,
  maxAgeSeconds: number,
): Record<string, string> {
  const { ratelimit: _remaining, 'ratelimit-policy': _policy, ...shared } = headers;
  return { ...shared, 'cache-control': `public, max-age=${maxAgeSeconds}`, vary: VARY_WITH_COST };
}

/**
 * The result a client gets, and what it records in the request's trace: every error carries a
 * contract code, and, when the request asked for it (`x-graphql-cost: true`), the extensions carry
 * its cost (docs/graph.md): the price, MAX_COMPLEXITY and, when it was charged, what is left of the
 * client's budget. A result whose errors are all in order and that tells no cost is returned as it
 * is: never a copy, so that an answer from the response cache keeps its serialized text.
 */
export function finishResult<T extends ExecutionResult>(trace: RequestTrace | undefined, result: T): T {
  result = contractResult(result);
  if (!trace) return result;
  recordResult(trace, result);
  if (!trace.cost) return result;
  // A copy: the result itself may be the response cache's, kept for everyone.
  const cost = trace.budget ? { ...trace.cost, budget: budgetOf(trace.budget) } : trace.cost;
  return { ...result, extensions: { ...result.extensions, cost } };
}

/**
 * Adds what a request's charge says to its answer's headers, whichever transport writes them: the
 * RateLimit fields (rate-limit.ts decides them) when the rate limit counted it, and, when it asked
 * for its cost, `x-graphql-cost` among what the answer varies with, so that no shared cache hands
 * one client's cost to another. Nothing for the rest. Returns `headers`.
 */
export function addChargeHeaders(
  headers: Record<string, string>,
  trace: RequestTrace | undefined,
): Record<string, string> {
  if (trace?.budget) writeRateLimitHeaders(trace.budget, headers);
  if (trace?.cost) headers.vary = VARY_WITH_COST;
  return headers;
}

/** A request's headers, read as a fetch Headers is (node:http's are read in place: node-response.ts). */
export interface RequestHeaders {
  get(name: string): string | null;
  has(name: string): boolean;
}

/**
 * One request, from its opening to its end, whichever path answers it: its trace (request id,
 * span, log line and metrics, finished once), its cancellation (the caller gone before the answer
 * is written: its upstream calls cancelled, logged 499), the headers every answer of it carries,
 * and its result finished as every answer is (finishResult, above). The adapter's JSON fast path and SSE
 * writer open one per request they answer (http/); `useAnswers` opens one for every request Yoga
 * reads, on the node:http socket Yoga was handed when there is one. A whole answer ends when its
 * socket closes; a stream when its head is written; an answer with no socket (`yoga.fetch`) when
 * Yoga has it ready.
 */
export class Exchange {
  readonly res: ServerResponse | null;
  readonly headers: RequestHeaders;
  readonly trace: RequestTrace;
  readonly cancel = new Cancellation();
  /**
   * What the pipeline reads of the request: its method, its headers and its cancellation, with the
   * trace on it.
   */
  readonly request: { method: string; headers: RequestHeaders; signal: Cancellation };
  /** Whether its end is a GraphQL request's (log line, metrics, span), or a health check's, GraphiQL's… */
  private readonly graphql: boolean;
  private ended = false;

  constructor(
    {
      res = null,
      method,
      headers,
      graphql = true,
    }: { res?: ServerResponse | null; method: string; headers: RequestHeaders; graphql?: boolean },
    private readonly telemetry: Telemetry,
    private readonly cors: CorsPolicy,
  ) {
    this.res = res;
    this.headers = headers;
    this.graphql = graphql;
    this.trace = startTrace((name) => headers.get(name), graphql);
    this.request = { method, headers, signal: this.cancel };
    attachTrace(this.request, this.trace);
    if (res) {
      // One listener function for every exchange, the exchange on its response: no closure each.
      (res as Answering)[EXCHANGE] = this;
      res.once('close', closed);
    }
  }

  /**
   * The headers of every answer of this request: CORS and `x-request-id`, then `extra`, and what its
   * charge says (RateLimit, `vary`), once the pipeline charged it.
   */
  answerHeaders(extra: Record<string, string> = {}): Record<string, string> {
    return addChargeHeaders(
      { ...this.cors.headers(this.headers.get('origin'), this.trace.requestId), ...extra },
      this.trace,
    );
  }

  /** A result finished as every answer is: contract codes only, the cost asked for, recorded. */
  finish(result: ExecutionResult): ExecutionResult {
    return finishResult(this.trace, result);
  }

  /**
   * Yoga has its response for this request (a head and a body to come): a stream, or an answer with
   * no socket to watch, ends here; a whole answer on a socket ends when the socket closes.
   */
  answered(status: number, stream: boolean): void {
    if (stream || !this.res) this.end(status);
  }

  /**
   * The request is answered with `status` (a stream: once its head is written): its log line,
   * metrics and span, once. From then on the exchange holds nothing for its response.
   */
  end(status: number): void {
    if (this.ended) return;
    this.ended = true;
    if (this.graphql) finishTrace(this.telemetry, this.trace, status);
    if (!this.res) return;
    (this.res as Answering)[EXCHANGE] = undefined;
    this.res.off('close', closed);
  }

  /** The socket closed: the end of an answer written whole, or a caller gone before it (499). */
  closed(): void {
    if (this.res?.writableFinished) {
      this.end(this.res.statusCode);
      return;
    }
    this.cancel.abort(new Error('client disconnected'));
    this.end(499);
  }
}

const EXCHANGE = Symbol('exchange');
type Answering = ServerResponse & { [EXCHANGE]?: Exchange };
function closed(this: Answering): void {
  this[EXCHANGE]?.closed();
}

/** Where Yoga's path keeps a request's exchange: on its fetch Request, under a symbol. */
const OF_REQUEST = Symbol('exchange of a request');
type Exchanged = { [OF_REQUEST]?: Exchange };
export const attachExchange = (request: object, exchange: Exchange): void => {
  (request as Exchanged)[OF_REQUEST] = exchange;
  attachTrace(request, exchange.trace);
};
export const exchangeOf = (request: object | undefined): Exchange | undefined =>
  request ? (request as Exchanged)[OF_REQUEST] : undefined;
