import { randomFillSync, randomUUID } from 'node:crypto';
import { type Context, trace as otelTrace, ROOT_CONTEXT, type Span } from '@opentelemetry/api';
import type { ExecutionResult, GraphQLError } from 'graphql';
import type { Logger } from 'pino';
import { requestLogger } from './logger.js';
import type { GatewayMetrics } from './metrics.js';
import {
  callerContext,
  endPollSpan,
  endServerSpan,
  type HeaderGetter,
  startPollSpan,
  startServerSpan,
} from './tracing.js';

/**
 * What one charge of the rate limit (scale/rate-limit.ts) leaves of a client's window, as
 * the request's answer tells it (its RateLimit fields, its cost extension): one object per charge,
 * whichever counters made it.
 */
export interface Budget {
  /** Whether the charge went over the budget: the operation is refused. */
  over: boolean;
  /** Points left in the window after the charge (0 once over). */
  remaining: number;
  /** How long until the window ends and its points come back (ms, at least 1). */
  resetMs: number;
  /** RATE_LIMIT_POINTS: the points of a window. */
  limit: number;
  /** The `RateLimit-Policy` field, made once per limiter. */
  policy: string;
}

/**
 * What the gateway knows about one HTTP request while it runs: its request id (the caller's
 * `x-request-id` or a new one), the W3C trace it continues, the GraphQL operation, the upstream
 * calls it made and the error codes it answered. At the end it becomes one log line and a few
 * metric samples. Nothing of the request's content (variables, query text, headers) is kept.
 */
export interface RequestTrace {
  requestId: string;
  /** 32 hex digits: the request span's trace id (the caller's when it sent `traceparent`), or a new one. */
  traceId: string;
  /** The OpenTelemetry context upstream calls continue: the request's span, or the caller's. */
  context: Context;
  /** The request's server span; null when tracing is off. */
  span: Span | null;
  start: number;
  operation: string;
  outcome: Outcome;
  errorCodes: string[];
  upstreamCalls: number;
  /**
   * What the rate limit left the client after this request's charge (rate-limit.ts): its answer's
   * RateLimit fields. Null when nothing was charged.
   */
  budget: Budget | null;
  /**
   * The price of the request's operation and MAX_COMPLEXITY, noted by the pricing (cost.ts) only
   * when the request asked for them (`x-graphql-cost: true`): its answer's cost extension.
   */
  cost: { requested: number; limit: number } | null;
  /** The client's name and version, as it sent them (clientText); null when it sent none. */
  clientName: string | null;
  clientVersion: string | null;
  /**
   * The chain's height its answer says it reflects (`Chain-Height`, `extensions.chainHeight`): the
   * head when the request opened, the height a cached answer was read at, or the head a
   * Min-Chain-Height request waited for. Null when unknown: the answer says none.
   */
  chainHeight: number | null;
  /** The height its `Min-Chain-Height` asked for (graphql/plugins/chain-height.ts); 0: none. */
  minChainHeight: number;
  /** What its resolvers read (schema/cache-scope.ts): whether the answer may be final (see ChainReads). */
  reads: ChainReads;
}

/**
 * What an answer's fields read of the chain, noted by the resolvers: `latest` once any field read
 * state that can still change (or anything not proven final: fail closed); `final`, the highest
 * height of final history read (a complete block below the head, a transaction in one). An answer
 * is final only when `latest` stayed false and `final` is above 0.
 */
export interface ChainReads {
  latest: boolean;
  final: number;
}

/** The reads of one request: nothing yet. */
export const noReads = (): ChainReads => ({ latest: false, final: 0 });

/** Whether an answer's reads make it final history: the height it is final at, else null. */
export const finalAt = (reads: ChainReads): number | null =>
  !reads.latest && reads.final > 0 ? reads.final : null;

/**
 * How a request ended, as `graphql_requests_total{outcome}` and its log line tell it: `ok`;
 * `invalid`, the caller's own mistake (every error one of CALLER_CODES), which the availability SLI
 * leaves out; `rate_limited`, refused with 429 (over its budget, or no room for its stream); else an
 * error the gateway or an upstream caused: `partial` when some data came, `error` when none did.
 */
