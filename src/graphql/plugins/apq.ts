import { useAPQ } from '@graphql-yoga/plugin-apq';
import type { GraphQLParams, Plugin, YogaInitialContext } from 'graphql-yoga';
import { LRUCache } from 'lru-cache';
import type { KeyedRedis } from '../../scale/redis.js';

/**
 * Automatic persisted queries as Apollo's link speaks them (contract.md §6), by Yoga's APQ plugin:
 * a request may send `extensions.persistedQuery.sha256Hash` without its document; an unknown hash
 * answers `PersistedQueryNotFound` (code PERSISTED_QUERY_NOT_FOUND), and the client sends the
 * document with its hash, which is checked (a mismatch is BAD_USER_INPUT). Works over POST and
 * GET, so a GET by hash of a public query is CDN-cacheable like any public GET.
 *
 * A document is registered only once it has passed validation and pricing (and so been charged to
 * its client's budget), and only up to MAX_DOCUMENT_BYTES: what is kept is what could run. It is
 * kept in process in an LRU bounded in entries and bytes, and with REDIS_URL in Redis too (for a
 * day), so that any instance knows a document another registered. Redis is never needed for an
 * answer: a document Redis does not give is asked of the client again.
 */

export interface PersistedQueryStoreOptions {
  /** APQ_ENTRIES: the most documents kept in process. */
  maxEntries: number;
  /** APQ_BYTES: the most bytes of documents kept in process. */
  maxBytes: number;
  /** With REDIS_URL: the shared second level, and its deployment's key prefix. */
  redis: KeyedRedis | null;
}

/** How long a document registered through Redis stays there without being registered again. */
const SHARED_TTL_MS = 24 * 60 * 60 * 1000;

/** The largest document kept (the largest of operations/ is under 1 KB): bigger ones just run. */
const MAX_DOCUMENT_BYTES = 64 * 1024;

/** What Apollo's link sends: 64 lowercase hex digits. Anything else is unknown, and costs nothing. */
const SHA256_HEX = /^[0-9a-f]{64}$/;

export class PersistedQueryStore {
  private readonly documents: LRUCache<string, string>;

  constructor(private readonly options: PersistedQueryStoreOptions) {
    this.documents = new LRUCache({
      max: options.maxEntries,
      maxSize: options.maxBytes,
      // A JavaScript string holds up to 2 bytes per character; the hash key adds 64.
      sizeCalculation: (document) => 2 * document.length + 64,
    });
  }

  private key(hash: string): string {
    return `${this.options.redis?.prefix ?? ''}apq:${hash}`;
  }

  async get(hash: string): Promise<string | null> {
    if (!SHA256_HEX.test(hash)) return null;
    const kept = this.documents.get(hash);
    if (kept !== undefined) return kept;
    const redis = this.options.redis;
    if (!redis) return null;
    const shared = await redis.store.run((c) => c.get(this.key(hash))).catch(() => null);
    if (shared !== null) this.documents.set(hash, shared);
    return shared;
  }

  /** Keeps a document under its (checked) hash, unless it is already kept or too big to keep. */
  register(hash: string, document: string): void {
    if (this.documents.has(hash) || Buffer.byteLength(document) > MAX_DOCUMENT_BYTES) return;
    this.documents.set(hash, document);
    this.options.redis?.store
      .run((c) => c.set(this.key(hash), document, 'PX', SHARED_TTL_MS))
      .catch(() => undefined);
  }
}

/** The hash a registration carries beside its document (checked against it by useAPQ), if any. */
function registration(params: GraphQLParams | undefined): { hash: string; document: string } | null {
  const hash = (params?.extensions?.persistedQuery as { sha256Hash?: unknown } | undefined)?.sha256Hash;
  return typeof hash === 'string' && typeof params?.query === 'string'
    ? { hash, document: params.query }
    : null;
}

/**
 * The two steps: `lookup` (early: a hash alone becomes its document, or PersistedQueryNotFound; a
 * document with a hash is checked) and `register` (after pricing: a document that is about to run
 * is kept). Between them, the document is limited, validated and priced like any other.
 */
export function automaticPersistedQueries(store: PersistedQueryStore): { lookup: Plugin; register: Plugin } {
  const keep = ({ args }: { args: { contextValue: unknown } }) => {
    const sent = registration((args.contextValue as YogaInitialContext).params);
    if (sent) store.register(sent.hash, sent.document);
  };
  return {
    lookup: useAPQ({ store: { get: (hash) => store.get(hash), set: () => undefined } }),
    register: { onExecute: keep, onSubscribe: keep },
  };
}
