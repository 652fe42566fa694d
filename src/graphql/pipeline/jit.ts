import {
  type DocumentNode,
  type ExecutionResult,
  type FieldNode,
  GraphQLError,
  getLocation,
  type SourceLocation,
  visit,
} from 'graphql';
import type { CompiledQuery } from 'graphql-jit';

/**
 * What running graphql-jit's compiled plans needs besides graphql-jit: what a plan weighs, and its
 * results made byte for byte the interpreter's.
 */

/** Fields a document selects (its operations and fragments), for a compiled plan's estimate. */
export function fieldCount(document: DocumentNode): number {
  let fields = 0;
  visit(document, {
    Field() {
      fields++;
    },
  });
  return fields;
}

/**
 * The field nodes an error of a compiled plan was raised at: those of the document that start at the
 * error's locations (graphql-jit computes them from every merged field node, as graphql-js does).
 */
function nodesAt(document: DocumentNode, locations: readonly SourceLocation[]): FieldNode[] {
  const source = document.loc?.source;
  if (!source) return [];
  const wanted = new Set(locations.map(({ line, column }) => `${line}:${column}`));
  const found: FieldNode[] = [];
  visit(document, {
    Field(node) {
      if (!node.loc) return;
      const { line, column } = getLocation(source, node.loc.start);
      if (wanted.has(`${line}:${column}`)) found.push(node);
    },
  });
  return found;
}

/**
 * A compiled plan's result as the interpreter would have answered it: keys in graphql-js's order
 * (`errors` before `data`) and each error carrying its field nodes (graphql-jit's errors have
 * locations but no nodes, and the error masking rebuilds errors from their nodes), so that a query
 * answers the same bytes before and after it is compiled.
 */
export function asInterpreted(
  result: ReturnType<CompiledQuery['query']>,
  document: DocumentNode,
): ReturnType<CompiledQuery['query']> {
  const reorder = (r: ExecutionResult): ExecutionResult => {
    if (!r.errors) return r;
    const errors = r.errors.map((error) => {
      const nodes = error.nodes || !error.locations ? [] : nodesAt(document, error.locations);
      if (nodes.length === 0) return error;
      return new GraphQLError(error.message, {
        nodes,
        path: error.path,
        originalError: error.originalError,
        extensions: error.extensions,
      });
    });
    const { data, extensions } = r;
    return {
      errors,
      ...('data' in r ? { data } : {}),
      ...(extensions ? { extensions } : {}),
    };
  };
  return result instanceof Promise ? result.then(reorder) : reorder(result as ExecutionResult);
}