export type Outcome = 'ok' | 'partial' | 'error' | 'invalid' | 'rate_limited';

/** The codes that mean the caller's request was at fault, not the gateway or an upstream. */
const CALLER_CODES: ReadonlySet<string> = new Set([
  'BAD_USER_INPUT',
  'UNAUTHENTICATED',
  'PERSISTED_QUERY_NOT_FOUND',
]);

/** Random hex from a pooled buffer: one syscall per 512 ids instead of one per id. */
const pool = Buffer.alloc(4096);
let offset = pool.length;
function randomHex(bytes: number): string {
  if (offset + bytes > pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  offset += bytes;
  return pool.toString('hex', offset - bytes, offset);
}

const REQUEST_ID = /^[\w.:@-]{1,128}$/;

/** Apollo Client's headers (`new ApolloClient({ name, version })`) first, then Hive's. */
export const CLIENT_HEADERS = {
  name: ['apollographql-client-name', 'graphql-client-name'],
  version: ['apollographql-client-version', 'graphql-client-version'],
} as const;
/** Every header that names a client: CORS allows them, and connectionParams may carry them. */
export const CLIENT_HEADER_NAMES: readonly string[] = [...CLIENT_HEADERS.name, ...CLIENT_HEADERS.version];
const NOT_CLIENT_TEXT = /[^A-Za-z0-9._-]/g;

/**
 * The client's name or version as its request's log line, span and metrics carry it: callers
 * choose it, so only its first 64 characters, each outside [A-Za-z0-9._-] written `_` (metrics.ts
 * also caps how many become labels). Null when the client sent none.
 */
function clientText(header: HeaderGetter, which: keyof typeof CLIENT_HEADERS): string | null {
  const [apollo, hive] = CLIENT_HEADERS[which];
  const value = (header(apollo) ?? header(hive))?.trim();
  return value ? value.slice(0, 64).replace(NOT_CLIENT_TEXT, '_') : null;
}

/** A request's trace; `graphql`: a GraphQL request, which gets a server span (health checks do not). */
export function startTrace(header: HeaderGetter, graphql = true): RequestTrace {
  const givenId = header('x-request-id');
  const requestId = givenId && REQUEST_ID.test(givenId) ? givenId : randomUUID();
  const caller = callerContext(header);
  const span = graphql ? startServerSpan(caller, requestId) : null;
  const traceId = (span ? span.spanContext() : otelTrace.getSpanContext(caller))?.traceId ?? randomHex(16);
  const clientName = graphql ? clientText(header, 'name') : null;
  const clientVersion = graphql ? clientText(header, 'version') : null;
  if (span && clientName !== null) span.setAttribute('graphql.client.name', clientName);
  if (span && clientVersion !== null) span.setAttribute('graphql.client.version', clientVersion);
  return {
    requestId,
    traceId,
    context: span ? otelTrace.setSpan(caller, span) : caller,
    span,
    start: performance.now(),
    operation: 'unknown',
    outcome: 'ok',
    errorCodes: [],
    upstreamCalls: 0,
    budget: null,
    cost: null,
    clientName,
    clientVersion,
    chainHeight: null,
    minChainHeight: 0,
    reads: noReads(),
  };
}

/**
 * Where each request's trace lives: on Yoga's Request objects, or on the fast path's own request,
 * under a symbol (a WeakMap entry per request costs more, in the collector too).
 */
const TRACE = Symbol('request trace');
type Traced = { [TRACE]?: RequestTrace };
export const attachTrace = (request: object, trace: RequestTrace): void => {
  (request as Traced)[TRACE] = trace;
};
export const traceOf = (request: object | undefined): RequestTrace | undefined =>
  request ? (request as Traced)[TRACE] : undefined;

export interface Telemetry {
  metrics: GatewayMetrics;
  logger: Logger;
  /** The chain's head (live/head.ts), which every request's trace is stamped with when it opens. */
  head?: { height(): number | null };
}

/**
 * The level of a request's log line: a success or a caller's mistake (4xx, RATE_LIMITED among
 * them) at info, an answer an upstream failed at warn, the gateway's own fault (an unexpected error,
 * a 5xx) at error, so that LOG_LEVEL=warn keeps every failure and drops the rest.
 */
function levelOf(trace: RequestTrace, status: number): 'info' | 'warn' | 'error' {
  if (status >= 500 || trace.errorCodes.includes('INTERNAL_SERVER_ERROR')) return 'error';
  return trace.outcome === 'partial' || trace.outcome === 'error' ? 'warn' : 'info';
}

/** Records the end of a request: one log line and the request metrics. */
export function finishTrace({ metrics, logger }: Telemetry, trace: RequestTrace, status: number): void {
  const seconds = (performance.now() - trace.start) / 1000;
  try {
    metrics.observeRequest(trace.operation, trace.outcome, trace.errorCodes, seconds);
    metrics.observeClientRequest(trace.clientName, trace.clientVersion, trace.outcome);
  } catch (error) {
    // Telemetry never takes a request, or the process, down with it.
    logger.error({ err: error }, 'recording request metrics failed');
  }
  if (trace.span) endServerSpan(trace.span, status, trace.errorCodes);
  const level = levelOf(trace, status);
  const log = requestLogger(logger);
  // Below LOG_LEVEL, not even the line's object is made.
  if (!log.isLevelEnabled(level)) return;
  log[level](
    {
      requestId: trace.requestId,
      traceId: trace.traceId,
      operation: trace.operation,
      outcome: trace.outcome,
      status,
      durationMs: Math.round(seconds * 10_000) / 10,
      upstreamCalls: trace.upstreamCalls,
      errorCodes: trace.errorCodes,
      // Left out of the line (undefined) when the client sent none.
      clientName: trace.clientName ?? undefined,
      clientVersion: trace.clientVersion ?? undefined,
    },
    'graphql request',
  );
}

const codesOf = (errors: readonly GraphQLError[] | undefined): string[] => [
  ...new Set((errors ?? []).map((e) => String(e.extensions?.code ?? 'INTERNAL_SERVER_ERROR'))),
];

/** Notes a request's outcome (see Outcome) and error codes from the result it answers. */
export function recordResult(trace: RequestTrace, result: ExecutionResult): void {
  if (!result.errors?.length) return;
  const codes = codesOf(result.errors);
  trace.errorCodes = codes;
  const callers = codes.filter((code) => CALLER_CODES.has(code) || code === 'RATE_LIMITED');
  if (callers.length === codes.length) {
    trace.outcome = codes.includes('RATE_LIMITED') ? 'rate_limited' : 'invalid';
    return;
  }
  // Errors before execution (a refusal the gateway caused) leave no `data` at all.
  trace.outcome = result.data && Object.values(result.data).some((v) => v !== null) ? 'partial' : 'error';
}

/**
 * The trace of one live poll (live/poller.ts): its own request id (`live-<source>-<pid>-<n>`, sent
 * to the upstreams as any request's, so that an upstream's log tells which process polled) and,
 * with tracing on, a span of its own that the upstream calls of the poll continue.
 */
export function startPollTrace(source: string, poll: number): RequestTrace {
  const requestId = `live-${source}-${process.pid}-${poll}`;
  const span = startPollSpan(source, requestId);
  return {
    requestId,
    traceId: span?.spanContext().traceId ?? randomHex(16),
    context: span ? otelTrace.setSpan(ROOT_CONTEXT, span) : ROOT_CONTEXT,
    span,
    start: performance.now(),
    operation: `live.${source}`,
    outcome: 'ok',
    errorCodes: [],
    upstreamCalls: 0,
    budget: null,
    cost: null,
    clientName: null,
    clientVersion: null,
    chainHeight: null,
    minChainHeight: 0,
    reads: noReads(),
  };
}

/** Ends a poll's trace: its span, with the contract code of its failure. */
export function finishPollTrace(trace: RequestTrace, error: Error | null): void {
  if (!trace.span) return;
  const code = error
    ? String((error as { extensions?: { code?: unknown } }).extensions?.code ?? 'INTERNAL_SERVER_ERROR')
    : null;
  endPollSpan(trace.span, code);
}
