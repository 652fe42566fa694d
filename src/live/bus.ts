import { randomBytes } from 'node:crypto';
import { createRedisEventTarget } from '@graphql-yoga/redis-event-target';
import { FixedBuffer, Repeater } from 'graphql-yoga';
import type { Redis } from 'ioredis';
import type { RedisRejectedKind } from '../ops/metrics.js';
import { hashTag, type KeyedRedis, type RedisListener, type RedisStore } from '../scale/redis.js';
import type { RedisValues } from '../scale/redis-values.js';
import type { LiveEvent } from './events.js';

/**
 * How a poll's events reach the subscribers of every process, and who may poll a source: without
 * REDIS_URL (`LocalBus`) each process polls for itself; with it (`RedisBus`) one instance polls
 * each source under a lease, its events reaching every instance through Redis pub/sub (sharded on
 * a cluster, a source's lease, state and channel under one hash tag: each script in one slot).
 *
 * The rule: every event at most once, whatever Redis does (contract.md §7), so the bus fails
 * closed. Events are published, and the source's state stored, only while the lease holds the
 * value this process last wrote (one script); a process that cannot tell whether it holds a lease
 * does not poll while it still listens. Nothing read back is trusted (contract.md §8, §9): events,
 * states and leases are signed or sealed (redis-values.ts) with their place in the source's order
 * and when they were written (`Place`); what is not newer than what this process has seen, or
 * older than a state lives, is dropped, and a stale state taken as none unless its own last state
 * is the newest it knows (docs/decisions/0010-live-bus-fails-closed.md).
 */
export interface LiveBus {
  /**
   * Starts delivering a source's events to `deliver` (every process's, with Redis). `resumed`:
   * told each time the connection events come through is back after it was lost (not at the first
   * connect), when events published meanwhile have missed this process.
   */
  listen(source: string, deliver: (event: LiveEvent) => void, resumed?: () => void): () => void;
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

/** Events waiting for one listener: plenty for one poll's events, however many the subscribers. */
const PUBSUB_BUFFER = 10_000;

/** Where a bus's messages are dispatched, by channel: in process, or Redis pub/sub's (listener). */
interface Channels {
  addEventListener(topic: string, listener: (event: Event) => void): void;
  removeEventListener(topic: string, listener: (event: Event) => void): void;
}

/**
 * Starts pumping a channel of `channels` into `deliver`, each message after the last was delivered
 * (a queue of its own: graphql-yoga's createPubSub shares one buffer between every subscription,
 * so that a message waiting for one channel's reader was taken by another's); the returned
 * function stops it.
 */
function pump<T>(channels: Channels, topic: string, deliver: (value: T) => void): () => void {
  const events = new Repeater<T>((push, stop) => {
    const listener = (event: Event) => void push((event as CustomEvent<T>).detail);
    channels.addEventListener(topic, listener);
    void stop.then(() => channels.removeEventListener(topic, listener));
  }, new FixedBuffer(PUBSUB_BUFFER));
  void (async () => {
    for await (const event of events) deliver(event);
  })();
  return () => {
    void events.return();
  };
}

/** Each process polls for itself and delivers in process. */
export class LocalBus implements LiveBus {
  private readonly channels = new EventTarget();

  listen(source: string, deliver: (event: LiveEvent) => void): () => void {
    return pump(this.channels, source, deliver);
  }

  async claim(): Promise<Claim> {
    return { claim: 'kept' };
  }

  hold<T>(_source: string, poll: () => Promise<T>): Promise<T> {
    return poll();
  }

  async publish(source: string, events: LiveEvent[]): Promise<boolean> {
    for (const event of events) this.channels.dispatchEvent(new CustomEvent(source, { detail: event }));
    return true;
  }

  async release(): Promise<void> {}

  async holders(sources: readonly string[]): Promise<Record<string, string>> {
    return Object.fromEntries(sources.map((source) => [source, 'this instance']));
  }

