import type { IncomingMessage } from 'node:http';
import { isIPv4, isIPv6 } from 'node:net';
import type { Redis } from 'ioredis';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
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
 * Counters: in process (BoundedWindows, below), or in Redis when REDIS_URL is set
 * (rate-limiter-flexible's RateLimiterRedis: one budget across every instance and worker), with the
 * in-process counters taking over, with the same budget per process, whenever a Redis command fails,
 * times out (REDIS_TIMEOUT_MS) or the connection is not up. Redis is never needed for an answer.
 */

export type RateLimitSettings = Pick<
  ScaleConfig,
  'rateLimitPoints' | 'rateLimitWindowMs' | 'trustProxy' | 'ipv6Prefix'
>;

/** How a request's client is named: which `x-forwarded-for` hop, and how much of an IPv6 address. */
export type ClientIdentity = Pick<ScaleConfig, 'trustProxy' | 'ipv6Prefix'>;

/** The key of a request without a socket (an in-process `yoga.fetch`): one budget for all of them. */
const NO_SOCKET = 'unknown';

/** The 8 groups of an IPv6 address (`::` expanded, a dotted IPv4 tail as two groups), or null. */
function ipv6Groups(address: string): number[] | null {
  let text = address;
  const dotted = /^(.*:)(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    if (!isIPv4(dotted[2] as string)) return null;
    const [a, b, c, d] = (dotted[2] as string).split('.').map(Number) as [number, number, number, number];
    text = `${dotted[1]}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const part = (half: string | undefined) => (half ? half.split(':') : []);
  const head = part(halves[0]);
  const tail = part(halves[1]);
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return null;
  const groups = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...tail];
  if (groups.some((group) => !/^[0-9a-f]{1,4}$/.test(group))) return null;
  return groups.map((group) => Number.parseInt(group, 16));
}

/** An IPv6 address's network of `prefix` bits, as `2001:db8:1:2::/64`. */
function ipv6Network(groups: number[], prefix: number): string {
  const masked = groups.map((group, i) => {
    const bits = Math.min(16, Math.max(0, prefix - 16 * i));
    return bits === 0 ? 0 : group & (0xffff << (16 - bits)) & 0xffff;
  });
  const kept = masked.slice(0, Math.ceil(prefix / 16)).map((group) => group.toString(16));
  return `${kept.join(':')}${kept.length < 8 ? '::' : ''}/${prefix}`;
}

/**
 * One client, one key: `::ffff:10.1.2.3` (IPv4 on a dual-stack socket) is 10.1.2.3, and an IPv6
 * address is its network of CLIENT_IPV6_PREFIX bits (a host is given a whole /64, so counting its
 * addresses one by one would give it 2^64 budgets). Anything that is no address is kept as written
 * (a proxy's entry), cut to 100 characters.
 */
export function clientKey(address: string, ipv6Prefix = 64): string {
  // A proxy may write the port too (`203.0.113.5:41234`, `[2001:db8::1]:443`): the client is the address.
  const bare = address
    .trim()
    .toLowerCase()
    .replace(/^\[([^\]]*)\](?::\d+)?$/, '$1')
    .replace(/^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/, '$1');
  const trimmed = bare.replace(/%.*$/, '');
  if (trimmed.startsWith('::ffff:') && isIPv4(trimmed.slice(7))) return trimmed.slice(7);
  if (!isIPv6(trimmed)) return trimmed.slice(0, 100);
  const groups = ipv6Groups(trimmed);
  return groups ? ipv6Network(groups, ipv6Prefix) : trimmed.slice(0, 100);
}

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
  identity: ClientIdentity,
): string {
  const { trustProxy, ipv6Prefix } = identity;
  const socket = socketAddress ? clientKey(socketAddress, ipv6Prefix) : NO_SOCKET;
  if (trustProxy <= 0 || !forwardedFor) return socket;
  const hops = forwardedFor
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  if (hops.length === 0) return socket;
  // addresses[0] is the socket's peer, addresses[i] the i-th entry from the right.
  const index = Math.min(trustProxy, hops.length);
  return clientKey(hops[hops.length - index] as string, ipv6Prefix);
}

/** The node:http request of either transport: the fast path and Yoga's node adapter both pass `req`. */
export function clientOf(context: unknown, identity: ClientIdentity): string {
  const { req, request } = (context ?? {}) as {
    req?: IncomingMessage;
    request?: { headers?: { get(name: string): string | null } };
  };
  const forwardedFor =
    identity.trustProxy > 0
      ? (request?.headers?.get('x-forwarded-for') ?? (req?.headers['x-forwarded-for'] as string | undefined))
      : null;
  return clientAddress(req?.socket?.remoteAddress, forwardedFor, identity);
}

/** The most clients whose windows the in-process limiter holds at once (about 100 bytes each). */
const MAX_TRACKED_CLIENTS = 100_000;

/** Where the clients that find the in-process table full are counted, together. */
const OVERFLOW = '\u0000overflow';

/**
 * Fixed windows per client, in process, in bounded memory. rate-limiter-flexible's memory store
 * keeps one entry and one timer per client for as long as its window lasts, with no bound, so a
 * flood of distinct addresses would grow it without end. Here windows are kept in a Map in the
 * order they started, so the expired ones are always at its front and are dropped as new ones
 * come; when MAX_TRACKED_CLIENTS windows are running, a new client is not given a fresh budget
 * (that would fail open) but shares one overflow budget with every other such client until
 * windows end.
 */
export class BoundedWindows {
  private readonly windows = new Map<string, { points: number; endsAt: number }>();

  constructor(
    private readonly points: number,
    private readonly windowMs: number,
    private readonly maxClients = MAX_TRACKED_CLIENTS,
  ) {}

  /** Charges `cost`: null within budget, else how long until the client's window ends. */
  charge(client: string, cost: number, now = Date.now()): { retryAfterMs: number } | null {
    for (const [key, window] of this.windows) {
      if (window.endsAt > now) break;
      this.windows.delete(key);
    }
    let key = client;
    let window = this.windows.get(key);
    if (!window && this.windows.size >= this.maxClients) {
      key = OVERFLOW;
      window = this.windows.get(key);
    }
    if (!window) {
      window = { points: 0, endsAt: now + this.windowMs };
      this.windows.set(key, window);
    }
    window.points += cost;
    return window.points > this.points ? { retryAfterMs: Math.max(1, window.endsAt - now) } : null;
  }

  get size(): number {
    return this.windows.size;
  }
}

export interface RateLimitEvents {
  /** Told of each refused operation (metrics). */
  refused(): void;
}

/** The budget of every client, and how a request is charged against it. */
export class RateLimit {
  /** The shared counters (REDIS_URL), or null: in process only. */
  private readonly shared: RateLimiterRedis | null;
  /** The in-process counters: the only ones without Redis, the insurance while Redis is not up. */
  private readonly local: BoundedWindows;

  /**
   * `redis`: the gateway's Redis connection (redis.ts), whose outages it logs; the counters live
   * there when it is given. Its commands fail at once while it is down and within REDIS_TIMEOUT_MS
   * otherwise, and the in-process counters answer meanwhile.
   */
  constructor(
    private readonly settings: RateLimitSettings,
    private readonly events: RateLimitEvents,
    private readonly redis: Redis | null = null,
  ) {
    const points = settings.rateLimitPoints;
    this.local = new BoundedWindows(points, settings.rateLimitWindowMs);
    this.shared = redis
      ? new RateLimiterRedis({
          storeClient: redis,
          points,
          // rate-limiter-flexible counts windows in whole seconds (Redis expiries are in seconds).
          duration: Math.max(1, Math.ceil(settings.rateLimitWindowMs / 1000)),
          // The counters of every instance and worker on this Redis; a new window layout, a new prefix.
          keyPrefix: 'chain-gateway:rate-limit:v1',
          rejectIfRedisNotReady: true,
        })
      : null;
  }

  /** How a request's client is named (TRUST_PROXY, CLIENT_IPV6_PREFIX). */
  get client(): ClientIdentity {
    return this.settings;
  }

  /**
   * Charges `cost` points to a client. Null when the client is within its budget; else how long
   * until its window ends (the points are charged either way). When Redis does not answer, the
   * in-process counters decide: a charge is never let through unchecked.
   */
  async charge(client: string, cost: number): Promise<{ retryAfterMs: number } | null> {
    let over = null;
    if (this.shared) {
      try {
        await this.shared.consume(client, cost);
      } catch (rejection) {
        over =
          rejection instanceof RateLimiterRes
            ? { retryAfterMs: Math.max(1, Math.ceil(rejection.msBeforeNext)) }
            : this.local.charge(client, cost);
      }
    } else over = this.local.charge(client, cost);
    if (over) this.events.refused();
    return over;
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
