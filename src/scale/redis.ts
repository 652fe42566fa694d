import { EventEmitter } from 'node:events';
import {
  BrokenCircuitError,
  type CircuitBreakerPolicy,
  CircuitState,
  ConsecutiveBreaker,
  circuitBreaker,
  handleAll,
} from 'cockatiel';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import type { Logger } from 'pino';
import { redisCluster } from '../config.js';
import { type CircuitName, circuitName } from '../lib/circuit.js';
import { keyId, type RedisValues } from './redis-values.js';

/**
 * The gateway's one Redis connection (REDIS_URL: one server, or a Redis Cluster's seed nodes), for
 * what is shared between instances. Redis is an optimisation, never a dependency of an answer, so
 * every command:
 * - fails at once while the connection is down (no offline queue: nothing waits for a reconnect);
 * - has its own short budget (REDIS_TIMEOUT_MS, ioredis `commandTimeout`);
 * - goes through a circuit breaker, so that while Redis is slow or down callers skip it without
 *   even paying the timeout, and one trial command per `halfOpenAfterMs` finds out when it is back.
 * Callers treat any rejection as "no Redis this time" and serve from the upstreams. An outage is
 * logged once when it starts and once when it ends; each failed or skipped command is counted.
 * Nor is what it answers trusted: anyone who reaches Redis can write there, so every value read back
 * is proven with the deployment's key first (`KeyedRedis.values`, redis-values.ts).
 * On a cluster, keys that one script touches share a hash tag (`hashTag`), and listeners subscribe
 * per shard (`ShardedListener`); the rest of the gateway sees one `RedisStore` either way.
 */

export type RedisErrorKind = 'timeout' | 'error' | 'circuit_open';

export interface RedisStoreOptions {
  url: string;
  /** The budget of one command (REDIS_TIMEOUT_MS). */
  timeoutMs: number;
  logger: Logger;
  /** Told of each command that failed or was skipped (metrics). */
  onError?: (kind: RedisErrorKind) => void;
  /** Consecutive failures that open the breaker. */
  failureThreshold?: number;
  /** How long the open breaker skips Redis before one trial command. */
  halfOpenAfterMs?: number;
}

/**
 * The connection, the prefix of the deployment's keys (what else lives in Redis beside the shared
 * caches: `deploymentPrefix`), and how the values under them are signed, sealed and proven
 * (redis-values.ts): whatever is read back from Redis is proven before it is used.
 */
export interface KeyedRedis {
  store: RedisStore;
  prefix: string;
  values: RedisValues;
}

/**
 * The prefix of every key of a deployment: the shared caches' (format, schema, upstreams), then the
 * id of its secret (redis-values.ts), so that deployments with different secrets on one Redis, or
 * the two halves of a rotation, never touch each other's leases, states, caches or documents.
 */
export const deploymentPrefix = (base: string, secret: string): string => `${base}${keyId(secret)}:`;

/**
 * `{tag}`: a hash tag. Redis Cluster places a key by the text between its first `{` and the `}`
 * after it (the whole key without one), so keys that name the same tag share a slot, and one script
 * may touch them all (else CROSSSLOT). A single Redis is unaffected. The tag must hold no brace,
 * which would move it, and nothing before it in the key may hold one either (the deployment's
 * prefix holds none).
 */
export function hashTag(tag: string): string {
  if (/[{}]/.test(tag)) throw new Error(`a Redis hash tag cannot hold a brace: ${tag.slice(0, 80)}`);
  return `{${tag}}`;
}

/** The cluster slot of a key or shard channel: CRC16 (XMODEM) of its hash tag, or of it all, mod 16384. */
export function hashSlot(key: string): number {
  let bytes = Buffer.from(key);
  const open = bytes.indexOf(0x7b);
  const close = open < 0 ? -1 : bytes.indexOf(0x7d, open + 1);
  if (close > open + 1) bytes = bytes.subarray(open + 1, close);
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++)
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc & 0x3fff;
}

