import { randomBytes, randomUUID } from 'node:crypto';
import { type ExecutionResult, type GraphQLError, getOperationAST } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Logger } from 'pino';
import type { GatewayMetrics } from './metrics.js';

/**
 * What the gateway knows about one HTTP request while it runs: its request id (the caller's
 * `x-request-id` or a new one), the W3C trace it continues, the GraphQL operation, the upstream
 * calls it made and the error codes it answered. At the end it becomes one log line and a few
 * metric samples. Nothing of the request's content (variables, query text, headers) is kept.
 */
export interface RequestTrace {
  requestId: string;
  /** 32 hex digits: the caller's trace id from `traceparent`, or a new one. */
  traceId: string;
  traceFlags: string;
  start: number;
  operation: string;
  outcome: 'ok' | 'partial' | 'error' | 'invalid';
  errorCodes: string[];
  upstreamCalls: number;
}

const REQUEST_ID = /^[\w.:@-]{1,128}$/;
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const OPERATION_NAME = /^[_A-Za-z][_0-9A-Za-z]{0,63}$/;

type HeaderGetter = (name: string) => string | null;

export function startTrace(header: HeaderGetter): RequestTrace {
  const givenId = header('x-request-id');
  const parent = TRACEPARENT.exec(header('traceparent') ?? '');
  const traceId =
    parent && !/^0+$/.test(parent[1] as string) ? (parent[1] as string) : randomBytes(16).toString('hex');
  return {
    requestId: givenId && REQUEST_ID.test(givenId) ? givenId : randomUUID(),
    traceId,
    traceFlags: parent?.[3] ?? '01',
    start: performance.now(),
    operation: 'unknown',
    outcome: 'ok',
    errorCodes: [],
    upstreamCalls: 0,
  };
}

/** Headers for one upstream call: the request id, and the trace continued with a new span. */
export function upstreamHeaders(trace: RequestTrace): Record<string, string> {
  return {
    'x-request-id': trace.requestId,
    traceparent: `00-${trace.traceId}-${randomBytes(8).toString('hex')}-${trace.traceFlags}`,
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
  metrics.observeRequest(trace.operation, trace.outcome, trace.errorCodes, seconds);
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

/**
 * Fills each request's trace from the GraphQL pipeline (operation, outcome, error codes), and on
 * Yoga's own path also starts and finishes it (the fast path does that itself). Operation names
 * come from callers, so only well-formed names are kept, and at most `maxOperations` distinct
 * ones, to bound metric cardinality.
 */
export function useTelemetry(telemetry: Telemetry, maxOperations = 200): Plugin {
  const knownOperations = new Set<string>();
  const operationLabel = (name: string | null | undefined): string => {
    if (!name) return 'anonymous';
    if (!OPERATION_NAME.test(name)) return 'invalid';
    if (knownOperations.has(name)) return name;
    if (knownOperations.size >= maxOperations) return 'other';
    knownOperations.add(name);
    return name;
  };
  const traceIn = (context: unknown) => traceOf((context as { request?: object }).request);

  return {
    onRequest({ request }) {
      if (!traceOf(request))
        attachTrace(
          request,
          startTrace((name) => request.headers.get(name)),
        );
    },
    onParse({ context, params }) {
      const trace = traceIn(context);
      if (trace) trace.operation = operationLabel((params as { operationName?: string }).operationName);
      return ({ result }) => {
        if (trace && result instanceof Error) {
          trace.outcome = 'invalid';
          trace.errorCodes = codesOf([result as GraphQLError]);
        }
      };
    },
    onValidate({ context }) {
      return ({ result }) => {
        const trace = traceIn(context);
        if (trace && result.length > 0) {
          trace.outcome = 'invalid';
          trace.errorCodes = codesOf(result as GraphQLError[]);
        }
      };
    },
    onExecute({ args }) {
      const trace = traceIn(args.contextValue);
      if (!trace) return;
      if (trace.operation === 'anonymous') {
        const operation = getOperationAST(args.document, args.operationName);
        trace.operation = operationLabel(operation?.name?.value);
      }
      return {
        onExecuteDone({ result }) {
          const { data, errors } = result as ExecutionResult;
          if (!errors?.length) return;
          trace.outcome = data && Object.values(data).some((v) => v !== null) ? 'partial' : 'error';
          trace.errorCodes = codesOf(errors);
        },
      };
    },
    onResponse({ request, response }) {
      const trace = traceOf(request);
      if (!trace) return;
      response.headers.set('x-request-id', trace.requestId);
      if (new URL(request.url).pathname === '/graphql') finishTrace(telemetry, trace, response.status);
    },
  };
}