  async close(): Promise<void> {}
}

/**
 * A message's place in its source's order: the epoch of the lease it was sent under, then a
 * counter of the messages sent under it (each event of a publish, then its state).
 *
 * An epoch is the fencing token of a lease, fixed when a process takes it: the wall clock then
 * (ms), raised above every epoch the process has seen of the source, and above the stored state's
 * (taking the lease again at once when that state is newer). It survives a Redis restart that
 * loses every key, which a Redis counter would not. The assumption: where Redis lost the state,
 * the instances' clocks differ by less than the previous holder held the lease (NTP keeps them
 * within milliseconds; a holder whose epoch a listener finds behind is replaced, as a stale lease,
 * by the next instance that judges it).
 */
interface Place {
  epoch: number;
  n: number;
  /** When it was written (ms since the epoch): what a process that has seen nothing newer goes by. */
  t: number;
}

/**
 * How long a message may be taken, from when it was written: a state's lifetime in Redis (three
 * leases), which no event it follows outlives. A process that has heard nothing of a source (just
 * started, or its order forgotten) has no order to drop a replay by, and goes by this alone.
 */
const lifetimeMs = (leaseMs: number) => 3 * leaseMs;

const after = (a: Place, b: Place | null): boolean =>
  b === null || a.epoch > b.epoch || (a.epoch === b.epoch && a.n > b.n);

/** A text with its place, as it is signed or sealed: `<epoch>.<n>.<t>.<text>`. */
const placed = (at: Place, text: string) => `${at.epoch}.${at.n}.${at.t}.${text}`;

/** The place and text of what `placed` made; null for anything else. */
function unplaced(text: string): { at: Place; text: string } | null {
  const found = /^(\d{1,16})\.(\d{1,16})\.(\d{1,16})\./.exec(text);
  if (!found) return null;
  const at = { epoch: Number(found[1]), n: Number(found[2]), t: Number(found[3]) };
  return { at, text: text.slice(found[0].length) };
}

/** What this process knows of one source's order. */
interface Order {
  /** The highest epoch seen of the source: events, states, leases (its own's too). */
  seen: number;
  /** The last event its listener accepted. */
  heard: Place | null;
  /** The newest event or state it has seen (heard, read, or stored itself). */
  known: Place | null;
  /** The state it last stored or took, while it polls: its own knowledge of what was delivered. */
  own: { at: Place; state: unknown } | null;
}

/**
 * The sources whose order a process remembers, the least recently used forgotten first: far more
 * than it listens to at once, so that a group that ended (a private source whose token was
 * refused) still knows what it heard when it starts again. One forgotten starts from nothing.
 */
const ORDERS_KEPT = 16_384;

class Orders {
  private readonly orders = new Map<string, Order>();

