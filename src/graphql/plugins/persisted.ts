import { usePersistedOperations } from '@graphql-yoga/plugin-persisted-operations';
import { type HttpStagePlugin, withHttpStage } from '../routing.js';

/** What names a persisted operation in a request. */
type Naming = { extensions?: unknown; documentId?: unknown };

/**
 * PERSISTED_OPERATIONS: a persisted-documents manifest (as graphql-codegen's client preset writes
 * it). Its operations are named by `documentId` or Apollo's `extensions.persistedQuery.sha256Hash`.
 */
export class Manifest {
  // A Map of the manifest's own entries: an id such as `constructor` or `__proto__` names nothing
  // (read from the object, it would find Object.prototype's members, and answer 500).
  private readonly operations: Map<string, string>;

  constructor(manifest: Readonly<Record<string, string>>) {
    this.operations = new Map(Object.entries(manifest));
  }

  /** The id a request names its operation by, or null. */
  idOf(params: Naming): string | null {
    if (typeof params.documentId === 'string') return params.documentId;
    const apollo = (
      params.extensions as { persistedQuery?: { version?: number; sha256Hash?: unknown } } | undefined | null
    )?.persistedQuery;
    return apollo?.version === 1 && typeof apollo.sha256Hash === 'string' ? apollo.sha256Hash : null;
  }

  /** The document of an id, or null. */
  document(id: string): string | null {
    return this.operations.get(id) ?? this.operations.get(`sha256:${id}`) ?? null;
  }

  /** The document a request names, or null (no id, or an id the manifest does not hold). */
  named(params: Naming): string | null {
    const id = this.idOf(params);
    return id === null ? null : this.document(id);
  }
}

/** Only the manifest's operations run; any other document is refused before it is parsed. */
export function usePersistedOnly(manifest: Manifest): HttpStagePlugin {
  const plugin = usePersistedOperations({
    extractPersistedOperationId: (params) => manifest.idOf(params),
    getPersistedOperation: (id) => manifest.document(id),
    allowArbitraryOperations: false,
    customErrors: {
      notFound: { message: 'Unknown persisted operation.', extensions: { code: 'BAD_USER_INPUT' } },
      persistedQueryOnly: {
        message: 'Only persisted operations are accepted.',
        extensions: { code: 'BAD_USER_INPUT' },
      },
      keyNotFound: { message: 'Send a persisted operation id.', extensions: { code: 'BAD_USER_INPUT' } },
    },
  });
  // The adapter runs the manifest's documents it names; a document sent as text is refused on Yoga's path.
  return withHttpStage(plugin, {
    declines: ({ params }) =>
      params.query !== undefined ? 'persisted operations only: a document sent as text is refused' : null,
    named: (params) => manifest.named(params),
  });
}
