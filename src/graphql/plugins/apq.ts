import { createHash } from 'node:crypto';
import { GraphQLError } from 'graphql';
import type { GraphQLParams, Plugin, YogaInitialContext } from 'graphql-yoga';
import { LRUCache } from 'lru-cache';
import { clientOf, type RateLimit, rateLimited } from '../../scale/rate-limit.js';
import { hashTag, type KeyedRedis } from '../../scale/redis.js';
import { partPlugin, type RequestPart } from '../pipeline/parts.js';
import { type HttpStagePlugin, withHttpStage } from '../routing.js';

/**
 * Automatic persisted queries as Apollo's link speaks them (contract.md §6-§7): a request may send
 * `extensions.persistedQuery.sha256Hash` without its document; an unknown hash answers
 * `PersistedQueryNotFound` (code PERSISTED_QUERY_NOT_FOUND), and the client sends the document with
 * its hash. Over POST and GET, so a GET by hash of a public query is CDN-cacheable like any other.
 *
 * The store holds only what it can prove, since whoever asks by a hash runs what is stored under it
 * with their own token: a hash is registered only with `version: 1` and as the SHA-256 of its
 * document's exact text (else BAD_USER_INPUT), once the document has passed validation and
 * pricing, charged by its size beside its cost; a document read from Redis must verify
 * (redis-values.ts) and hash again to its key before it runs, or it is a miss. The store is
 * bounded: an LRU in process (entries and bytes) and, with REDIS_URL, APQ_REDIS_BYTES for the
 * deployment, so that documents never crowd out the rate-limit counters and live leases sharing
 * that Redis. Redis is never needed for an answer: what it does not give is asked of the client.
 */

export interface PersistedQueryStoreOptions {
  /** APQ_ENTRIES: the most documents kept in process. */
  maxEntries: number;
  /** APQ_BYTES: the most bytes of documents kept in process. */
  maxBytes: number;
  /** APQ_REDIS_BYTES: the most bytes of documents the deployment keeps in Redis. */
  redisBytes: number;
  /** With REDIS_URL: the shared second level, and its deployment's key prefix. */
  redis: KeyedRedis | null;
}

/** How long a document registered through Redis stays there without being registered again. */
const SHARED_TTL_MS = 24 * 60 * 60 * 1000;

/** The largest document kept (the largest of operations/ is under 1 KB): bigger ones just run. */
const MAX_DOCUMENT_BYTES = 64 * 1024;

/** A registration costs one rate-limit point per this many bytes of its document. */
const BYTES_PER_POINT = 64;

/** What Apollo's link sends: 64 lowercase hex digits. */
const SHA256_HEX = /^[0-9a-f]{64}$/;

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * Registers a document in Redis within a byte budget, as one script: the documents (a hash of
 * hash → signed text), when each was last registered (a sorted set) and their total size, each
 * counted as stored (signed) with its hash twice and about 96 bytes of Redis's own per entry, so
 * that tiny documents cannot take far more memory than the budget says. The same signed text
 * already there is only marked registered again; anything else there (a value planted without the
 * key) is dropped and replaced. Documents past their time are dropped first, then the least
 * recently registered, until the new one fits; a bounded number per call, so that the script
 * stays short (beyond it the document is not shared).
 * KEYS: documents, registered, bytes. ARGV: hash, signed document, now, ttl, budget.
 */
const REGISTER = `local size = #ARGV[2] + 2 * #ARGV[1] + 96
local now, ttl, budget = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local used = tonumber(redis.call('GET', KEYS[3]) or '0')
local function drop(hash)
  used = used - redis.call('HSTRLEN', KEYS[1], hash) - 2 * #hash - 96
  redis.call('HDEL', KEYS[1], hash)
  redis.call('ZREM', KEYS[2], hash)
end
local kept = redis.call('HGET', KEYS[1], ARGV[1])
if kept == ARGV[2] then
  redis.call('ZADD', KEYS[2], now, ARGV[1])
  return 1
end
if kept then drop(ARGV[1]) end
for _, hash in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now - ttl, 'LIMIT', 0, 64)) do drop(hash) end
local evictions = 0
while used + size > budget and evictions < 256 do
  local oldest = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
  if not oldest then break end
  drop(oldest)
  evictions = evictions + 1
end
if used < 0 then used = 0 end
if used + size > budget then
  redis.call('SET', KEYS[3], used)
  return 0
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], now, ARGV[1])
redis.call('SET', KEYS[3], used + size)
return 1`;

