import { randomFillSync, randomUUID } from 'node:crypto';
import { type Context, trace as otelTrace, type Span } from '@opentelemetry/api';
import { type DocumentNode, type ExecutionResult, type GraphQLError, getOperationAST } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Logger } from 'pino';
import type { GatewayMetrics } from '../../ops/metrics.js';
import { callerContext, endServerSpan, startServerSpan } from '../../ops/tracing.js';
import { memoize } from './prepared.js';

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
  outcome: 'ok' | 'partial' | 'error' | 'invalid';
  errorCodes: string[];
  upstreamCalls: number;
}

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
const OPERATION_NAME = /^[_A-Za-z][_0-9A-Za-z]{0,63}$/;

type HeaderGetter = (name: string) => string | null;

/** A request's trace; `graphql`: a GraphQL request, which gets a server span (health checks do not). */
export function startTrace(header: HeaderGetter, graphql = true): RequestTrace {
  const givenId = header('x-request-id');
  const requestId = givenId && REQUEST_ID.test(givenId) ? givenId : randomUUID();
  const caller = callerContext(header);
  const span = graphql ? startServerSpan(caller, requestId) : null;
  const traceId = (span ? span.spanContext() : otelTrace.getSpanContext(caller))?.traceId ?? randomHex(16);
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
  };
}

/** Where each request's trace lives: on Yoga's Request objects, or on the fast path's own request. */
const traces = new WeakMap<object, RequestTrace>();
export const attachTrace = (request: object, trace: RequestTrace): void => {
  traces.set(request, trace);
};
export const traceOf = (request: object | undefined): RequestTrace | undefined =>
  request ? traces.get(request) : undefined;

export interface Telemetry {
  metrics: GatewayMetrics;
  logger: Logger;
}

/** Records the end of a request: one log line and the request metrics. */
export function finishTrace({ metrics, logger }: Telemetry, trace: RequestTrace, status: number): void {
  const seconds = (performance.now() - trace.start) / 1000;
  try {
    metrics.observeRequest(trace.operation, trace.outcome, trace.errorCodes, seconds);
  } catch (error) {
    // Telemetry never takes a request, or the process, down with it.
    logger.error({ err: error }, 'recording request metrics failed');
  }
  if (trace.span) endServerSpan(trace.span, status, trace.errorCodes);
  logger.info(
    {
      requestId: trace.requestId,
      traceId: trace.traceId,
      operation: trace.operation,
      outcome: trace.outcome,
      status,
      durationMs: Math.round(seconds * 10_000) / 10,
      upstreamCalls: trace.upstreamCalls,
      errorCodes: trace.errorCodes,
    },
    'graphql request',
  );
}

const codesOf = (errors: readonly GraphQLError[] | undefined): string[] => [
  ...new Set((errors ?? []).map((e) => String(e.extensions?.code ?? 'INTERNAL_SERVER_ERROR'))),
];

/** Notes a request's outcome and error codes from the result it answers. */
export function recordResult(trace: RequestTrace, result: ExecutionResult): void {
  if (!result.errors?.length) return;
  trace.errorCodes = codesOf(result.errors);
  // Errors before execution (syntax, validation, variables) leave no `data` at all.
  if (!('data' in result) || result.data === undefined) trace.outcome = 'invalid';
  else
    trace.outcome = result.data && Object.values(result.data).some((v) => v !== null) ? 'partial' : 'error';
}

/**
 * Operation names come from callers, so only well-formed names become labels, and at most
 * `max` distinct ones, to bound metric cardinality.
 */
export function operationLabeler(max = 200): (name: unknown) => string {
  const known = new Set<string>();
  return (name) => {
    if (name === null || name === undefined || name === '') return 'anonymous';
    if (typeof name !== 'string' || !OPERATION_NAME.test(name)) return 'invalid';
    if (known.has(name)) return name;
    if (known.size >= max) return 'other';
    known.add(name);
    return name;
  };
}

/**
 * The label of the operation a request names, or of the one its document holds: one label for
 * both paths, worked out once per prepared document and operation name.
 */
function operationLabel(
  label: (name: unknown) => string,
  params: { operationName?: unknown } | undefined,
  document: unknown,
): string {
  const given = params?.operationName;
  if (!(document instanceof Object) || !('definitions' in document)) return label(given);
  if (given !== undefined && given !== null && typeof given !== 'string') return label(given);
  return memoize(document as DocumentNode, given, 'label', () =>
    label(given || getOperationAST(document as DocumentNode, null)?.name?.value),
  );
}

/**
 * Traces every GraphQL request. Yoga's own path (GET, batches, other media types) starts its trace
 * here and writes the log line when its response is ready; the fast path does both itself. The
 * operation is named in the parse hook, which both paths run (the fast path drives Yoga's envelop
 * pipeline with its own request object in the context). The result is recorded by answer.ts.
 */
export function useTelemetry(telemetry: Telemetry, label: (name: unknown) => string): Plugin {
  return {
    onRequest({ request, url }) {
      if (!traceOf(request)) {
        const trace = startTrace((name) => request.headers.get(name), url.pathname === '/graphql');
        attachTrace(request, trace);
      }
    },
    onParse({ context }) {
      return ({ result }) => {
        const { request, params } = context as { request?: object; params?: { operationName?: unknown } };
        const trace = traceOf(request);
        if (!trace) return;
        trace.operation = operationLabel(label, params, result);
        // The server span is named after the operation (a bounded label, never the document).
        trace.span?.updateName(trace.operation).setAttribute('graphql.operation.name', trace.operation);
      };
    },
    onResponse({ request, response }) {
      const trace = traceOf(request);
      if (trace && new URL(request.url).pathname === '/graphql')
        finishTrace(telemetry, trace, response.status);
    },
  };
}

/** An error for a log line: its name, code and stack frames, never its message. */
export function errorSummary(error: Error) {
  return {
    name: error.name,
    code: (error as { extensions?: { code?: unknown } }).extensions?.code,
    frames: error.stack?.split('\n').slice(1, 6).join('\n'),
  };
}

/**
 * Yoga's own log calls, through the gateway's logger with content stripped: an error becomes its
 * name, code and stack frames, never its message, because messages can quote what a caller sent
 * (a variable's value, a search text).
 */
export function yogaLogger(logger: Logger) {
  const summarize = (args: unknown[]) =>
    args.map((arg) =>
      arg instanceof Error ? errorSummary(arg) : typeof arg === 'string' ? arg.slice(0, 80) : typeof arg,
    );
  const child = logger.child({ component: 'yoga' });
  return {
    debug: () => {},
    info: () => {},
    warn: (...args: unknown[]) => child.warn({ details: summarize(args) }, 'yoga warning'),
    error: (...args: unknown[]) => child.error({ details: summarize(args) }, 'yoga error'),
  };
}
