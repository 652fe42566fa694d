import { randomBytes } from 'node:crypto';
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
 *   event is delivered once.
 *
 * Every event at most once, whatever Redis does (contract.md §7), so the bus fails closed. A
 * process that cannot tell whether it holds a lease (its command did not answer) does not poll
 * while its subscriber connection is up, since the holder's events may still reach it that way; a
 * publish that did not answer may have run, so nothing is delivered here for it and the next claim
 * reads the stored state again. Only a process cut off from Redis altogether (its subscriber
 * connection down too, so that no holder's events can reach it) polls for itself and delivers to
 * its own subscribers; what it delivered that way and a holder sends again once Redis is back is
 * dropped by the hub (hub.ts), which delivers each event of every kind once.
 */
export interface LiveBus {
  /** Starts delivering a source's events to `deliver` (every process's, with Redis). */
  listen(source: string, deliver: (event: LiveEvent) => void): () => void;
  /**
   * Whether this process may poll `source` now: `kept` (it already did), `taken` (it just became
   * the poller, or must read what it delivered again: continue from `state`, null when none was
   * stored), `elsewhere` (another holds it), or `undecided` (whether it holds it is unknown: it
   * must not poll).
   */
  claim(source: string): Promise<Claim>;
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

export type Claim =
  | { claim: 'kept' }
  | { claim: 'taken'; state: unknown }
  | { claim: 'elsewhere' }
  | { claim: 'undecided' };

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

  async claim(): Promise<Claim> {
    return { claim: 'kept' };
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
 * Takes the lease ({2, state}), keeps it ({1}, renewed with the state's expiry, so a holder whose
 * polls fail for a while keeps what it delivered for the next; {1, state} when ARGV[4] asks for the
 * state again), or finds it held by another ({0}). The state comes in the same script as the lease,
 * so that it is the one the lease's last publish stored.
 */
const CLAIM = `local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
  if ARGV[4] == '1' then return {1, redis.call('GET', KEYS[2])} end
  return {1}
end
if not holder then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return {2, redis.call('GET', KEYS[2])}
end
return {0}`;
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

/** A stored state as the poller takes it: null when none was stored, or it is not JSON. */
function parseState(stored: string | null | undefined): unknown {
  if (stored === null || stored === undefined) return null;
  try {
    return JSON.parse(stored);
  } catch {
    return null;
  }
}

/** One poller per source across the deployment, events through Redis pub/sub. */
export class RedisBus implements LiveBus {
  /**
   * This instance's name on the leases (and, for the others, on /readyz): random, so that it says
   * nothing of the host or the process (contract.md §7).
   */
  private readonly owner = randomBytes(8).toString('hex');
  private readonly subscriber: Redis;
  private readonly pubsub: PubSub<Topics>;
  /** Where events go while this process is cut off from Redis: its own subscribers. */
  private readonly local = new LocalBus();
  /** Sources whose last publish did not answer (it may have run): the next claim reads their state again. */
  private readonly unsure = new Set<string>();

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

  /**
   * Whether this process's subscriber connection is up: then events of a holder elsewhere may
   * reach it, and it must not deliver any of its own.
   */
  private listening(): boolean {
    return this.subscriber.status === 'ready';
  }

  async claim(source: string): Promise<Claim> {
    const reread = this.unsure.has(source);
    let reply: [number, (string | null)?];
    try {
      reply = (await this.redis.run((c) =>
        c.eval(CLAIM, 2, ...this.leaseArgs(source), reread ? '1' : '0'),
      )) as [number, (string | null)?];
    } catch {
      // Whether this process holds the lease is unknown. Fail closed: no poll while a holder's
      // events may still arrive here; cut off from Redis altogether, poll for its own subscribers.
      return this.listening() ? { claim: 'undecided' } : { claim: 'kept' };
    }
    const [outcome, stored] = reply;
    if (outcome === 0) return { claim: 'elsewhere' };
    if (outcome === 1 && !reread) return { claim: 'kept' };
    this.unsure.delete(source);
    return { claim: 'taken', state: parseState(stored) };
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
      // The script may have run, its events on their way to every subscriber: deliver nothing
      // here, and read the stored state again before the next poll. Only a process cut off from
      // Redis altogether delivers to its own subscribers (no holder's events can reach them).
      if (this.listening()) {
        this.unsure.add(source);
        return false;
      }
      return this.local.publish(source, events);
    }
  }

  async release(source: string): Promise<void> {
    this.unsure.delete(source);
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
