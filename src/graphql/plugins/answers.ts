import type { ExecutionResult } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { CorsConfig } from '../../config.js';
import { type RequestTrace, recordResult, traceOf } from '../../ops/request-trace.js';
import { budgetOf, writeRateLimitHeaders } from '../../scale/rate-limit.js';
import { contractResult } from '../public-errors.js';
import { type HttpStagePlugin, withHttpStage } from '../routing.js';

/**
 * How every answer of the gateway is finished, whichever transport carried the request: Yoga's
 * own (GET, GraphiQL, batches, health, errors of the HTTP layer) through `useAnswers`, and the
 * node:http fast path (fast-path.ts) and the SSE adapter (sse.ts) by calling the same functions.
 * One place decides the response headers (CORS, `vary`, `x-request-id`, `cache-control`, the
 * rate limit's), the error codes a client may see, the cost a client asked for, and what a result
 * records in the request's trace.
 */

/**
 * Headers a browser may send cross-origin: auth, JSON, tracing, the CSRF-prevention header and the
 * ask for an answer's cost.
 */
const ALLOWED_HEADERS =
  'authorization, content-type, accept, x-request-id, traceparent, x-graphql-csrf, apollo-require-preflight, x-graphql-cost';

/** Headers a browser's script may read: the request id, the entity tag, and what a client plans by. */
const EXPOSED_HEADERS = 'x-request-id, etag, ratelimit, ratelimit-policy, retry-after';

/** What every answer varies with; an answer that tells its cost varies with the ask too. */
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

  constructor(private readonly config: CorsConfig) {
    this.origins = new Set(config.origins);
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
      'access-control-allow-headers': ALLOWED_HEADERS,
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

/** The same for Yoga's path: results (single or batched), preflights and every response's headers. */
export function useAnswers(cors: CorsPolicy): HttpStagePlugin {
  const plugin: Plugin = {
    onRequest({ request, endResponse }) {
      if (request.method === 'OPTIONS' && request.headers.has('access-control-request-method')) {
        endResponse(
          new Response(null, { status: 204, headers: cors.preflight(request.headers.get('origin')) }),
        );
      }
    },
    onResultProcess({ request, result, setResult }) {
      const trace = traceOf(request);
      if (Array.isArray(result)) setResult(result.map((r) => finishResult(undefined, r as ExecutionResult)));
      else if (!(Symbol.asyncIterator in (result as object))) {
        setResult(finishResult(trace, result as ExecutionResult));
      }
    },
    onResponse({ request, response }) {
      const trace = traceOf(request);
      const headers = cors.headers(request.headers.get('origin'), trace?.requestId);
      for (const [name, value] of Object.entries(headers)) response.headers.set(name, value);
      for (const [name, value] of Object.entries(addChargeHeaders({}, trace)))
        response.headers.set(name, value);
      if (!response.headers.has('cache-control'))
        response.headers.set('cache-control', DEFAULT_CACHE_CONTROL);
      if (response.headers.get('content-type')?.startsWith('text/event-stream')) {
        for (const [name, value] of Object.entries(EVENT_STREAM_HEADERS)) response.headers.set(name, value);
      }
    },
  };
  return withHttpStage(plugin, {
    // A preflight is an OPTIONS request, which the adapter never takes.
    declines: ({ method }) => (method === 'OPTIONS' ? 'a CORS preflight' : null),
    sharedWith: 'the adapter finishes its answers with the same finishResult, CORS and charge headers',
  });
}
