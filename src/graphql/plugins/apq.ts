import { useAPQ } from '@graphql-yoga/plugin-apq';
import type { Plugin } from 'graphql-yoga';
import { LRUCache } from 'lru-cache';
import type { RedisStore } from '../../scale/redis.js';

/**
 * Automatic persisted queries as Apollo's link speaks them (contract.md §6), by Yoga's APQ plugin:
 * a request may send `extensions.persistedQuery.sha256Hash` without its document; an unknown hash
 * answers `PersistedQueryNotFound` (code PERSISTED_QUERY_NOT_FOUND), and the client sends the
 * document with its hash, which is checked (a mismatch is BAD_USER_INPUT) and kept. Works over POST
 * and GET, so a GET by hash of a public query is CDN-cacheable like any public GET.
 *
 * The documents are kept in process in an LRU bounded in entries and bytes, and with REDIS_URL in
 * Redis too (for a day), so that any instance knows a document another registered. Redis is never
 * needed for an answer: a document Redis does not give is asked of the client again.
 */

export interface PersistedQueryStoreOptions {
  /** APQ_ENTRIES: the most documents kept in process. */
  maxEntries: number;
  /** APQ_BYTES: the most bytes of documents kept in process. */
  maxBytes: number;
  /** With REDIS_URL: the shared second level, and its deployment's key prefix. */
  redis: { store: RedisStore; prefix: string } | null;
}

/** How long a document registered through Redis stays there without being registered again. */
const SHARED_TTL_MS = 24 * 60 * 60 * 1000;

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
    const kept = this.documents.get(hash);
    if (kept !== undefined) return kept;
    const redis = this.options.redis;
    if (!redis) return null;
    const shared = await redis.store.run((c) => c.get(this.key(hash))).catch(() => null);
    if (shared !== null) this.documents.set(hash, shared);
    return shared;
  }

  set(hash: string, document: string): void {
    this.documents.set(hash, document);
    this.options.redis?.store
      .run((c) => c.set(this.key(hash), document, 'PX', SHARED_TTL_MS))
      .catch(() => undefined);
  }

  /** Documents held in process (for /metrics). */
  size(): number {
    return this.documents.size;
  }
}

export function useAutomaticPersistedQueries(store: PersistedQueryStore): Plugin {
  return useAPQ({ store });
}
