import {
  BrokenCircuitError,
  type CircuitBreakerPolicy,
  CircuitState,
  ConsecutiveBreaker,
  circuitBreaker,
  handleAll,
} from 'cockatiel';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { type CircuitName, circuitName } from '../lib/circuit.js';
import type { RedisValues } from './redis-values.js';

/**
 * The gateway's one Redis connection (REDIS_URL), for what is shared between instances. Redis is an
 * optimisation, never a dependency of an answer, so every command:
 * - fails at once while the connection is down (no offline queue: nothing waits for a reconnect);
 * - has its own short budget (REDIS_TIMEOUT_MS, ioredis `commandTimeout`);
 * - goes through a circuit breaker, so that while Redis is slow or down callers skip it without
 *   even paying the timeout, and one trial command per `halfOpenAfterMs` finds out when it is back.
 * Callers treat any rejection as "no Redis this time" and serve from the upstreams. An outage is
 * logged once when it starts and once when it ends; each failed or skipped command is counted.
 * Nor is what it answers trusted: anyone who reaches Redis can write there, so every value read back
 * is proven with the deployment's key first (`KeyedRedis.values`, redis-values.ts).
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
 * caches), and how the values under them are signed, sealed and proven (redis-values.ts): whatever
 * is read back from Redis is proven before it is used.
 */
export interface KeyedRedis {
  store: RedisStore;
  prefix: string;
  values: RedisValues;
}

export class RedisStore {
  readonly client: Redis;
  private readonly breaker: CircuitBreakerPolicy;
  private readonly logger: Logger;
  private readonly onError: (kind: RedisErrorKind) => void;
  private readonly timeoutMs: number;
  private down = false;
  private closed = false;
  private connecting: Promise<void> | null = null;

  constructor(options: RedisStoreOptions) {
    this.logger = options.logger;
    this.timeoutMs = options.timeoutMs;
    this.onError = options.onError ?? (() => {});
    this.client = new Redis(options.url, {
      lazyConnect: true,
      // A command sent while disconnected fails at once instead of waiting in a queue.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      autoResendUnfulfilledCommands: false,
      commandTimeout: options.timeoutMs,
      connectTimeout: Math.max(options.timeoutMs * 10, 1_000),
      // Reconnect for ever, backing off to one attempt every 2 s.
      retryStrategy: (times) => Math.min(50 * 2 ** Math.min(times, 6), 2_000),
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
  async run<T>(command: (client: Redis) => Promise<T>): Promise<T> {
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