/** The connection commands go through: one server's, or a cluster's (which routes each by its key's slot). */
export type RedisClient = Redis | Cluster;

/**
 * Where a process listens for what others publish: SUBSCRIBE on a connection of its own (one
 * server), or SSUBSCRIBE on one connection per shard (a cluster).
 */
export interface RedisListener {
  /** What @graphql-yoga/redis-event-target subscribes through: `subscribe`, `unsubscribe`, `message`. */
  readonly target: Redis;
  /** Whether what is published on `channel` reaches this process now. */
  hears(channel: string): boolean;
  close(): void;
}

/** Reconnect for ever, backing off to one attempt every 2 s. */
const backoff = (times: number) => Math.min(50 * 2 ** Math.min(times, 6), 2_000);

/**
 * After a failover, a connection may still reach the old primary, now a replica, whose writes fail
 * with READONLY: reconnect (finding the new primary by name, or, on a cluster, by the new slots)
 * and send the command again. Nothing ran on the replica, so sending it again is safe.
 */
const reconnectOnError = (error: Error) => (error.message.startsWith('READONLY') ? 2 : false);

export class RedisStore {
  readonly client: RedisClient;
  /** On a cluster: live fan-out over sharded pub/sub (SSUBSCRIBE, SPUBLISH). */
  readonly sharded: boolean;
  private readonly breaker: CircuitBreakerPolicy;
  private readonly logger: Logger;
  private readonly onError: (kind: RedisErrorKind) => void;
  private readonly timeoutMs: number;
  /** What each of a cluster's node connections is made with (its subscribers' too). */
  private readonly nodeOptions: RedisOptions;
  private down = false;
  private closed = false;
  private connecting: Promise<void> | null = null;

  constructor(options: RedisStoreOptions) {
    this.logger = options.logger;
    this.timeoutMs = options.timeoutMs;
    this.onError = options.onError ?? (() => {});
    const cluster = redisCluster(options.url);
    this.sharded = cluster !== null;
    this.nodeOptions = {
      maxRetriesPerRequest: 1,
      autoResendUnfulfilledCommands: false,
      commandTimeout: options.timeoutMs,
      connectTimeout: Math.max(options.timeoutMs * 10, 1_000),
      reconnectOnError,
      ...(cluster?.auth ?? {}),
      ...(cluster?.tls ? { tls: {} } : {}),
    };
    this.client = cluster
      ? new Cluster(cluster.nodes, {
          lazyConnect: true,
          enableOfflineQueue: false,
          clusterRetryStrategy: backoff,
          slotsRefreshTimeout: this.nodeOptions.connectTimeout as number,
          // The slots read again every 5 s besides after a MOVED or a node lost, so that a failover
          // is followed even by a process that only listens to the shard.
          slotsRefreshInterval: 5_000,
          // MOVED and ASK are followed at once; TRYAGAIN, CLUSTERDOWN and a node gone (a failover)
          // after 100 ms with the slots read again: all within the command's own budget.
          retryDelayOnFailover: 100,
          retryDelayOnClusterDown: 100,
          retryDelayOnTryAgain: 100,
          // With TLS, nodes are reached by the names the cluster gives, which their certificates
          // carry (ElastiCache, Memorystore), not by the addresses those resolve to.
          ...(cluster.tls ? { dnsLookup: (address, lookedUp) => lookedUp(null, address) } : {}),
          // Node connections queue a command until they are up (they connect when first used);
          // the cluster itself fails a command at once while it is down.
          redisOptions: this.nodeOptions,
        })
      : new Redis(options.url, {
          ...this.nodeOptions,
          lazyConnect: true,
          // A command sent while disconnected fails at once instead of waiting in a queue.
          enableOfflineQueue: false,
          retryStrategy: backoff,
        });
    // Connection errors surface through the commands (and the outage log); ioredis only needs to
    // know they are handled.
    this.client.on('error', (error: Error) =>
      this.logger.debug({ err: error.message }, 'redis connection error'),
    );
    this.breaker = circuitBreaker(handleAll, {
      halfOpenAfter: options.halfOpenAfterMs ?? 1_000,
      breaker: new ConsecutiveBreaker(options.failureThreshold ?? 3),
    });
    // The outage is the breaker's open time: one line when it opens, one when it closes again
    // (a failed trial re-opens it without a second line).
    this.breaker.onBreak((reason) =>
      this.markDown('error' in reason ? (reason.error as Error).message : 'circuit isolated'),
    );
    this.breaker.onReset(() => this.markUp());
    this.client.connect().catch(() => {});
  }

