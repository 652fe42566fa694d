import type { CorsConfig } from '../config.js';
import { CLIENT_HEADER_NAMES, type RequestTrace } from '../ops/request-trace.js';
import { writeRateLimitHeaders } from '../scale/rate-limit.js';

/**
 * The headers of every answer, whoever writes it (Yoga's path, the adapter's fast path and stream
 * writer, intake's refusals, the last-resort 500): CORS and `vary`, `x-request-id`, the default
 * `cache-control`, what a request's charge adds (RateLimit, `vary: x-graphql-cost`) and what makes
 * an answer public. One builder (`answerHeaders`), so that no answer misses one.
 */

/** The headers a plain HTML form cannot set, either of which a GET must carry (CSRF prevention). */
export const CSRF_HEADERS = ['x-graphql-csrf', 'apollo-require-preflight'] as const;

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
  ...CSRF_HEADERS,
  'x-graphql-cost',
  'traceparent',
  'tracestate',
  'sentry-trace',
  'baggage',
  ...CLIENT_HEADER_NAMES,
  // An answer read at or after a height (contract.md §9).
  'min-chain-height',
];

/** Headers a browser's script may read: the request id, the entity tag, and what a client plans by. */
const EXPOSED_HEADERS = 'x-request-id, etag, ratelimit, ratelimit-policy, retry-after, chain-height';

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
  immutable = false,
): Record<string, string> {
  const { ratelimit: _remaining, 'ratelimit-policy': _policy, ...shared } = headers;
  // Final history (contract.md §9) never changes: a CDN need not even revalidate it.
  const control = `public, max-age=${maxAgeSeconds}${immutable ? ', immutable' : ''}`;
  return { ...shared, 'cache-control': control, vary: VARY_WITH_COST };
}

/** What a request says of itself in its answer's headers: its id, and its charge once charged. */
type Charged = {
  requestId?: string;
  budget?: RequestTrace['budget'];
  cost?: RequestTrace['cost'];
  chainHeight?: RequestTrace['chainHeight'];
};

/**
 * The headers of an answer to a request from `origin`: CORS and `vary`, `x-request-id`, then
 * `extra`, `chain-height` when the head is known, then what the request's charge says: the RateLimit fields (rate-limit.ts decides them)
 * when the rate limit counted it, and, when it asked for its cost, `x-graphql-cost` among what the
 * answer varies with, so that no shared cache hands one client's cost to another.
 */
export function answerHeaders(
  cors: CorsPolicy,
  origin: string | null | undefined,
  { requestId, budget, cost, chainHeight }: Charged,
  extra: Record<string, string> = {},
): Record<string, string> {
  const headers = { ...cors.headers(origin, requestId), ...extra };
  // The chain's height the answer reflects (contract.md §9), when known.
  if (chainHeight != null) headers['chain-height'] = String(chainHeight);
  if (budget) writeRateLimitHeaders(budget, headers);
  if (cost) headers.vary = VARY_WITH_COST;
  return headers;
}
