import { readdirSync } from 'node:fs';
import { type DocumentNode, getOperationAST } from 'graphql';
import { type RequestTrace, traceOf } from '../../ops/request-trace.js';
import { OPERATIONS_DIR } from '../graphiql.js';
import { type OperationFact, operationFact } from '../pipeline/facts.js';
import type { PartPlugin } from '../pipeline/parts.js';

const OPERATION_NAME = /^[_A-Za-z][_0-9A-Za-z]{0,63}$/;

export interface LabelerOptions {
  /** Names that are always labels: the operations the frontends send (operations/). */
  reserved?: Iterable<string>;
  /** The most other names labelled at once. */
  max?: number;
  /** An other name not seen for this long gives its label up. */
  idleMs?: number;
  /** Told of a label given up, so that its series can be dropped. */
  forget?: (name: string) => void;
  now?: () => number;
}

/** The names of operations/ (one operation per file, named as the file). */
export function frontendOperationNames(dir: URL = OPERATIONS_DIR): string[] {
  try {
    return readdirSync(dir)
      .filter((file) => file.endsWith('.graphql'))
      .map((file) => file.slice(0, -'.graphql'.length));
  } catch {
    return [];
  }
}

/**
 * Operation names come from callers, so only well-formed names become labels, to bound metric
 * cardinality: the frontends' own operations always, and at most `max` others at once. An other
 * name keeps its label while it is in use; the least recently seen one gives it up once idle for
 * `idleMs`, so that the first names a caller sends cannot hold every label for ever (while they
 * hold them, a new name is counted as `other`).
 */
export function operationLabeler({
  reserved = frontendOperationNames(),
  max = 200,
  idleMs = 10 * 60_000,
  forget = () => {},
  now = Date.now,
}: LabelerOptions = {}): (name: unknown) => string {
  const always = new Set([...reserved].filter((name) => OPERATION_NAME.test(name)));
  // Other names by when they were last seen, least recent first (a hit moves a name to the end).
  const seen = new Map<string, number>();
  return (name) => {
    if (name === null || name === undefined || name === '') return 'anonymous';
    // The frontends' own names first: the common case, each a valid name.
    if (always.has(name as string)) return name as string;
    if (typeof name !== 'string' || !OPERATION_NAME.test(name)) return 'invalid';
    const at = now();
    if (seen.delete(name) || seen.size < max) {
      seen.set(name, at);
      return name;
    }
    const [oldest, last] = seen.entries().next().value as [string, number];
    if (at - last < idleMs) return 'other';
    seen.delete(oldest);
    forget(oldest);
    seen.set(name, at);
    return name;
  };
}

/** The name of the operation a request names, or of the one its document holds: once per prepared operation. */
const nameOf = (
  names: OperationFact<string | undefined>,
  document: DocumentNode,
  given: string | null | undefined,
) => names.of(document, given, () => given || getOperationAST(document, null)?.name?.value);

/** The label of a request's operation, asked of the labeler on every request. */
function operationLabel(
  label: (name: unknown) => string,
  names: OperationFact<string | undefined>,
  params: { operationName?: unknown } | undefined,
  document: unknown,
): string {
  const given = params?.operationName;
  if (!(document instanceof Object) || !('definitions' in document)) return label(given);
  if (given !== undefined && given !== null && typeof given !== 'string') return label(given);
  return label(nameOf(names, document as DocumentNode, given));
}

/**
 * Names every GraphQL request's operation in its trace (which its exchange started: exchange.ts):
 * in the parse hook on the first path (the fast path drives Yoga's envelop pipeline with its own
 * request object in the context), and by this plugin's part of a prepared request, which is not
 * parsed. The result is recorded when the exchange finishes it.
 */
export function useTelemetry(label: (name: unknown) => string): PartPlugin {
  // This gateway's operation names (its labeler caps how many distinct labels there are).
  const names = operationFact<string | undefined>();
  const name = (trace: RequestTrace, operation: string) => {
    trace.operation = operation;
    // The server span is named after the operation (a bounded label, never the document).
    trace.span?.updateName(operation).setAttribute('graphql.operation.name', operation);
  };
  const plugin: PartPlugin = {
    onParse({ context }) {
      return ({ result }) => {
        const { request, params } = context as { request?: object; params?: { operationName?: unknown } };
        const trace = traceOf(request);
        if (trace) name(trace, operationLabel(label, names, params, result));
      };
    },
    // A prepared request is not parsed: its operation is named from what was prepared.
    requestPart: ({ document, operationName }) => {
      const operation = nameOf(names, document, operationName);
      return ({ contextValue }) => {
        const trace = traceOf((contextValue as { request?: object }).request);
        if (trace) name(trace, label(operation));
        return undefined;
      };
    },
  };
  return plugin;
}