  /**
   * A listener for what is published (the live bus's events), on connections of its own: a
   * connection in subscriber mode takes no other command. `resumed(channel)` is told each time a
   * channel's subscription is back after it was lost (not at the first): what was published
   * meanwhile has missed this process.
   */
  listener(resumed: (channel: string) => void): RedisListener {
    return this.client instanceof Cluster
      ? new ShardedListener(this.client, this.nodeOptions, resumed)
      : new ConnectionListener(this.client, resumed);
  }

  /** False from the breaker opening until a trial command succeeds. */
  get up(): boolean {
    return !this.down;
  }

  /** closed, open or half-open. */
  get circuit(): CircuitName {
    return circuitName(this.breaker.state);
  }

  /**
   * One command (or a pipeline) within its budget and through the breaker. Rejects when Redis is
   * down, slow or skipped; the caller goes on without it.
   */
  async run<T>(command: (client: RedisClient) => Promise<T>): Promise<T> {
    if (this.closed) throw new Error('redis store closed');
    try {
      // While the breaker's one trial is under way, cockatiel would make every other call wait for
      // it: they skip Redis at once instead, and only the trial pays its timeout.
      if (this.breaker.state === CircuitState.HalfOpen) throw new BrokenCircuitError();
      return await this.breaker.execute(async () => {
        await this.connected();
        return command(this.client);
      });
    } catch (error) {
      const kind: RedisErrorKind =
        error instanceof BrokenCircuitError
          ? 'circuit_open'
          : /timed out/i.test((error as Error).message)
            ? 'timeout'
            : 'error';
      this.onError(kind);
      if (kind !== 'circuit_open')
        this.logger.debug({ err: (error as Error).message }, 'redis command failed');
      throw error;
    }
  }

  /**
   * While a connection is being made (at start, or a reconnect under way), a command waits for it
   * within its own budget rather than failing at once for want of an offline queue.
   */
  private connected(): Promise<void> | undefined {
    const status = this.client.status;
    if (status !== 'connecting' && status !== 'connect') return;
    // One wait (two listeners) however many commands arrive meanwhile.
    this.connecting ??= new Promise<void>((resolve, reject) => {
      const done = (error?: Error) => {
        this.connecting = null;
        clearTimeout(timer);
        this.client.off('ready', onReady);
        this.client.off('close', onClose);
        if (error) reject(error);
        else resolve();
      };
      const onReady = () => done();
      const onClose = () => done(new Error('redis connection closed'));
      const timer = setTimeout(() => done(new Error('redis connection timed out')), this.timeoutMs);
      this.client.once('ready', onReady);
      this.client.once('close', onClose);
    });
    return this.connecting;
  }

