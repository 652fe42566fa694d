import { createHash, randomUUID } from 'node:crypto';
import type { SharedCacheName, SharedLookup } from '../ops/metrics.js';
import { hashTag, type KeyedRedis, type RedisStore } from './redis.js';
import type { RedisValues } from './redis-values.js';

/**
 * The second level of the public caches (validator list, public answers) when REDIS_URL is set:
 * values shared by every instance through Redis, behind each process's own first level.
 *
 * - Only public values come here: the validator list (read with no caller's token) and whole
 *   answers of operations whose every field is declared public (response-cache.ts decides), under
 *   keys versioned by format, schema and upstreams, so that a deploy never reads another's values.
 * - Concurrent misses across instances make one fetch: a miss takes a short fill lock; the others
 *   wait for the value until the lock goes or the upstream timeout passes, then fetch themselves.
 * - Redis is never needed for an answer: a command that fails means "no shared value", and the
 *   caller fetches from the upstreams as it would without Redis.
 * - Whoever reaches Redis may write there (contract.md §8): every value is signed over its key
 *   (redis-values.ts) and proven on every read path; one that does not verify, or is past the
 *   expiry it was signed with, is a miss, counted in `redis_rejected_total`, and overwritten.
 */

/**
 * Bump when the shape of a stored value changes without the schema changing (2: signed values; 3:
 * live messages carry when they were written).
 */
export const SHARED_FORMAT_VERSION = 3;

const hash = (text: string, length = 16) =>
  createHash('sha256').update(text).digest('base64url').slice(0, length);

/**
 * `gw:v<format>:<schema hash>:<upstreams hash>:`: a changed schema, format or set of upstreams
 * (URLs and dialect settings) never reads another's keys.
 */
export function sharedKeyPrefix(printedSchema: string, upstreams: unknown): string {
  return `gw:v${SHARED_FORMAT_VERSION}:${hash(printedSchema)}:${hash(JSON.stringify(upstreams), 8)}:`;
}

export interface SharedValue<T> {
  value: T;
  /** How long it stays valid from now (what is left of its Redis TTL). */
  ttlMs: number;
}

/** A fetch to make here: where to store its value, and the lock to release (none when not held). */
export interface SharedFill {
  key: string;
  lock: SharedLock | null;
  /** False when Redis did not answer: nothing is written. */
  store: boolean;
}

export interface SharedLock {
  key: string;
  lockKey: string;
  token: string;
}

/** Stores the value and releases the lock if it is still the caller's, in one round trip. */
const STORE_AND_RELEASE = `redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if ARGV[3] ~= '' and redis.call('GET', KEYS[2]) == ARGV[3] then redis.call('DEL', KEYS[2]) end
return 1`;
/**
 * 1 and the value if there is one, else 2 when the lock was taken, else 3 (held by another). A value
 * whose exact bytes are ARGV[3] (one that did not verify) counts as none.
 */
const VALUE_OR_LOCK = `local value = redis.call('GET', KEYS[1])
if value and value ~= ARGV[3] then return {1, value} end
if redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2], 'NX') then return {2} end
return {3}`;
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

/** A value's fill lock: its key's hash tag (`SharedCache.key`) puts it in the value's slot. */
const lockOf = (key: string) => `${key}:lock`;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** What `read` found under a key: the proven value (null: none, or one that did not verify), and the bytes Redis held. */
export interface SharedRead<T> {
  found: SharedValue<T> | null;
  stored: string | null;
}

export class SharedCache {
  private readonly redis: RedisStore;
  private readonly values: RedisValues;
  readonly prefix: string;

  constructor(
    keyed: KeyedRedis,
    /** How long a lock is held at most, and how long the others wait: the upstream timeout. */
    private readonly lockMs: number,
    private readonly observe: (cache: SharedCacheName, result: SharedLookup) => void = () => {},
  ) {
    this.redis = keyed.store;
    this.values = keyed.values;
    this.prefix = keyed.prefix;
  }

  /**
   * `<prefix><cache>:{<id>}`: the id is the hash tag, so that on a Redis Cluster the value and its
   * lock share a slot (one script or MGET reaches both) while values spread over the shards.
   */
  key(cache: SharedCacheName, id: string): string {
    return `${this.prefix}${cache}:${hashTag(id)}`;
  }

  /** The value stored under `key`, once proven and decoded; null when none or it does not verify (counted). */
  private open<T>(cache: SharedCacheName, key: string, stored: string | null): SharedValue<T> | null {
    if (stored === null) return null;
    const text = this.values.verify(key, stored, cache);
    return text === null ? null : decode<T>(text);
  }

  /** What is stored under `key`; undefined when Redis did not answer. */
  async read<T>(cache: SharedCacheName, key: string): Promise<SharedRead<T> | undefined> {
    try {
      const stored = await this.redis.run((c) => c.get(key));
      return { found: this.open<T>(cache, key, stored), stored };
    } catch {
      return undefined;
    }
  }