  of(source: string): Order {
    const order = this.orders.get(source) ?? { seen: 0, heard: null, known: null, own: null };
    this.orders.delete(source);
    this.orders.set(source, order);
    if (this.orders.size > ORDERS_KEPT) this.orders.delete(this.orders.keys().next().value as string);
    return order;
  }
}

/** This process's lease on a source: the value it last wrote, its epoch, the last counter sent under it. */
interface Lease {
  value: string;
  epoch: number;
  n: number;
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
/**
 * Publishes the events and stores the state only while the lease is the value the caller last wrote.
 * `publish`: PUBLISH, or SPUBLISH on a cluster (the channel in the lease's slot).
 */
const fencedPublish = (
  publish: 'PUBLISH' | 'SPUBLISH',
) => `if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
for i = 5, #ARGV do redis.call('${publish}', ARGV[2], ARGV[i]) end
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

/** One poller per source across the deployment, events through Redis pub/sub. */
export class RedisBus implements LiveBus {
  /**
   * This instance's name on the leases (and, for the others, on /readyz): random, so that it says
   * nothing of the host or the process (contract.md §7).
   */
  private readonly owner = randomBytes(8).toString('hex');
  /** Where the events of every source come in (redis.ts: one connection, or one per shard). */
  private readonly listener: RedisListener;
  /** The listener's channels: messages stay text until checked against their channel. */
  private readonly channels: Channels;
  private readonly publishScript: string;
  /** Where events go while this process is cut off from Redis: its own subscribers. */
  private readonly local = new LocalBus();
  /**
   * Sources whose last publish or claim did not answer (it may have run): the next claim reads
   * their state again.
   */
  private readonly unsure = new Set<string>();
  /**
   * The lease this process last sent for each source (recorded when sent, so that a renewal whose
   * answer is still on its way is known): only while the lease holds exactly its value does this
   * process renew, publish or release.
   */
  private readonly leases = new Map<string, Lease>();
  private readonly orders = new Orders();
  /** Told when a source's channel is heard again after it was lost (`listen`'s `resumed`), by channel. */
  private readonly resumers = new Map<string, Set<() => void>>();

  private readonly redis: RedisStore;
  private readonly values: RedisValues;
  /** The deployment's key prefix (versioned by schema and upstreams, named after the secret). */
  private readonly prefix: string;

  constructor(
    keyed: KeyedRedis,
    private readonly options: RedisBusOptions,
  ) {
    const redis = keyed.store;
    this.redis = redis;
    this.values = keyed.values;
    this.prefix = keyed.prefix;
    this.publishScript = fencedPublish(redis.sharded ? 'SPUBLISH' : 'PUBLISH');
    this.listener = redis.listener((channel) => {
      for (const resume of [...(this.resumers.get(channel) ?? [])]) resume();
    });
    this.channels = createRedisEventTarget({
      // Never used to publish: events are published by the fenced script.
      publishClient: redis.client as Redis,
      subscribeClient: this.listener.target,
      serializer: { stringify: String, parse: (message) => message },
    }) as Channels;
  }

  /** A source's lease, state or channel: one hash tag for the three, so one script reaches them. */
  private key(kind: 'lease' | 'state' | 'events', source: string): string {
    return `${this.prefix}live:${kind}:${hashTag(source)}`;
  }

  /** Private sources (read with one caller's token) are sealed in Redis; public ones signed. */
  private wrap(source: string, key: string, at: Place, text: string): string {
    const inner = placed(at, text);
    return source.startsWith('failed:') ? this.values.seal(key, inner) : this.values.sign(key, inner);
  }

  /** What `wrap` made of a text under `key`, or null (counted as `kind`) when it was not. */
  private unwrap(
    source: string,
    key: string,
    stored: string,
    kind: RedisRejectedKind,
  ): { at: Place; text: string } | null {
    const text = source.startsWith('failed:')
      ? this.values.open(key, stored, kind)
      : this.values.verify(key, stored, kind);
    if (text === null) return null;
    // Proven, yet not in the form this version writes: not a value it can take.
    const found = unplaced(text);
    if (found === null) this.values.rejected(kind);
    return found;
  }

  listen(source: string, deliver: (event: LiveEvent) => void, resumed?: () => void): () => void {
    const channel = this.key('events', source);
    const fromRedis = pump<string | null>(this.channels, channel, (message) => {
      const event = this.unwrap(source, channel, message ?? '', 'event');
      if (event !== null && this.fresh(source, event.at)) deliver(JSON.parse(event.text) as LiveEvent);
    });
    const fromHere = this.local.listen(source, deliver);
    const resume = resumed ? () => resumed() : null;
    if (resume) {
      const resumers = this.resumers.get(channel) ?? new Set();
      resumers.add(resume);
      this.resumers.set(channel, resumers);
    }
    return () => {
      fromRedis();
      fromHere();
      const resumers = this.resumers.get(channel);
      if (resume && resumers?.delete(resume) && resumers.size === 0) this.resumers.delete(channel);
    };
  }

  /** Whether a message written at `at` is past its lifetime (counted): taken by no process. */
  private expired(at: Place): boolean {
    if (Date.now() - at.t <= lifetimeMs(this.options.leaseMs)) return false;
    this.values.rejected('stale');
    return true;
  }

  /**
   * Whether an event heard at `at` is within its lifetime and newer than the last one accepted of
   * `source`; if so, it is the last.
   */
  private fresh(source: string, at: Place): boolean {
    if (this.expired(at)) return false;
    const order = this.orders.of(source);
    if (!after(at, order.heard)) {
      this.values.rejected('stale');
      return false;
    }
    order.heard = at;
    this.saw(order, at);
    return true;
  }

  /** Counts `at` as seen of a source's order. */
  private saw(order: Order, at: Place): void {
    order.seen = Math.max(order.seen, at.epoch);
    if (after(at, order.known)) order.known = at;
  }

  /** The source's lease and state keys, and the expiries the scripts take. */
  private leaseArgs(source: string) {
    const { leaseMs } = this.options;
    return [this.key('lease', source), this.key('state', source), leaseMs, lifetimeMs(leaseMs)] as const;
  }

  /**
   * A lease value of this process for `source` under `epoch`, signed, recorded as the one it last
   * sent; the counter goes on within an epoch and starts again with a new one.
   */
  private nextLease(source: string, epoch: number): string {
    const value = this.values.sign(
      this.key('lease', source),
      `${this.owner}.${Date.now() + this.options.leaseMs}.${epoch}`,
    );
    const last = this.leases.get(source);
    this.leases.set(source, { value, epoch, n: last?.epoch === epoch ? last.n : 0 });
    return value;
  }

  /** The epoch of a lease taken now: the clock, or above any epoch this process has seen of the source. */
  private newEpoch(source: string): number {
    return Math.max(Date.now(), this.orders.of(source).seen + 1);
  }

  /** The owner, expiry and epoch a lease value proves, or null (counted) when it proves nothing. */
  private leaseOf(source: string, stored: string): { owner: string; live: boolean; epoch: number } | null {
    const text = this.values.verify(this.key('lease', source), stored, 'lease');
    if (text === null) return null;
    const [owner, expires, epoch] = text.split('.');
    return { owner: owner as string, live: Number(expires) > Date.now(), epoch: Number(epoch) || 0 };
  }

  /**
   * Whether this process hears `source`'s channel (its subscriber connection is up): then events
   * of a holder elsewhere may reach it, and it must not deliver any of its own.
   */
  private listening(source: string): boolean {
    return this.listener.hears(this.key('events', source));
  }

  /**
   * One CLAIM, replacing `expected` (or nothing) with a lease under `epoch`; undefined when Redis
   * did not answer (the script may have run: the next claim reads the state again).
   */
  private async swap(source: string, expected: string | undefined, epoch: number, withState: boolean) {
    const [lease, state, leaseMs, stateTtlMs] = this.leaseArgs(source);
    const args = [this.nextLease(source, epoch), leaseMs, stateTtlMs, withState ? '1' : '0'];
    if (expected !== undefined) args.push(expected);
    const reply = (await this.redis
      .run((c) => c.eval(CLAIM, 2, lease, state, ...args))
      .catch(() => undefined)) as ClaimReply | undefined;
    if (reply === undefined) this.unsure.add(source);
    return reply;
  }

  async claim(source: string): Promise<Claim> {
    const reread = this.unsure.has(source);
    // Whether this process holds the lease is unknown when Redis does not answer. Fail closed: no
    // poll while a holder's events may still arrive here; cut off from Redis altogether, poll for
    // its own subscribers.
    const unknown = (): Claim => (this.listening(source) ? { claim: 'undecided' } : { claim: 'kept' });
    const mine = this.leases.get(source);
    // Kept, a lease keeps its epoch (unless a newer one was seen since: then it is not this
    // process's any more); taken, it starts a new one.
    const keep = mine !== undefined && mine.epoch >= this.orders.of(source).seen;
    let reply = await this.swap(source, mine?.value, keep ? mine.epoch : this.newEpoch(source), reread);
    if (reply === undefined) return unknown();
    if (reply[0] === 1 && !reread) return { claim: 'kept' };
    let took = reply[0] === 2;
    if (reply[0] === 0) {
      // Another value: a live lease of another instance stands, unless it is older than an epoch
      // seen here (a replay); anything else is replaced, by its exact bytes (so that a lease
      // another instance took meanwhile stands too).
      const holder = this.leaseOf(source, reply[1] as string);
      if (holder?.live && holder.owner !== this.owner && !this.staleLease(source, holder.epoch)) {
        return { claim: 'elsewhere' };
      }
      reply = await this.swap(source, reply[1] as string, this.newEpoch(source), true);
      if (reply === undefined) return unknown();
      if (reply[0] === 0) return { claim: 'elsewhere' };
      took = true;
    }
    return this.taken(source, reply[1] ?? null, took);
  }

  /** Whether a verified lease of another instance is older than an epoch this process has seen (counted). */
  private staleLease(source: string, epoch: number): boolean {
    const order = this.orders.of(source);
    if (epoch >= order.seen) {
      order.seen = epoch;
      return false;
    }
    this.values.rejected('stale');
    return true;
  }

  /**
   * This process holds the lease and `stored` is the state it read with it (`took`: it just took
   * the lease, rather than reading its own again). Its epoch first goes above the state's (and, for
   * a lease taken, above any it has seen): taken again at once when it is not. Then the state, if
   * it is not older than what this process has seen, or else its own (see the header).
   */
  private async taken(source: string, stored: string | null, took: boolean): Promise<Claim> {
    const order = this.orders.of(source);
    let state = this.stateOf(source, stored);
    const lease = this.leases.get(source) as Lease;
    const floor = took ? Math.max(order.seen, state?.at.epoch ?? 0) + 1 : (state?.at.epoch ?? 0);
    if (lease.epoch < floor) {
      const reply = await this.swap(source, lease.value, Math.max(Date.now(), floor), true);
      if (reply === undefined) return this.listening(source) ? { claim: 'undecided' } : { claim: 'kept' };
      if (reply[0] === 0) return { claim: 'elsewhere' };
      state = this.stateOf(source, reply[1] ?? null);
    }
    order.seen = Math.max(order.seen, (this.leases.get(source) as Lease).epoch);
    this.unsure.delete(source);
    if (state !== null && order.known !== null && after(order.known, state.at)) {
      this.values.rejected('stale');
      state = null;
    }
    if (state !== null) {
      this.saw(order, state.at);
      order.own = state;
    }
    // No state to take: this process's own, if nothing newer has been seen since it stored it.
    const own = order.own !== null && !after(order.known as Place, order.own.at) ? order.own : null;
    return { claim: 'taken', state: (state ?? own)?.state ?? null };
  }

  /** A stored state and its place: null when none was stored, or it does not verify (counted). */
  private stateOf(source: string, stored: string | null): { at: Place; state: unknown } | null {
    if (stored === null) return null;
    const found = this.unwrap(source, this.key('state', source), stored, 'state');
    if (found === null || this.expired(found.at)) return null;
    return { at: found.at, state: JSON.parse(found.text) };
  }

  /** Renews the lease while a poll runs, if it is still the value this process last wrote. */
  private async renew(source: string): Promise<void> {
    const mine = this.leases.get(source);
    if (mine === undefined) return;
    const [lease, state, leaseMs, stateTtlMs] = this.leaseArgs(source);
    const next = this.nextLease(source, mine.epoch);
    await this.redis
      .run((c) => c.eval(RENEW, 2, lease, state, mine.value, next, leaseMs, stateTtlMs))
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
    // Each message its own place, the state after the events it follows.
    const now = Date.now();
    const next = (): Place => ({ epoch: mine.epoch, n: ++mine.n, t: now });
    const wired = events.map((event) => this.wrap(source, channel, next(), JSON.stringify(event)));
    const stateAt = next();
    try {
      const published = (await this.redis.run((c) =>
        c.eval(
          this.publishScript,
          2,
          lease,
          stateKey,
          mine.value,
          channel,
          this.wrap(source, stateKey, stateAt, JSON.stringify(state)),
          stateTtlMs,
          ...wired,
        ),
      )) as number;
      if (published !== 1) return false;
      const order = this.orders.of(source);
      this.saw(order, stateAt);
      order.own = { at: stateAt, state };
      return true;
    } catch {
      // The script may have run, its events on their way to every subscriber: deliver nothing
      // here, and read the stored state again before the next poll. Only a process cut off from
      // Redis altogether delivers to its own subscribers (no holder's events can reach them).
      if (this.listening(source)) {
        this.unsure.add(source);
        return false;
      }
      return this.local.publish(source, events);
    }
  }

  async release(source: string): Promise<void> {
    this.unsure.delete(source);
    // What this process delivered is forgotten with its poller (poller.ts); what it heard is not.
    this.orders.of(source).own = null;
    const mine = this.leases.get(source);
    this.leases.delete(source);
    if (mine === undefined) return;
    await this.redis
      .run((c) => c.eval(RELEASE, 1, this.key('lease', source), mine.value))
      .catch(() => undefined);
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
    this.listener.close();
  }
}
