import type { IncomingMessage } from 'node:http';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import {
  type RateLimiterAbstract,
  RateLimiterMemory,
  RateLimiterRedis,
  RateLimiterRes,
} from 'rate-limiter-flexible';
import type { ScaleConfig } from '../../config.js';
import { GatewayError } from '../../errors.js';

/**
 * Per-client rate limits (contract.md §5): each client may spend RATE_LIMIT_POINTS of query cost
 * per RATE_LIMIT_WINDOW_MS. An operation costs the figure MAX_COMPLEXITY limits, priced once before
 * it runs and charged here by the pricing step of the pipeline (cost.ts). Over budget, the
 * operation is not executed: HTTP 429 with `retry-after`, one RATE_LIMITED error with
 * `extensions.retryAfterMs`, and no upstream call.
 *
 * Both transports put the node:http request (`req`) in the context, where the client's address is
 * read.
 *
 * Counters: rate-limiter-flexible, in process (RateLimiterMemory), or in Redis when REDIS_URL is
 * set (RateLimiterRedis: one budget across every instance and worker) with an in-process insurance
 * limiter that takes over, with the same budget per process, whenever a Redis command fails, times
 * out (REDIS_TIMEOUT_MS) or the connection is not up. Redis is never needed for an answer.
 */

export type RateLimitSettings = Pick<ScaleConfig, 'rateLimitPoints' | 'rateLimitWindowMs' | 'trustProxy'>;

/** The key of a request without a socket (an in-process `yoga.fetch`): one budget for all of them. */
const NO_SOCKET = 'unknown';

/** `::ffff:10.1.2.3` (IPv4 on a dual-stack socket) is 10.1.2.3: one client, one key. */
const normalize = (address: string) => {
  const trimmed = address.trim().toLowerCase();
  return trimmed.startsWith('::ffff:') && trimmed.includes('.') ? trimmed.slice(7) : trimmed;
};

/**
 * The client of a request: the socket's remote address, or, with TRUST_PROXY = n > 0, the address
 * n hops from the right of `x-forwarded-for`, as Express's `trust proxy` = n does: the n proxies
 * nearest the gateway are trusted (the socket's peer and the n - 1 rightmost entries), so the
 * client is the entry the farthest trusted proxy appended; with fewer entries than that, the
 * leftmost one. An entry a client wrote itself (left of those) is never used.
 */
export function clientAddress(
  socketAddress: string | undefined,
  forwardedFor: string | null | undefined,
  trustProxy: number,
): string {
  const socket = socketAddress ? normalize(socketAddress) : NO_SOCKET;
  if (trustProxy <= 0 || !forwardedFor) return socket;
  const hops = forwardedFor
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  if (hops.length === 0) return socket;
  // addresses[0] is the socket's peer, addresses[i] the i-th entry from the right.
  const index = Math.min(trustProxy, hops.length);
  return normalize(hops[hops.length - index] as string).slice(0, 100);
}

/** The node:http request of either transport: the fast path and Yoga's node adapter both pass `req`. */
export function clientOf(context: unknown, trustProxy: number): string {
  const { req, request } = (context ?? {}) as {
    req?: IncomingMessage;
    request?: { headers?: { get(name: string): string | null } };
  };
  const forwardedFor =
    trustProxy > 0
      ? (request?.headers?.get('x-forwarded-for') ?? (req?.headers['x-forwarded-for'] as string | undefined))
      : null;
  return clientAddress(req?.socket?.remoteAddress, forwardedFor, trustProxy);
}

export interface RateLimitEvents {
  logger: Logger;
  /** Told of each refused operation (metrics). */
  refused(): void;
}

/** The budget of every client, and how a request is charged against it. */
export class RateLimit {
  private readonly limiter: RateLimiterAbstract;

  /**
   * `redis`: the gateway's Redis connection (redis.ts), whose outages it logs; the counters live
   * there when it is given. Its commands fail at once while it is down and within REDIS_TIMEOUT_MS
   * otherwise, and the insurance limiter answers meanwhile.
   */
  constructor(
    private readonly settings: RateLimitSettings,
    private readonly events: RateLimitEvents,
    private readonly redis: Redis | null = null,
  ) {
    // rate-limiter-flexible counts windows in whole seconds (Redis expiries are in seconds).
    const duration = Math.max(1, Math.ceil(settings.rateLimitWindowMs / 1000));
    const points = settings.rateLimitPoints;
    const memory = new RateLimiterMemory({ points, duration, keyPrefix: 'rate' });
    this.limiter = redis
      ? new RateLimiterRedis({
          storeClient: redis,
          points,
          duration,
          // The counters of every instance and worker on this Redis; a new window layout, a new prefix.
          keyPrefix: 'chain-gateway:rate-limit:v1',
          rejectIfRedisNotReady: true,
          insuranceLimiter: memory,
        })
      : memory;
  }

  /** How many proxies' `x-forwarded-for` hops name the client (TRUST_PROXY). */
  get trustProxy(): number {
    return this.settings.trustProxy;
  }

  /**
   * Charges `cost` points to a client. Null when the client is within its budget; else how long
   * until its window ends (the points are charged either way, as the library counts them).
   */
  async charge(client: string, cost: number): Promise<{ retryAfterMs: number } | null> {
    try {
      await this.limiter.consume(client, cost);
      return null;
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) {
        this.events.refused();
        return { retryAfterMs: Math.max(1, Math.ceil(rejection.msBeforeNext)) };
      }
      // Neither Redis nor the insurance limiter answered (not expected): the request goes on.
      this.events.logger.warn(
        { err: (rejection as Error)?.message },
        'rate limiter failed; request let through',
      );
      return null;
    }
  }

  /** Where the counters are now: `redis` (shared), `process` (no REDIS_URL) or `insurance` (Redis not up). */
  get store(): 'redis' | 'process' | 'insurance' {
    if (!this.redis) return 'process';
    return this.redis.status === 'ready' ? 'redis' : 'insurance';
  }
}

/** The refusal: 429 with `retry-after` in whole seconds (Yoga takes both from `http`, then drops it). */
export function rateLimited(retryAfterMs: number): GatewayError {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return new GatewayError(
    `Rate limit reached: this client has spent its query budget for now. Retry in ${seconds} s.`,
    'RATE_LIMITED',
    { retryAfterMs, http: { status: 429, headers: { 'retry-after': String(seconds) } } },
  );
}
