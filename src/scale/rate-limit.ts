import type { IncomingMessage } from 'node:http';
import { isIPv4, isIPv6 } from 'node:net';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { ScaleConfig } from '../config.js';
import { GatewayError } from '../errors.js';
import { type Budget, traceOf } from '../ops/request-trace.js';
import { deploymentPrefix, type RedisClient } from './redis.js';

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

/**
 * Where a deployment's counters live in Redis: `chain-gateway:rate-limit:v1:<key id>`, named after
 * its secret by `deploymentPrefix` as every other key of it is, so that deployments with different
 * secrets on one Redis never spend or reset each other's budgets. Unlike the caches' keys, not
 * after the schema or the upstreams: a release that changes the schema keeps every client's window
 * (its old and new pods count together through the rollout, not twice the budget). No trailing
 * `:`, which rate-limiter-flexible adds before the client.
 */
export const counterPrefix = (secret: string): string =>
  deploymentPrefix('chain-gateway:rate-limit:v1:', secret).slice(0, -1);

/** A charge that went over: how long until the client's window ends. */
export interface Refusal {
  retryAfterMs: number;
}

const refusalOf = (budget: Budget): Refusal | null => (budget.over ? { retryAfterMs: budget.resetMs } : null);

/**
 * A time in whole seconds, rounded up: a window's length as Redis counts it (its expiries are in
 * seconds) and `RateLimit-Policy` says it, and a delay as `retry-after` and `reset` name it (the
 * same moment).
 */
const wholeSeconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

/** `RateLimit-Policy`'s value: `<points>;w=<window s>` (contract.md §8). */
const policyOf = (points: number, windowMs: number) => `${points};w=${wholeSeconds(windowMs)}`;

/**
 * Notes the budget a request's charge left on its trace, for its answer's RateLimit fields
 * (writeRateLimitHeaders) and cost extension: the lowest of the request's charges (a batch makes
 * several). Returns the charge's refusal, if any.
 */
