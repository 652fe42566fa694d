import { type DocumentNode, getOperationAST } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { attachTrace, finishTrace, startTrace, type Telemetry, traceOf } from '../../ops/request-trace.js';
import { type OperationFact, operationFact } from './prepared.js';

const OPERATION_NAME = /^[_A-Za-z][_0-9A-Za-z]{0,63}$/;

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
  labels: OperationFact<string>,
  params: { operationName?: unknown } | undefined,
  document: unknown,
): string {
  const given = params?.operationName;
  if (!(document instanceof Object) || !('definitions' in document)) return label(given);
  if (given !== undefined && given !== null && typeof given !== 'string') return label(given);
  return labels.of(document as DocumentNode, given, () =>
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
  // This gateway's labels (its labeler caps how many distinct ones there are).
  const labels = operationFact<string>();
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
        trace.operation = operationLabel(label, labels, params, result);
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