  /**
   * After a miss: the value if it was stored meanwhile, else the fill lock for `key`, else null
   * (another holds it); undefined when Redis did not answer. One script, so that a value stored
   * between the miss and the lock is never fetched again; `rejected`, the bytes the miss found and
   * did not verify, counts as no value, so that the lock is taken over it.
   */
  async valueOrLock<T>(
    cache: SharedCacheName,
    key: string,
    rejected: string | null,
  ): Promise<{ found: SharedValue<T> } | SharedLock | null | undefined> {
    const lock = { key, lockKey: lockOf(key), token: randomUUID() };
    try {
      const [outcome, raw] = (await this.redis.run((c) =>
        c.eval(
          VALUE_OR_LOCK,
          2,
          key,
          lock.lockKey,
          lock.token,
          this.lockMs,
          ...(rejected === null ? [] : [rejected]),
        ),
      )) as [number, string | undefined];
      if (outcome === 1) {
        const found = this.open<T>(cache, key, raw ?? null);
        return found ? { found } : null;
      }
      return outcome === 2 ? lock : null;
    } catch {
      return undefined;
    }
  }

  /**
   * Waits for the value another instance is fetching: null when its lock went without a value or
   * when Redis stops answering, `expired` when the wait reaches the upstream timeout. Bytes that did
   * not verify (`rejected`, and any met while waiting) are no value, and are counted once.
   */
  async waitFor<T>(
    cache: SharedCacheName,
    key: string,
    rejected: string | null,
  ): Promise<SharedValue<T> | 'expired' | null> {
    let skip = rejected;
    const deadline = Date.now() + this.lockMs;
    let pause = 5;
    while (Date.now() < deadline) {
      await sleep(Math.min(pause, Math.max(deadline - Date.now(), 1)));
      pause = Math.min(pause * 2, 50);
      let value: string | null;
      let lock: string | null;
      try {
        [value, lock] = (await this.redis.run((c) => c.mget(key, lockOf(key)))) as [
          string | null,
          string | null,
        ];
      } catch {
        return null;
      }
      if (value !== null && value !== skip) {
        const found = this.open<T>(cache, key, value);
        if (found) return found;
        skip = value;
      }
      if (lock === null) return null;
    }
    return 'expired';
  }

  /** Stores a value for `ttlMs` and releases the caller's lock; never waited for, never fails. */
  store(key: string, value: unknown, ttlMs: number, lock?: SharedLock | null): void {
    const payload = this.values.sign(key, `${Date.now() + ttlMs}|${JSON.stringify(value)}`);
    this.redis
      .run((c) => c.eval(STORE_AND_RELEASE, 2, key, lockOf(key), payload, ttlMs, lock?.token ?? ''))
      .catch(() => {});
  }

  /** Gives the lock up without a value (the fetch failed), so that the others stop waiting. */
  release(lock: SharedLock): void {
    this.redis.run((c) => c.eval(RELEASE, 1, lock.lockKey, lock.token)).catch(() => {});
  }

  /**
   * The first half of a lookup: the value of `id` from Redis (or from another instance's fetch),
   * or a ticket to fetch it here, to be handed to `filled` or `failed` afterwards.
   */
  async begin<T>(
    cache: SharedCacheName,
    id: string,
  ): Promise<{ found: SharedValue<T> } | { fill: SharedFill }> {
    const key = this.key(cache, id);
    const read = await this.read<T>(cache, key);
    if (read?.found) {
      this.observe(cache, 'hit');
      return { found: read.found };
    }
    // A value that did not verify (or is past its expiry) is none: the lock is taken over it, and
    // the value fetched here overwrites it.
    const rejected = read?.stored ?? null;
    const lock = read ? await this.valueOrLock<T>(cache, key, rejected) : undefined;
    if (lock && 'found' in lock) {
      this.observe(cache, 'hit');
      return lock;
    }
    if (lock === undefined) {
      this.observe(cache, 'unavailable');
      return { fill: { key, lock: null, store: false } };
    }
    if (lock === null) {
      const waited = await this.waitFor<T>(cache, key, rejected);
      if (waited === 'expired') {
        this.observe(cache, 'expired');
        return { fill: { key, lock, store: true } };
      }
      if (waited) {
        this.observe(cache, 'waited');
        return { found: waited };
      }
    }
    this.observe(cache, 'miss');
    return { fill: { key, lock, store: true } };
  }

  /** The second half: the value fetched here, stored for the others (and the lock released). */
  filled(fill: SharedFill, value: unknown, ttlMs: number): void {
    if (fill.store) this.store(fill.key, value, ttlMs, fill.lock);
  }

  /** The second half when the fetch failed or its value is not to be kept. */
  failed(fill: SharedFill): void {
    if (fill.lock) this.release(fill.lock);
  }

  /**
   * The value of `id`: from Redis, or from another instance's fetch, or fetched here (and stored
   * for `ttlMs`). Whatever Redis does, `fetch` is called at most once and its failure is the answer.
   */
  async getOrFill<T>(
    cache: SharedCacheName,
    id: string,
    ttlMs: number,
    fetch: () => Promise<T>,
  ): Promise<SharedValue<T>> {
    const lookup = await this.begin<T>(cache, id);
    if ('found' in lookup) return lookup.found;
    let value: T;
    try {
      value = await fetch();
    } catch (error) {
      this.failed(lookup.fill);
      throw error;
    }
    this.filled(lookup.fill, value, ttlMs);
    return { value, ttlMs };
  }
}

/**
 * A proven `<expiry>|<json>` (written by `store`, so well formed); null once past its expiry, so
 * that an old answer written back under its key is not served again.
 */
function decode<T>(text: string): SharedValue<T> | null {
  const bar = text.indexOf('|');
  const ttlMs = Number(text.slice(0, bar)) - Date.now();
  return ttlMs > 0 ? { value: JSON.parse(text.slice(bar + 1)) as T, ttlMs } : null;
}