function noted(context: unknown, budget: Budget): Refusal | null {
  const trace = traceOf((context as { request?: object } | null)?.request);
  if (trace && (trace.budget === null || budget.remaining <= trace.budget.remaining)) trace.budget = budget;
  return refusalOf(budget);
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
  private readonly policy: string;

  constructor(
    private readonly points: number,
    private readonly windowMs: number,
    private readonly maxClients = MAX_TRACKED_CLIENTS,
  ) {
    this.policy = policyOf(points, windowMs);
  }

  /** Charges `cost`: null within budget, else how long until the client's window ends. */
  charge(client: string, cost: number, now = Date.now()): Refusal | null {
    return refusalOf(this.spend(client, cost, now));
  }

  /** Charges `cost`, and tells what is left of the client's window (or of the overflow budget it shares). */
  spend(client: string, cost: number, now = Date.now()): Budget {
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
    return {
      over: window.points > this.points,
      remaining: Math.max(0, this.points - window.points),
      resetMs: Math.max(1, window.endsAt - now),
      limit: this.points,
      policy: this.policy,
    };
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
  /** `RateLimit-Policy`, for the charges Redis counts. */
  private readonly policy: string;

  /** The gateway's Redis connection (redis.ts), whose outages it logs; null: none. */
  private readonly redis: RedisClient | null;

  /**
   * `shared`: the gateway's Redis connection, and the deployment's secret whose key id names the
   * counters there (`counterPrefix`). Its commands fail at once while it is down and within
   * REDIS_TIMEOUT_MS otherwise, and the in-process counters answer meanwhile.
   */
  constructor(
    private readonly settings: RateLimitSettings,
    private readonly events: RateLimitEvents,
    shared: { client: RedisClient; secret: string } | null = null,
  ) {
    const points = settings.rateLimitPoints;
    this.policy = policyOf(points, settings.rateLimitWindowMs);
    this.local = new BoundedWindows(points, settings.rateLimitWindowMs);
    this.redis = shared?.client ?? null;
    this.shared = shared
      ? new RateLimiterRedis({
          storeClient: shared.client,
          points,
          // rate-limiter-flexible counts windows in whole seconds (Redis expiries are in seconds).
          duration: wholeSeconds(settings.rateLimitWindowMs),
          // The counters of every instance and worker of the deployment; a new window layout, a
          // new prefix. Each command touches one counter, so on a cluster a key needs no hash tag:
          // hashed whole, the clients' counters spread over every shard.
          keyPrefix: counterPrefix(shared.secret),
          rejectIfRedisNotReady: true,
        })
      : null;
  }

  /** How a request's client is named (TRUST_PROXY, CLIENT_IPV6_PREFIX). */
  get client(): ClientIdentity {
    return this.settings;
  }

  /**
   * Charges `cost` points to a client: null when the client is within its budget, else how long
   * until its window ends (the points are charged either way).
   */
  async charge(client: string, cost: number): Promise<Refusal | null> {
    return refusalOf(await this.spend(client, cost));
  }

  /**
   * Charges the operation of a request to its client, and notes the budget it leaves on the
   * request's trace (see `noted`): null within budget, else the refusal. Without Redis it answers
   * at once, not in a promise: a request charged in process waits for nothing.
   */
  chargeRequest(context: unknown, cost: number): Refusal | null | Promise<Refusal | null> {
    const budget = this.spend(clientOf(context, this.settings), cost);
    return budget instanceof Promise ? budget.then((spent) => noted(context, spent)) : noted(context, budget);
  }

  /**
   * Charges `cost` points to a client, and tells what is left of its window: at once in process,
   * in a promise through Redis. When Redis does not answer, the in-process counters decide: a
   * charge is never let through unchecked.
   */
  spend(client: string, cost: number): Budget | Promise<Budget> {
    if (!this.shared) return this.counted(this.local.spend(client, cost));
    return this.shared.consume(client, cost).then(
      (res) => this.counted(this.fromRedis(res, false)),
      (rejection: unknown) =>
        this.counted(
          rejection instanceof RateLimiterRes
            ? this.fromRedis(rejection, true)
            : this.local.spend(client, cost),
        ),
    );
  }

  /** A charge as it stands: a refused one is counted (metrics). */
  private counted(budget: Budget): Budget {
    if (budget.over) this.events.refused();
    return budget;
  }

  /** rate-limiter-flexible's answer (a rejection when over) as what the charge left. */
  private fromRedis(res: RateLimiterRes, over: boolean): Budget {
    return {
      over,
      remaining: res.remainingPoints,
      resetMs: Math.max(1, Math.ceil(res.msBeforeNext)),
      limit: this.settings.rateLimitPoints,
      policy: this.policy,
    };
  }

  /** Where the counters are now: `redis` (shared), `process` (no REDIS_URL) or `insurance` (Redis not up). */
  get store(): 'redis' | 'process' | 'insurance' {
    if (!this.redis) return 'process';
    return this.redis.status === 'ready' ? 'redis' : 'insurance';
  }
}

/**
 * The IETF httpapi draft's fields for an answer the rate limit counted (draft-ietf-httpapi-
 * ratelimit-headers-07, the revision contract.md §8 takes the policy's shape from), written into
 * `headers`: `RateLimit-Policy: 30000;w=60` (the points of a window of 60 s) and `RateLimit:
 * limit=30000, remaining=28390, reset=42` (the points left after this answer, and the seconds
 * until they come back; on a 429 the moment `retry-after` names).
 */
export function writeRateLimitHeaders(budget: Budget, headers: Record<string, string>): void {
  headers['ratelimit-policy'] = budget.policy;
  headers.ratelimit = `limit=${budget.limit}, remaining=${budget.remaining}, reset=${wholeSeconds(budget.resetMs)}`;
}

/** The budget as the cost extension tells it (docs/graph.md): the same figures as `RateLimit`. */
export const budgetOf = (budget: Budget) => ({
  limit: budget.limit,
  remaining: budget.remaining,
  reset: wholeSeconds(budget.resetMs),
});

/** The refusal: 429 with `retry-after` in whole seconds (Yoga takes both from `http`, then drops it). */
export function rateLimited(retryAfterMs: number): GatewayError {
  const seconds = wholeSeconds(retryAfterMs);
  return new GatewayError(
    `Rate limit reached: this client has spent its query budget for now. Retry in ${seconds} s.`,
    'RATE_LIMITED',
    { retryAfterMs, http: { status: 429, headers: { 'retry-after': String(seconds) } } },
  );
}
