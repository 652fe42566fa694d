import { type DocumentNode, type ExecutionResult, Kind, type SelectionSetNode, visit } from 'graphql';
import type { Plugin } from 'graphql-yoga';

/**
 * Whole results of public queries reused for a few seconds: validators, statistics, exact search,
 * blocks and transactions. An operation qualifies only if every root field is one of those and it
 * selects no `delegations` anywhere (live data); everything behind a caller's token, the search-box
 * suggestions and the mutation never qualify, so the cache cannot hold one caller's data. Results
 * with errors are not kept.
 *
 * Hand-written rather than @envelop/response-cache: that plugin rewrites every document to track
 * entities, which cost more on the uncached operations than the cache saved (measured in the
 * benchmark); this one looks at each parsed document once.
 */

const PUBLIC_ROOT_FIELDS = new Set([
  'validators',
  'validator',
  'validatorStatistics',
  'search',
  'block',
  'transaction',
  '__typename',
]);
const LIVE_FIELDS = new Set(['delegations', 'searchSuggestions', 'contractsBySymbol', 'failedTransactions']);

function rootFields(set: SelectionSetNode, document: DocumentNode, out: string[]): string[] {
  for (const selection of set.selections) {
    if (selection.kind === Kind.FIELD) out.push(selection.name.value);
    else if (selection.kind === Kind.INLINE_FRAGMENT) rootFields(selection.selectionSet, document, out);
    else {
      const fragment = document.definitions.find(
        (d) => d.kind === Kind.FRAGMENT_DEFINITION && d.name.value === selection.name.value,
      );
      if (fragment?.kind === Kind.FRAGMENT_DEFINITION) rootFields(fragment.selectionSet, document, out);
    }
  }
  return out;
}

/** Whether a document's results may be shared between callers. */
function isPublic(document: DocumentNode): boolean {
  const operations = document.definitions.filter((d) => d.kind === Kind.OPERATION_DEFINITION);
  if (operations.some((op) => op.operation !== 'query')) return false;
  let live = false;
  visit(document, {
    Field(node) {
      if (LIVE_FIELDS.has(node.name.value)) live = true;
    },
  });
  if (live) return false;
  return operations.every((op) =>
    rootFields(op.selectionSet, document, []).every((f) => PUBLIC_ROOT_FIELDS.has(f)),
  );
}

export function usePublicResponseCache(
  ttlMs: number,
  onLookup: (hit: boolean) => void = () => {},
  maxEntries = 2_000,
): Plugin {
  // Parsed documents are cached and reused by Yoga, so each is judged once.
  const verdicts = new WeakMap<DocumentNode, { id: number; public: boolean }>();
  let nextId = 0;
  const entries = new Map<string, { expires: number; result: ExecutionResult }>();

  return {
    onExecute({ args, setResultAndStopExecution }) {
      let verdict = verdicts.get(args.document);
      if (!verdict) {
        verdict = { id: nextId++, public: isPublic(args.document) };
        verdicts.set(args.document, verdict);
      }
      if (!verdict.public) return;
      const key = `${verdict.id}\u0000${args.operationName ?? ''}\u0000${JSON.stringify(args.variableValues ?? {})}`;
      const hit = entries.get(key);
      const fresh = hit !== undefined && hit.expires > Date.now();
      onLookup(fresh);
      if (fresh) {
        setResultAndStopExecution((hit as { result: ExecutionResult }).result);
        return;
      }
      return {
        onExecuteDone({ result }) {
          const single = result as ExecutionResult;
          if (Symbol.asyncIterator in (result as object) || single.errors?.length) return;
          if (entries.size >= maxEntries) entries.delete(entries.keys().next().value as string);
          entries.set(key, { expires: Date.now() + ttlMs, result: single });
        },
      };
    },
  };
}