/** A registered document that is still within its time. KEYS: documents, registered. ARGV: hash, now, ttl. */
const LOOKUP = `local registered = redis.call('ZSCORE', KEYS[2], ARGV[1])
if not registered or tonumber(registered) < tonumber(ARGV[2]) - tonumber(ARGV[3]) then return false end
return redis.call('HGET', KEYS[1], ARGV[1])`;

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

  /**
   * The documents, their registrations and their size: one hash tag, so that on a Redis Cluster the
   * scripts that touch them together run in one slot.
   */
  private keys(): [documents: string, registered: string, bytes: string] {
    const prefix = `${this.options.redis?.prefix ?? ''}${hashTag('apq')}:`;
    return [`${prefix}documents`, `${prefix}registered`, `${prefix}bytes`];
  }

  /** What a document's signature names: its entry in the documents hash, so that it proves its hash too. */
  private entryKey(hash: string): string {
    return `${this.keys()[0]}:${hash}`;
  }

  /** The document registered under `hash` (a checked SHA-256 hex), or null. */
  async get(hash: string): Promise<string | null> {
    const kept = this.documents.get(hash);
    if (kept !== undefined) return kept;
    const redis = this.options.redis;
    if (!redis) return null;
    const stored = (await redis.store
      .run((c) => c.eval(LOOKUP, 2, ...this.keys().slice(0, 2), hash, Date.now(), SHARED_TTL_MS))
      .catch(() => null)) as string | null;
    if (typeof stored !== 'string') return null;
    // What Redis holds is proven: signed by this deployment for this hash, and the hash's document.
    const shared = redis.values.verify(this.entryKey(hash), stored, 'apq');
    if (shared === null || sha256(shared) !== hash) return null;
    this.documents.set(hash, shared);
    return shared;
  }

  has(hash: string): boolean {
    return this.documents.has(hash);
  }

  /**
   * The document a request names by its hash alone, when this process holds it (never a Redis
   * round trip); null otherwise, or for a malformed hash (Yoga's path refuses it).
   */
  named(params: { query?: unknown; extensions?: unknown; documentId?: unknown }): string | null {
    // A `documentId` names a manifest's operation: without a manifest, Yoga refuses it.
    if (params.query !== undefined || params.documentId !== undefined) return null;
    let hash: string | null;
    try {
      hash = namedHash(params as GraphQLParams);
    } catch {
      return null;
    }
    return hash === null ? null : (this.documents.get(hash) ?? null);
  }

  /** Keeps a document under its (proven) hash, unless it is too big to keep. */
  register(hash: string, document: string): void {
    this.documents.set(hash, document);
    const redis = this.options.redis;
    redis?.store
      .run((c) =>
        c.eval(
          REGISTER,
          3,
          ...this.keys(),
          hash,
          redis.values.sign(this.entryKey(hash), document),
          Date.now(),
          SHARED_TTL_MS,
          this.options.redisBytes,
        ),
      )
      .catch(() => undefined);
  }
}

const refusal = (message: string) =>
  new GraphQLError(message, { extensions: { code: 'BAD_USER_INPUT', http: { status: 400 } } });

/**
 * The hash a request names, checked: null without `extensions.persistedQuery`; a refusal for anything
 * but version 1 with a SHA-256 in lowercase hex.
 */
function namedHash(params: GraphQLParams | undefined): string | null {
  const sent = (params?.extensions as { persistedQuery?: unknown } | undefined)?.persistedQuery;
  if (sent === undefined || sent === null) return null;
  const { version, sha256Hash } = sent as { version?: unknown; sha256Hash?: unknown };
  if (version !== 1 || typeof sha256Hash !== 'string' || !SHA256_HEX.test(sha256Hash)) {
    throw refusal(
      'extensions.persistedQuery must be { "version": 1, "sha256Hash": the SHA-256 of the document in lowercase hex }.',
    );
  }
  return sha256Hash;
}

const notFound = () =>
  new GraphQLError('PersistedQueryNotFound', {
    extensions: { code: 'PERSISTED_QUERY_NOT_FOUND', http: { status: 404 } },
  });

/**
 * The two steps: `lookup` (early: a hash alone becomes its document, or PersistedQueryNotFound; a
 * document with a hash is proven) and `register` (after pricing: a document that is about to run is
 * charged its size and kept). Between them, the document is limited, validated and priced like any
 * other.
 */
export function automaticPersistedQueries(
  store: PersistedQueryStore,
  rateLimit: RateLimit | null,
): { lookup: HttpStagePlugin; register: Plugin } {
  const lookup: Plugin = {
    async onParams({ params, setParams }) {
      const hash = namedHash(params);
      if (hash === null) return;
      if (typeof params.query !== 'string') {
        const document = await store.get(hash);
        if (document === null) throw notFound();
        setParams({ ...params, query: document });
      } else if (sha256(params.query) !== hash) {
        throw refusal('The document does not match extensions.persistedQuery.sha256Hash.');
      }
    },
  };
  // On the request's own params: the same part for every operation.
  const keep: RequestPart = ({ contextValue }) => {
    const params = (contextValue as YogaInitialContext).params;
    const hash = namedHash(params);
    const document = params?.query;
    if (hash === null || typeof document !== 'string' || store.has(hash)) return undefined;
    const bytes = Buffer.byteLength(document);
    if (bytes > MAX_DOCUMENT_BYTES || sha256(document) !== hash) return undefined;
    if (!rateLimit) {
      store.register(hash, document);
      return undefined;
    }
    return rateLimit
      .charge(clientOf(contextValue, rateLimit.client), Math.ceil(bytes / BYTES_PER_POINT))
      .then((over) => {
        if (over) return { answer: { errors: [rateLimited(over.retryAfterMs)] } };
        store.register(hash, document);
        return undefined;
      });
  };
  return {
    // The adapter runs a document it names by a hash held in process. A document sent with
    // extensions (its hash, to be proven and kept) is read on Yoga's path, as is a hash to look up
    // in Redis or to refuse.
    lookup: withHttpStage(lookup, {
      // Only a registration: other extensions (Apollo Client 4 sends `clientLibrary` with every
      // request, Apollo's GraphQLWsLink an empty object) say nothing APQ must read.
      declines: ({ params }) =>
        params.query !== undefined &&
        (params.extensions as { persistedQuery?: unknown } | null | undefined)?.persistedQuery !== undefined
          ? 'APQ: a document sent with its hash (the hash proven, the document registered)'
          : null,
      named: (params) => store.named(params),
    }),
    register: partPlugin(() => keep, { subscriptions: true }),
  };
}
