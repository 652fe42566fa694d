import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { createRedisEventTarget } from '@graphql-yoga/redis-event-target';
import { createPubSub, FixedBuffer, type PubSub } from 'graphql-yoga';
import type { Redis } from 'ioredis';
import type { RedisStore } from '../scale/redis.js';
import type { LiveEvent } from './events.js';

/**
 * How a poll's events reach the subscribers of every process, and who may poll a source.
 *
 * - Without REDIS_URL (`LocalBus`): each process polls for itself and delivers in process
 *   (graphql-yoga's `createPubSub`).
 * - With REDIS_URL (`RedisBus`): one instance of the deployment polls each source, holding a lease
 *   in Redis (`SET NX PX`, renewed at each poll and every third of a lease while a poll runs, so a
 *   poll slower than the lease keeps it; taken over by another instance once it expires when its
 *   holder dies). Its events reach every instance and worker through Redis pub/sub
 *   (`createPubSub` over `@graphql-yoga/redis-event-target`). A poll's events are published, and
 *   the source's state (what was delivered) stored, in one script that first checks the lease, so
 *   that two holders never both deliver: a new holder continues from the stored state, and every
 *   event is delivered once. While Redis does not answer, a process polls for itself and delivers
 *   to its own subscribers.
 */
export interface LiveBus {
  /** Starts delivering a source's events to `deliver` (every process's, with Redis). */
  listen(source: string, deliver: (event: LiveEvent) => void): () => void;
  /**
   * Whether this process may poll `source` now: `kept` (it already did), `taken` (it just became
   * the poller: continue from `state`, null when none was stored), or `elsewhere` (another holds it).
   */
  claim(
    source: string,
  ): Promise<{ claim: 'kept' } | { claim: 'taken'; state: unknown } | { claim: 'elsewhere' }>;
  /** Runs a poll of `source`, keeping this process's lease on it alive for as long as it lasts. */
  hold<T>(source: string, poll: () => Promise<T>): Promise<T>;
  /** Delivers a poll's events and keeps its state, if this process still polls `source`. */
  publish(source: string, events: LiveEvent[], state: unknown): Promise<boolean>;
  /** Gives `source` up: its last subscriber here has left. */
  release(source: string): Promise<void>;
  /** Who polls each source this process knows of: `this instance`, another's id, or `none`. */
  holders(sources: readonly string[]): Promise<Record<string, string>>;
  close(): Promise<void>;
}

/** Pub/sub channels per source: plenty for one poll's events, however many the subscribers. */
const PUBSUB_BUFFER = 10_000;

type Topics = Record<string, [LiveEvent]>;

/** Starts pumping a topic of `pubsub` into `deliver`; the returned function stops it. */
function pump(pubsub: PubSub<Topics>, topic: string, deliver: (event: LiveEvent) => void): () => void {
  const events = pubsub.subscribe(topic);
  void (async () => {
    for await (const event of events) deliver(event);
  })();
  return () => {
    void events.return?.();
  };
}

/** Each process polls for itself and delivers in process. */
export class LocalBus implements LiveBus {
  private readonly pubsub = createPubSub<Topics>({ repeaterBuffer: new FixedBuffer(PUBSUB_BUFFER) });

  listen(source: string, deliver: (event: LiveEvent) => void): () => void {
    return pump(this.pubsub, source, deliver);
  }

  async claim() {
    return { claim: 'kept' as const };
  }

  hold<T>(_source: string, poll: () => Promise<T>): Promise<T> {
    return poll();
  }

  async publish(source: string, events: LiveEvent[]): Promise<boolean> {
    for (const event of events) this.pubsub.publish(source, event);
    return true;
  }

  async release(): Promise<void> {}

  async holders(sources: readonly string[]): Promise<Record<string, string>> {
    return Object.fromEntries(sources.map((source) => [source, 'this instance']));
  }

  async close(): Promise<void> {}
}

/**
 * Takes the lease (2), keeps it (1, renewed with the state's expiry, so a holder whose polls fail
 * for a while keeps what it delivered for the next), or finds it held by another (0).
 */
const CLAIM = `local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
  return 1
end
if not holder then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 2 end
return 0`;
/** Renews the lease and the state's expiry while a poll runs, if the lease is still the caller's. */
const RENEW = `if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return 1`;
/** Publishes the events and stores the state only while the lease is the caller's. */
const FENCED_PUBLISH = `if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
for i = 5, #ARGV do redis.call('PUBLISH', ARGV[2], ARGV[i]) end
redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[4])
return 1`;
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

export interface RedisBusOptions {
  /** The deployment's key prefix (versioned by schema and upstreams, as the shared caches'). */
  prefix: string;
  /** How long a lease lives unless renewed (LIVE_LEASE_MS). */
  leaseMs: number;
}