  /** For /readyz: whether a PING answers now (through the breaker, so it costs nothing while open). */
  async ping(): Promise<boolean> {
    try {
      return (await this.run((c) => c.ping())) === 'PONG';
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    try {
      if (this.client.status === 'ready') await this.client.quit();
      else this.client.disconnect();
    } catch {
      this.client.disconnect();
    }
  }

  private markDown(reason: string): void {
    if (this.down) return;
    this.down = true;
    this.logger.warn(
      { redis: 'down', reason },
      'redis unavailable: shared caches skipped, answers come from the upstreams',
    );
  }

  private markUp(): void {
    if (!this.down) return;
    this.down = false;
    this.logger.info({ redis: 'up' }, 'redis available again: shared caches resumed');
  }
}

/**
 * One server: SUBSCRIBE on a second connection, which queues its SUBSCRIBEs until connected, sends
 * again one that a dropped connection left unanswered, and subscribes again after a reconnect
 * (ioredis' autoResubscribe). Its commands have no budget of their own: a SUBSCRIBE is no answer
 * anybody waits for.
 */
class ConnectionListener implements RedisListener {
  readonly target: Redis;
  private readonly connection: Redis;
  private readonly channels = new Set<string>();

  constructor(client: Redis, resumed: (channel: string) => void) {
    this.connection = client.duplicate({
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
    this.connection.on('error', () => {});
    // `ready` comes after ioredis has sent its SUBSCRIBEs again: from then on events reach this
    // process, and what was published while it was away can be read.
    let connected = false;
    let lost = false;
    this.connection.on('close', () => {
      lost = connected;
    });
    this.connection.on('ready', () => {
      const back = lost;
      connected = true;
      lost = false;
      if (back) for (const channel of [...this.channels]) resumed(channel);
    });
    // The event target leaves SUBSCRIBE and UNSUBSCRIBE unawaited: one that the connection's end
    // cuts short (an UNSUBSCRIBE while the process closes, a SUBSCRIBE while Redis is away) must not
    // be an unhandled rejection.
    const connection = this.connection;
    this.target = {
      on: (event: string, listener: (...args: unknown[]) => void) => connection.on(event, listener),
      subscribe: (channel: string) => {
        this.channels.add(channel);
        return connection.subscribe(channel).catch(() => undefined);
      },
      unsubscribe: (channel: string) => {
        this.channels.delete(channel);
        return connection.unsubscribe(channel).catch(() => undefined);
      },
    } as unknown as Redis;
  }

  hears(): boolean {
    return this.connection.status === 'ready';
  }

  close(): void {
    this.connection.disconnect();
  }
}

/** A shard's subscriber connection, and the channels placed on it. */
interface Shard {
  node: string;
  connection: Redis;
  channels: Set<string>;
  /** The channels whose SSUBSCRIBE it acknowledged since it last connected. */
  heard: Set<string>;
}

/**
 * A cluster: sharded pub/sub (SSUBSCRIBE), one connection per shard that serves a channel listened
 * to, to the primary that the cluster's slots name for it. It follows the shard:
 * - a connection that drops reconnects to its node (a restart) and subscribes its channels again;
 *   meanwhile the cluster reads its slots again, and each time it does (on a failover, a MOVED,
 *   and every few seconds) a channel whose slot another node now serves moves there;
 * - a SSUBSCRIBE answered MOVED, or a shard channel the node gives up (Redis then sends an
 *   unasked SUNSUBSCRIBE, which ioredis reports as an error), has the slots read again too; one
 *   refused otherwise is sent again a second later.
 * A channel is heard from its SSUBSCRIBE's answer until its connection drops; `resumed` is told
 * when one that was lost is heard again.
 */
class ShardedListener extends EventEmitter implements RedisListener {
  private readonly shards = new Map<string, Shard>();
  private readonly placed = new Map<string, Shard>();
  /** Channels heard before and lost since. */
  private readonly lost = new Set<string>();
  private readonly wanted = new Set<string>();
  private readonly replace = () => {
    for (const channel of this.wanted) this.place(channel);
  };
  private closed = false;

  constructor(
    private readonly cluster: Cluster,
    private readonly nodeOptions: RedisOptions,
    private readonly resumed: (channel: string) => void,
  ) {
    super();
    this.cluster.on('refresh', this.replace);
  }

  get target(): Redis {
    return this as unknown as Redis;
  }

  subscribe(channel: string): void {
    this.wanted.add(channel);
    this.place(channel);
  }

  unsubscribe(channel: string): void {
    this.wanted.delete(channel);
    this.lost.delete(channel);
    const shard = this.placed.get(channel);
    if (shard) this.leave(shard, channel);
  }

  hears(channel: string): boolean {
    const shard = this.placed.get(channel);
    return shard !== undefined && shard.connection.status === 'ready' && shard.heard.has(channel);
  }

  /**
   * Puts `channel` on the connection of the node that serves its slot, as the cluster last read its
   * slots (not read yet: the first read places it), and subscribes it there unless it is heard.
   */
  private place(channel: string): void {
    const node = this.cluster.slots[hashSlot(channel)]?.[0];
    if (this.closed || !this.wanted.has(channel) || node === undefined) return;
    let shard = this.placed.get(channel);
    if (shard?.node !== node) {
      if (shard) this.leave(shard, channel);
      shard = this.shards.get(node) ?? this.open(node);
      shard.channels.add(channel);
      this.placed.set(channel, shard);
    }
    if (shard.connection.status === 'ready' && !shard.heard.has(channel)) this.send(shard, channel);
  }

  /** SSUBSCRIBE; one refused (CLUSTERDOWN while the cluster heals, say) is asked again a second later. */
  private send(shard: Shard, channel: string): void {
    shard.connection.ssubscribe(channel).then(
      () => {
        if (this.placed.get(channel) !== shard || shard.connection.status !== 'ready') return;
        shard.heard.add(channel);
        if (this.lost.delete(channel)) this.resumed(channel);
      },
      () => {
        if (shard.connection.status === 'ready') setTimeout(() => this.place(channel), 1_000).unref();
      },
    );
  }

  private leave(shard: Shard, channel: string): void {
    this.placed.delete(channel);
    shard.channels.delete(channel);
    if (shard.heard.delete(channel) && this.wanted.has(channel)) this.lost.add(channel);
    if (shard.channels.size > 0) {
      shard.connection.sunsubscribe(channel).catch(() => undefined);
      return;
    }
    this.shards.delete(shard.node);
    shard.connection.disconnect();
  }

  private open(node: string): Shard {
    const colon = node.lastIndexOf(':');
    const connection = new Redis({
      ...this.nodeOptions,
      host: node.slice(0, colon),
      port: Number(node.slice(colon + 1)),
      // A SSUBSCRIBE is sent once connected (below), and again after each reconnect.
      enableOfflineQueue: false,
      enableReadyCheck: false,
      autoResubscribe: false,
      maxRetriesPerRequest: null,
      commandTimeout: undefined,
      retryStrategy: backoff,
    });
    const shard: Shard = { node, connection, channels: new Set(), heard: new Set() };
    this.shards.set(node, shard);
    connection.on('smessage', (channel: string, message: string) => this.emit('message', channel, message));
    connection.on('ready', () => {
      for (const channel of shard.channels) this.send(shard, channel);
    });
    connection.on('close', () => {
      for (const channel of shard.heard) this.lost.add(channel);
      shard.heard.clear();
      this.cluster.refreshSlotsCache();
    });
    connection.on('moved', () => this.cluster.refreshSlotsCache());
    connection.on('error', (error: Error) => {
      const dropped = /Last reply: sunsubscribe,([^,]+),/.exec(error.message)?.[1];
      if (dropped === undefined || !shard.heard.delete(dropped)) return;
      this.lost.add(dropped);
      this.cluster.refreshSlotsCache();
    });
    return shard;
  }

  close(): void {
    this.closed = true;
    this.cluster.off('refresh', this.replace);
    for (const shard of this.shards.values()) shard.connection.disconnect();
    this.shards.clear();
    this.placed.clear();
  }
}
