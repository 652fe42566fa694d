import { randomBytes } from 'node:crypto';
import { createRedisEventTarget } from '@graphql-yoga/redis-event-target';
import { createPubSub, FixedBuffer, type PubSub } from 'graphql-yoga';
import type { Redis } from 'ioredis';
import type { RedisRejectedKind } from '../ops/metrics.js';
import type { KeyedRedis, RedisStore } from '../scale/redis.js';
import type { RedisValues } from '../scale/redis-values.js';
import type { LiveEvent } from './events.js';

/**
 * How a poll's events reach the subscribers of every process, and who may poll a source.
 *
 * - Without REDIS_URL (`LocalBus`): each process polls for itself and delivers in process
 *   (graphql-yoga's `createPubSub`).
 * - With REDIS_URL (`RedisBus`): one instance of the deployment polls each source, holding a lease
 *   in Redis (taken when there is none, renewed at each poll and every third of a lease while a
 *   poll runs, so a poll slower than the lease keeps it; taken over by another instance once it
 *   expires when its holder dies). Its events reach every instance and worker through Redis
 *   pub/sub (`createPubSub` over `@graphql-yoga/redis-event-target`). A poll's events are
 *   published, and the source's state (what was delivered) stored, in one script that first
 *   checks the lease, so that two holders never both deliver: a new holder continues from the
 *   stored state, and every event is delivered once.
 *
 * Every event at most once, whatever Redis does (contract.md §7), so the bus fails closed. A
 * process that cannot tell whether it holds a lease (its command did not answer) does not poll
 * while its subscriber connection is up, since the holder's events may still reach it that way; a
 * publish that did not answer may have run, so nothing is delivered here for it and the next claim
 * reads the stored state again. Only a process cut off from Redis altogether (its subscriber
 * connection down too, so that no holder's events can reach it) polls for itself and delivers to
 * its own subscribers; what it delivered that way and a holder sends again once Redis is back is
 * dropped by the hub (hub.ts), which delivers each event of every kind once.
 *
 * Whoever reaches Redis is not trusted either (contract.md §8, redis-values.ts): it must not make
 * a process deliver an event, continue from a state or stand back from a lease it did not get from
 * the deployment, nor read a private source. So:
 * - every event and stored state is signed with the deployment's key over its channel or key
 *   (public sources: `blocks`, `validators`) or sealed (AES-256-GCM; private sources, `failed:…`,
 *   read with one caller's token); a listener delivers only what verifies, and a claim takes a
 *   state that does not as none (`redis_rejected_total{kind="event"|"state"}`);
 * - a lease is `<mac>.<owner>.<expires at>`, signed by its holder each time it is taken or renewed.
 *   The scripts never see a key (MONITOR would show it): they compare exact bytes, and Node judges
 *   a holder a script returns. One that does not verify (`kind="lease"`), is past its expiry, or
 *   is this process's own (a renewal whose answer was lost) is no other's lease: it is replaced by
 *   a compare-and-swap on its exact bytes, and the state read as a new holder reads it. Renewals,
 *   publishes and releases act only while the lease holds the very value this process last wrote.
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
  /**
   * Who polls each source this process knows of: `this instance`, another's id, `none`,
   * `unverified` (a lease value that does not prove the deployment's key: no holder, replaced at
   * the next claim) or `unknown` (Redis did not answer).
   */
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
/** What crosses Redis: signed or sealed text, checked by the listener (null: an empty message). */
type Wire = Record<string, [string | null]>;

