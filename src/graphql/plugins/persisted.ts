import { usePersistedOperations } from '@graphql-yoga/plugin-persisted-operations';
import type { Plugin } from 'graphql-yoga';

/**
 * PERSISTED_OPERATIONS: only the operations of a persisted-documents manifest (as graphql-codegen's
 * client preset writes it), by `documentId` or Apollo's `extensions.persistedQuery.sha256Hash`;
 * any other document is refused before it is parsed.
 */
export function usePersistedOnly(manifest: Readonly<Record<string, string>>): Plugin {
  // A Map of the manifest's own entries: an id such as `constructor` or `__proto__` names nothing
  // (read from the object, it would find Object.prototype's members, and answer 500).
  const operations = new Map(Object.entries(manifest));
  return usePersistedOperations({
    extractPersistedOperationId: (params) => {
      const documentId = (params as { documentId?: unknown }).documentId;
      if (typeof documentId === 'string') return documentId;
      const apollo = (
        params.extensions as { persistedQuery?: { version?: number; sha256Hash?: unknown } } | undefined
      )?.persistedQuery;
      return apollo?.version === 1 && typeof apollo.sha256Hash === 'string' ? apollo.sha256Hash : null;
    },
    getPersistedOperation: (id) => operations.get(id) ?? operations.get(`sha256:${id}`) ?? null,
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
}