/** One poller per source across the deployment, events through Redis pub/sub. */
export class RedisBus implements LiveBus {
  private readonly owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private readonly subscriber: Redis;
  private readonly pubsub: PubSub<Topics>;
  /** Where events go while Redis does not answer: this process's own subscribers. */
  private readonly local = new LocalBus();

  constructor(
    private readonly redis: RedisStore,
    private readonly options: RedisBusOptions,
  ) {
    // A connection in subscriber mode takes no other command: a second one, which queues its
    // SUBSCRIBEs until connected, sends again one that a dropped connection left unanswered, and
    // subscribes again after a reconnect. Its commands have no budget of their own: a SUBSCRIBE is
    // no answer anybody waits for.
    this.subscriber = redis.client.duplicate({
      enableOfflineQueue: true,
      // ioredis' INFO check before `ready` was seen to leave a new connection waiting for good
      // (its queued SUBSCRIBE never sent) while the process started up; a subscriber needs none.
      enableReadyCheck: false,
      lazyConnect: false,
      autoResendUnfulfilledCommands: true,
      autoResubscribe: true,
      maxRetriesPerRequest: null,
      commandTimeout: undefined,
    });
    this.subscriber.on('error', () => {});
    this.pubsub = createPubSub<Topics>({
      eventTarget: createRedisEventTarget({ publishClient: redis.client, subscribeClient: this.subscriber }),
      repeaterBuffer: new FixedBuffer(PUBSUB_BUFFER),
    });
  }

  private key(kind: 'lease' | 'state' | 'events', source: string): string {
    return `${this.options.prefix}live:${kind}:${source}`;
  }

  listen(source: string, deliver: (event: LiveEvent) => void): () => void {
    const fromRedis = pump(this.pubsub, this.key('events', source), deliver);
    const fromHere = this.local.listen(source, deliver);
    return () => {
      fromRedis();
      fromHere();
    };
  }

  /** The source's lease and state keys, and the owner and expiries the scripts take. */
  private leaseArgs(source: string) {
    const { leaseMs } = this.options;
    return [this.key('lease', source), this.key('state', source), this.owner, leaseMs, leaseMs * 3] as const;
  }

  async claim(source: string) {
    let outcome: number;
    try {
      outcome = (await this.redis.run((c) => c.eval(CLAIM, 2, ...this.leaseArgs(source)))) as number;
    } catch {
      // Redis does not answer: this process polls for itself meanwhile.
      return { claim: 'kept' as const };
    }
    if (outcome === 1) return { claim: 'kept' as const };
    if (outcome === 0) return { claim: 'elsewhere' as const };
    let state: unknown = null;
    try {
      const stored = await this.redis.run((c) => c.get(this.key('state', source)));
      state = stored === null ? null : JSON.parse(stored);
    } catch {
      state = null;
    }
    return { claim: 'taken' as const, state };
  }

  async hold<T>(source: string, poll: () => Promise<T>): Promise<T> {
    // Whether a renewal found the lease still ours matters not here: the publish is fenced.
    const renew = setInterval(
      () => void this.redis.run((c) => c.eval(RENEW, 2, ...this.leaseArgs(source))).catch(() => undefined),
      Math.max(Math.floor(this.options.leaseMs / 3), 1),
    );
    try {
      return await poll();
    } finally {
      clearInterval(renew);
    }
  }

  async publish(source: string, events: LiveEvent[], state: unknown): Promise<boolean> {
    const [lease, stateKey, owner, , stateTtlMs] = this.leaseArgs(source);
    try {
      const published = (await this.redis.run((c) =>
        c.eval(
          FENCED_PUBLISH,
          2,
          lease,
          stateKey,
          owner,
          this.key('events', source),
          JSON.stringify(state),
          stateTtlMs,
          ...events.map((event) => JSON.stringify(event)),
        ),
      )) as number;
      return published === 1;
    } catch {
      // Redis does not answer: this process's own subscribers still get the events.
      return this.local.publish(source, events);
    }
  }

  async release(source: string): Promise<void> {
    await this.redis
      .run((c) => c.eval(RELEASE, 1, this.key('lease', source), this.owner))
      .catch(() => undefined);
  }

  async holders(sources: readonly string[]): Promise<Record<string, string>> {
    const entries = await Promise.all(
      sources.map(async (source) => {
        const holder = await this.redis.run((c) => c.get(this.key('lease', source))).catch(() => undefined);
        const name =
          holder === undefined
            ? 'unknown'
            : holder === null
              ? 'none'
              : holder === this.owner
                ? 'this instance'
                : holder;
        return [source, name] as const;
      }),
    );
    return Object.fromEntries(entries);
  }

  async close(): Promise<void> {
    this.subscriber.disconnect();
  }
}