/** Starts pumping a topic of `pubsub` into `deliver`; the returned function stops it. */
function pump<T>(
  pubsub: PubSub<Record<string, [T]>>,
  topic: string,
  deliver: (value: T) => void,
): () => void {
  const events = pubsub.subscribe(topic);
  void (async () => {
    for await (const event of events) deliver(event as T);
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
 * Takes or keeps the lease, writing ARGV[1] (this process's newly signed value) when there is none
 * ({2, state}) or when it holds exactly ARGV[5] ({1}; {1, state} when ARGV[4] asks for the state):
 * the value this process last wrote, or one Node found to be no holder. A lease kept renews the
 * state's expiry too, so a holder whose polls fail for a while keeps what it delivered for the
 * next. Any other value comes back for Node to judge ({0, holder}). The state comes in the same
 * script as the lease, so that it is the one the lease's last publish stored.
 * KEYS: lease, state. ARGV: new value, lease ms, state ms, '1' for the state, expected value (optional).
 */
const CLAIM = `local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[5] then return {0, holder} end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if not holder then return {2, redis.call('GET', KEYS[2])} end
redis.call('PEXPIRE', KEYS[2], ARGV[3])
if ARGV[4] == '1' then return {1, redis.call('GET', KEYS[2])} end
return {1}`;
/**
 * Renews the lease (with a newly signed value) and the state's expiry while a poll runs, if the
 * lease is still the value the caller last wrote. ARGV: that value, the new one, lease ms, state ms.
 */
const RENEW = `if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
return 1`;
/** Publishes the events and stores the state only while the lease is the value the caller last wrote. */
const FENCED_PUBLISH = `if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
for i = 5, #ARGV do redis.call('PUBLISH', ARGV[2], ARGV[i]) end
redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[4])
return 1`;
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

export interface RedisBusOptions {
  /** How long a lease lives unless renewed (LIVE_LEASE_MS). */
  leaseMs: number;
}

/** A CLAIM's answer: the outcome, and the state or the holder it brought back. */
type ClaimReply = [number, (string | null)?];

/**
 * The subscriber connection as the event target uses it, whose SUBSCRIBE and UNSUBSCRIBE it
 * leaves unawaited: one that the connection's end cuts short (an UNSUBSCRIBE while the process
 * closes, a SUBSCRIBE while Redis is away) must not be an unhandled rejection. The connection
 * subscribes again by itself once it is back (autoResubscribe).
 */
function quietSubscriber(subscriber: Redis): Redis {
  return {
    on: (event: string, listener: (...args: unknown[]) => void) => subscriber.on(event, listener),
    subscribe: (channel: string) => subscriber.subscribe(channel).catch(() => undefined),
    unsubscribe: (channel: string) => subscriber.unsubscribe(channel).catch(() => undefined),
  } as unknown as Redis;
}

/** One poller per source across the deployment, events through Redis pub/sub. */
export class RedisBus implements LiveBus {
  /**
   * This instance's name on the leases (and, for the others, on /readyz): random, so that it says
   * nothing of the host or the process (contract.md §7).
   */
  private readonly owner = randomBytes(8).toString('hex');
  private readonly subscriber: Redis;
  private readonly pubsub: PubSub<Wire>;
  /** Where events go while this process is cut off from Redis: its own subscribers. */
  private readonly local = new LocalBus();
  /** Sources whose last publish did not answer (it may have run): the next claim reads their state again. */
  private readonly unsure = new Set<string>();
  /**
   * The lease value this process last sent for each source (recorded when sent, so that a renewal
   * whose answer is still on its way is known): only while the lease holds exactly it does this
   * process renew, publish or release.
   */
  private readonly leases = new Map<string, string>();

  private readonly redis: RedisStore;
  private readonly values: RedisValues;
  /** The deployment's key prefix (versioned by schema and upstreams, as the shared caches'). */
  private readonly prefix: string;

  constructor(
    keyed: KeyedRedis,
    private readonly options: RedisBusOptions,
  ) {
    const redis = keyed.store;
    this.redis = redis;
    this.values = keyed.values;
    this.prefix = keyed.prefix;
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
    this.pubsub = createPubSub<Wire>({
      eventTarget: createRedisEventTarget({
        publishClient: redis.client,
        subscribeClient: quietSubscriber(this.subscriber),
        // Messages stay text until the listener has checked them against their channel.
        serializer: { stringify: String, parse: (message) => message },
      }),
      repeaterBuffer: new FixedBuffer(PUBSUB_BUFFER),
    });
  }

  private key(kind: 'lease' | 'state' | 'events', source: string): string {
    return `${this.prefix}live:${kind}:${source}`;
  }

  /** Private sources (read with one caller's token) are sealed in Redis; public ones signed. */
  private wrap(source: string, key: string, text: string): string {
    return source.startsWith('failed:') ? this.values.seal(key, text) : this.values.sign(key, text);
  }

  /** What `wrap` made of a text under `key`, or null (counted as `kind`) when it was not. */
  private unwrap(source: string, key: string, stored: string, kind: RedisRejectedKind): string | null {
    return source.startsWith('failed:')
      ? this.values.open(key, stored, kind)
      : this.values.verify(key, stored, kind);
  }

  listen(source: string, deliver: (event: LiveEvent) => void): () => void {
    const channel = this.key('events', source);
    const fromRedis = pump(this.pubsub, channel, (message) => {
      const text = this.unwrap(source, channel, message ?? '', 'event');
      if (text !== null) deliver(JSON.parse(text) as LiveEvent);
    });
    const fromHere = this.local.listen(source, deliver);
    return () => {
      fromRedis();
      fromHere();
    };
  }

  /** The source's lease and state keys, and the expiries the scripts take. */
  private leaseArgs(source: string) {
    const { leaseMs } = this.options;
    return [this.key('lease', source), this.key('state', source), leaseMs, leaseMs * 3] as const;
  }

  /** A lease value of this process for `source`, signed, recorded as the one it last sent. */
  private nextLease(source: string): string {
    const value = this.values.sign(
      this.key('lease', source),
      `${this.owner}.${Date.now() + this.options.leaseMs}`,
    );
    this.leases.set(source, value);
    return value;
  }

  /** The owner and expiry a lease value proves, or null (counted) when it proves nothing. */
  private leaseOf(source: string, stored: string): { owner: string; live: boolean } | null {
    const text = this.values.verify(this.key('lease', source), stored, 'lease');
    if (text === null) return null;
    const [owner, expires] = text.split('.');
    return { owner: owner as string, live: Number(expires) > Date.now() };
  }

  /**
   * Whether this process's subscriber connection is up: then events of a holder elsewhere may
   * reach it, and it must not deliver any of its own.
   */
  private listening(): boolean {
    return this.subscriber.status === 'ready';
  }

  /** One CLAIM, replacing `expected` (or nothing); undefined when Redis did not answer. */
  private async swap(source: string, expected: string | undefined, withState: boolean) {
    const [lease, state, leaseMs, stateTtlMs] = this.leaseArgs(source);
    const args = [this.nextLease(source), leaseMs, stateTtlMs, withState ? '1' : '0'];
    if (expected !== undefined) args.push(expected);
    return (await this.redis.run((c) => c.eval(CLAIM, 2, lease, state, ...args)).catch(() => undefined)) as
      | ClaimReply
      | undefined;
  }

  async claim(source: string): Promise<Claim> {
    const reread = this.unsure.has(source);
    // Whether this process holds the lease is unknown when Redis does not answer. Fail closed: no
    // poll while a holder's events may still arrive here; cut off from Redis altogether, poll for
    // its own subscribers.
    const unknown = (): Claim => (this.listening() ? { claim: 'undecided' } : { claim: 'kept' });
    let reply = await this.swap(source, this.leases.get(source), reread);
    if (reply === undefined) return unknown();
    if (reply[0] === 1 && !reread) return { claim: 'kept' };
    if (reply[0] === 0) {
      // Another value: a live lease of another instance stands; anything else is replaced, by its
      // exact bytes (so that a lease another instance took meanwhile stands too).
      const holder = this.leaseOf(source, reply[1] as string);
      if (holder?.live && holder.owner !== this.owner) return { claim: 'elsewhere' };
      reply = await this.swap(source, reply[1] as string, true);
      if (reply === undefined) return unknown();
      if (reply[0] === 0) return { claim: 'elsewhere' };
    }
    this.unsure.delete(source);
    return { claim: 'taken', state: this.stateOf(source, reply[1] ?? null) };
  }

  /** A stored state as the poller takes it: null when none was stored, or it does not verify. */
  private stateOf(source: string, stored: string | null): unknown {
    if (stored === null) return null;
    const text = this.unwrap(source, this.key('state', source), stored, 'state');
    return text === null ? null : JSON.parse(text);
  }

  /** Renews the lease while a poll runs, if it is still the value this process last wrote. */
  private async renew(source: string): Promise<void> {
    const mine = this.leases.get(source);
    if (mine === undefined) return;
    const [lease, state, leaseMs, stateTtlMs] = this.leaseArgs(source);
    const next = this.nextLease(source);
    await this.redis
      .run((c) => c.eval(RENEW, 2, lease, state, mine, next, leaseMs, stateTtlMs))
      .catch(() => 0);
  }

  async hold<T>(source: string, poll: () => Promise<T>): Promise<T> {
    // Whether a renewal found the lease still ours matters not here: the publish is fenced.
    const renew = setInterval(
      () => void this.renew(source),
      Math.max(Math.floor(this.options.leaseMs / 3), 1),
    );
    try {
      return await poll();
    } finally {
      clearInterval(renew);
    }
  }

  async publish(source: string, events: LiveEvent[], state: unknown): Promise<boolean> {
    // Released meanwhile (its last subscriber here left): this process holds nothing.
    const mine = this.leases.get(source);
    if (mine === undefined) return false;
    const [lease, stateKey, , stateTtlMs] = this.leaseArgs(source);
    const channel = this.key('events', source);
    try {
      const published = (await this.redis.run((c) =>
        c.eval(
          FENCED_PUBLISH,
          2,
          lease,
          stateKey,
          mine,
          channel,
          this.wrap(source, stateKey, JSON.stringify(state)),
          stateTtlMs,
          ...events.map((event) => this.wrap(source, channel, JSON.stringify(event))),
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
    const mine = this.leases.get(source);
    this.leases.delete(source);
    if (mine === undefined) return;
    await this.redis.run((c) => c.eval(RELEASE, 1, this.key('lease', source), mine)).catch(() => undefined);
  }

  /** A lease value as /readyz names its holder: never the value itself, which anyone may have written. */
  private holderName(source: string, stored: string | null): string {
    if (stored === null) return 'none';
    const holder = this.leaseOf(source, stored);
    if (holder === null) return 'unverified';
    if (!holder.live) return 'none';
    return holder.owner === this.owner ? 'this instance' : holder.owner;
  }

  async holders(sources: readonly string[]): Promise<Record<string, string>> {
    const entries = await Promise.all(
      sources.map(async (source) => {
        const stored = await this.redis.run((c) => c.get(this.key('lease', source))).catch(() => undefined);
        return [source, stored === undefined ? 'unknown' : this.holderName(source, stored)] as const;
      }),
    );
    return Object.fromEntries(entries);
  }

  async close(): Promise<void> {
    this.subscriber.disconnect();
  }
}
