import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import type { Logger } from 'pino';
import type { UpstreamName } from './errors.js';

/**
 * The only reader of process.env: every setting of the gateway and the devnet, parsed, checked and
 * frozen once at start. A bad value stops the process with a message naming the variable.
 */

export class ConfigError extends Error {}

/** The one path GraphQL is served on, over HTTP and WebSocket (contract.md §1). */
export const GRAPHQL_PATH = '/graphql';

/** package.json's version: the gateway's release, in `build_info` and the start banner. */
export const PACKAGE_VERSION: string = JSON.parse(
  readFileSync(new URL('../package.json', import.meta.url), 'utf8'),
).version;

/** What a process runs: its version, and BUILD_REVISION (the image's source revision; `unknown` unset). */
export interface BuildInfo {
  version: string;
  revision: string;
}

type Env = Record<string, string | undefined>;

/** The base URL of each upstream service (SCAN_URL, EXPLORER_URL, STAKE_URL). */
export type UpstreamUrls = Readonly<Record<UpstreamName, string>>;

export type DevnetDialect = 'spec' | 'kratos';

export interface DevnetConfig {
  seed: string;
  /** DEVNET_HOST: where the three services listen (0.0.0.0 for other containers to reach them). */
  host: string;
  token: string;
  ports: { scan: number; explorer: number; stake: number };
  /** `spec`: upstream-api.md's snake_case; `kratos`: the production services' protojson (real-upstreams.md). */
  dialect: DevnetDialect;
  /** Staking answers wrapped in the explorer's `{ code, message, data }` envelope. */
  stakeEnvelope: boolean;
  /** The explorer's envelope `code` on success (0, or 200 as some environments answer). */
  explorerSuccessCode: number;
  /** Account prefix of the staking service's bech32 addresses (`<prefix>1…`, `<prefix>valoper1…`). */
  bech32Prefix: string;
  /** DEVNET_BLOCK_MS: a new block every so many ms; 0: the chain stands still. */
  blockIntervalMs: number;
}

export interface Config {
  host: string;
  port: number;
  /**
   * METRICS_PORT: where `/metrics` is served, on HOST, alone (and the public port answers 404 for
   * it); 0 is any free port. 9464 (OpenTelemetry's Prometheus port) in production; null otherwise:
   * `/metrics` on the public port.
   */
  metricsPort: number | null;
  /**
   * null: no upstream configured, the gateway runs on the embedded devnet (outside production, or
   * asked for by name with DEVNET=true).
   */
  upstreams: UpstreamUrls | null;
  upstreamTimeoutMs: number;
  /** Connections kept per upstream origin: also its cap on calls in flight. */
  upstreamConnections: number;
  /** Consecutive upstream failures that open its circuit. */
  circuitFailureThreshold: number;
  /** How long an open circuit waits before a trial call. */
  circuitHalfOpenMs: number;
  production: boolean;
  build: BuildInfo;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  introspection: boolean;
  graphiql: boolean;
  fieldSuggestions: boolean;
  /** Server-side token for explorer reads of callers that send none. */
  explorerToken: string | null;
  /** How long the public validator list may be reused across requests; 0 turns the cache off. */
  validatorCacheTtlMs: number;
  /** How long whole responses of public, cacheable queries are reused; 0 turns the cache off. */
  responseCacheTtlMs: number;
  /** The most answers the response cache keeps (RESPONSE_CACHE_ENTRIES). */
  responseCacheEntries: number;
  limits: Limits;
  documents: DocumentCacheConfig;
  server: ServerLimits;
  /** A persisted-documents manifest (hash → document): when set, only those operations run. */
  persistedOperationsFile: string | null;
  /**
   * Automatic persisted queries kept in process (APQ_ENTRIES documents, APQ_BYTES bytes at most) and,
   * with REDIS_URL, in Redis (APQ_REDIS_BYTES bytes at most for the whole deployment).
   */
  apq: { maxEntries: number; maxBytes: number; redisBytes: number };
  /**
   * CURSOR_SECRET: signs page cursors and keys the HMACs that stand for a caller's token in Redis
   * (every instance of a deployment must share it); null (the devnet, or real upstreams outside
   * production): a secret derived from the deployment's upstreams.
   */
  cursorSecret: string | null;
  /**
   * CURSOR_SECRET_PREVIOUS: during a rotation, the secret being replaced. What it signed (cursors,
   * values in Redis) is still accepted; nothing new is signed with it. Only beside CURSOR_SECRET.
   */
  cursorSecretPrevious: string | null;
  dialects: DialectConfig;
  cors: CorsConfig;
  tracing: TracingConfig;
  scale: ScaleConfig;
  live: LiveConfig;
  devnet: DevnetConfig;
}

/** The settings one gateway instance is built from (gateway.ts): what it reads of the configuration. */
export type GatewaySettings = Pick<
  Config,
  | 'upstreamTimeoutMs'
  | 'upstreamConnections'
  | 'circuitFailureThreshold'
  | 'circuitHalfOpenMs'
  | 'introspection'
  | 'graphiql'
  | 'fieldSuggestions'
  | 'explorerToken'
  | 'validatorCacheTtlMs'
  | 'responseCacheTtlMs'
  | 'responseCacheEntries'
  | 'limits'
  | 'documents'
  | 'dialects'
  | 'cors'
  | 'scale'
  | 'live'
  | 'cursorSecret'
  | 'cursorSecretPrevious'
  | 'apq'
  | 'build'
>;

export interface GatewayOptions extends GatewaySettings {
  upstreamUrls: UpstreamUrls;
  /** Where request lines go; silent when not given (tests pass their own). */
  logger?: Logger;
  /** Persisted operations (id → document): when given, no other operation runs. */
  persistedOperations?: Readonly<Record<string, string>> | null;
  /** Shown in GraphiQL's headers example (the devnet's token in devnet mode). */
  exampleToken?: string;
  /** Variables of GraphiQL's tabs, by operation name (the devnet's in devnet mode; else `{}`). */
  exampleVariables?: Readonly<Record<string, unknown>>;
  /** What `/metrics` serves instead of this gateway's registry (a cluster worker: every worker's). */
  scrapeMetrics?: () => Promise<string>;
  /** METRICS_PORT: when set, `/metrics` is served there (main.ts), and the public port answers 404 for it. */
  metricsPort?: number | null;
}

/** Live updates (contract.md §6): subscriptions over SSE, fed by polling the upstreams. */
export interface LiveConfig {
  /** LIVE_POLL_MS: from the end of one poll of a source to the start of the next. */
  pollMs: number;
  /** LIVE_LEASE_MS: with REDIS_URL, how long a poller's lease lives unless renewed. */
  leaseMs: number;
  /** LIVE_BACKLOG: events waiting for one subscriber before it is cut off. */
  backlog: number;
  /** LIVE_CATCH_UP: the most new blocks one poll delivers (the rest on the next). */
  catchUp: number;
  /** MAX_SUBSCRIPTIONS: streams open per process. */
  maxSubscriptions: number;
  /** MAX_SUBSCRIPTIONS_PER_CLIENT: streams open per client (the rate limit's client identity). */
  maxSubscriptionsPerClient: number;
  /**
   * MAX_STREAM_AGE_MS: an SSE stream or a WebSocket is ended at an age drawn in [0.8 × it, it], for
   * its client to reconnect (so that streams spread over the pods after a rollout); 0: never.
   */
  maxStreamAgeMs: number;
  /** MIN_CHAIN_HEIGHT_WAIT_MS: the longest a `Min-Chain-Height` request waits for the chain's head. */
  minChainHeightWaitMs: number;
  /**
   * CHAIN_HEAD_HOLD_MS: how long a public latest-state answer kept (or answered) by the response
   * cache keeps the block poller running for the head it is renewed by; 0: never started for it.
   */
  headHoldMs: number;
}

/**
 * The prepared documents (src/graphql/pipeline/): every document's parse, validation,
 * compiled plan and derived facts, kept in one LRU bounded in entries and in (estimated) bytes.
 */
export interface DocumentCacheConfig {
  /** DOCUMENT_CACHE_ENTRIES: the most documents kept. */
  maxEntries: number;
  /** DOCUMENT_CACHE_BYTES: the most (estimated) bytes of documents and compiled plans kept. */
  maxBytes: number;
  /** DOCUMENT_KEEP_AFTER: a document is kept from its Nth use (the uses before leave only its text). */
  keepAfter: number;
  /** COMPILE_AFTER: a query or the mutation is compiled by graphql-jit on its Nth execution within COMPILE_WINDOW_MS; 0 never compiles. */
  compileAfter: number;
  compileWindowMs: number;
}

/** What node:http allows one client: the limits a reverse proxy in front would set. */
export interface ServerLimits {
  /** HEADERS_TIMEOUT_MS: a request's headers must arrive complete within it. */
  headersTimeoutMs: number;
  /** REQUEST_TIMEOUT_MS: a whole request (headers and body) must arrive within it (receiving only, not answering). */
  requestTimeoutMs: number;
  /** KEEP_ALIVE_TIMEOUT_MS: an idle keep-alive connection is closed after it. */
  keepAliveTimeoutMs: number;
  /** MAX_CONNECTIONS: open sockets per process; beyond it a new connection is closed at once. */
  maxConnections: number;
  /**
   * MAX_INFLIGHT_BODY_BYTES: bytes of request bodies admitted and still arriving, per process (each
   * body counted at its declared length, one of unknown length at MAX_REQUEST_BYTES); a request
   * whose body would go beyond is answered 503 before anything reads it (src/http/intake.ts).
   */
  maxInflightBodyBytes: number;
  /**
   * MAX_INFLIGHT_BODY_BYTES_PER_CLIENT: the share of MAX_INFLIGHT_BODY_BYTES one client (the rate
   * limit's: an IPv4 address or an IPv6 /64) may hold; a request whose body would go beyond is
   * answered 429 before anything reads it (src/http/intake.ts).
   */
  maxInflightBodyBytesPerClient: number;
  /**
   * MAX_CONNECTIONS_PER_CLIENT: a client's open connections (TRUST_PROXY = 0), or its requests in
   * flight, streams included (TRUST_PROXY > 0, where every socket is a proxy's); beyond it, 429.
   */
  maxConnectionsPerClient: number;
  /** MIN_BODY_RATE: bytes a second a request body must keep arriving at once BODY_TIMEOUT_MS is spent. */
  minBodyRate: number;
  /**
   * BODY_TIMEOUT_MS: a request body's allowance. Every MIN_BODY_RATE bytes that arrive earn a second
   * more, but never more than BODY_TIMEOUT_MS ahead; a body whose allowance runs out is cut, 408.
   */
  bodyTimeoutMs: number;
  /** BODY_FIRST_BYTE_MS: a request body of which nothing has arrived within it is cut, 408. */
  bodyFirstByteMs: number;
  /**
   * SHUTDOWN_DELAY_MS: after SIGTERM, how long the process keeps serving (with `/readyz` at 503, so
   * that load balancers stop sending it requests) before it completes its streams and drains.
   */
  shutdownDelayMs: number;
}

/** Beyond one process (issue 14): workers, caches shared through Redis, per-client rate limits. */
export interface ScaleConfig {
  /** Worker processes sharing the port (WORKERS; `auto` = the machine's available parallelism). */
  workers: number;
  /** REDIS_URL: the shared response cache, validator list and rate-limit counters; null = in process. */
  redisUrl: string | null;
  /** The budget of one Redis command (REDIS_TIMEOUT_MS): beyond it the gateway goes on without Redis. */
  redisTimeoutMs: number;
  /** Cost points a client may spend per window (RATE_LIMIT_POINTS); 0 turns rate limiting off. */
  rateLimitPoints: number;
  /** The rate-limit window (RATE_LIMIT_WINDOW_MS). */
  rateLimitWindowMs: number;
  /** How many proxies in front of the gateway to trust in `x-forwarded-for` (TRUST_PROXY); 0 = the socket's address. */
  trustProxy: number;
  /** CLIENT_IPV6_PREFIX: an IPv6 client is its network of this many leading bits (a host holds a /64). */
  ipv6Prefix: number;
}

/**
 * OpenTelemetry tracing, by the standard variables: on when an OTLP endpoint is set
 * (`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) and the SDK is not
 * disabled. The exporter reads its own endpoint, headers and timeout; the SDK its sampler.
 */
export interface TracingConfig {
  enabled: boolean;
  protocol: 'http/protobuf' | 'http/json';
  serviceName: string;
}

/** Which browser origins may read the gateway's answers (contract.md §5, Browsers). */
export interface CorsConfig {
  /** Exact origins (`https://explorer.example`) from CORS_ORIGINS. */
  origins: readonly string[];
  /** Any `http://localhost:<port>` or `http://127.0.0.1:<port>`: the devnet default without CORS_ORIGINS. */
  localhost: boolean;
  /** Request headers a page may send besides the default ones (CORS_ALLOW_HEADERS), lower-cased; none when absent. */
  allowHeaders?: readonly string[];
}

/** What the gateway needs to read both upstream dialects (contract.md §5, real-upstreams.md). */
export interface DialectConfig {
  /** Explorer envelope `code` values that mean success. */
  explorerSuccessCodes: readonly number[];
  /** The staking service's bech32 account prefix; null: learned from what staking sends. */
  bech32Prefix: string | null;
  /** Name of the search services' text parameter. */
  scanQueryParam: string;
  /** The most pages of the validator list read for one whole list; a longer list is an upstream error. */
  validatorMaxPages: number;
}

/** What one GraphQL request may ask for; everything beyond is refused before any upstream call. */
export interface Limits {
  /** Request body size in bytes (413 beyond). */
  requestBytes: number;
  depth: number;
  aliases: number;
  tokens: number;
  directives: number;
  rootFields: number;
  /** Query cost: fields that call an upstream cost 10, paged fields multiply by pageSize. */
  complexity: number;
  /** Operations per batched JSON array; 0 refuses batches. */
  batch: number;
  /** Nesting of objects and lists in a request's variables (MAX_VARIABLES_DEPTH). */
  variablesDepth: number;
  /** Values (object fields and list items, counted through nesting) in a request's variables. */
  variableValues: number;
  /**
   * MAX_OPERATIONS_PER_SOCKET: queries and mutations in flight on one WebSocket (its subscriptions
   * count against MAX_SUBSCRIPTIONS_PER_CLIENT instead); one more is refused, RATE_LIMITED.
   */
  operationsPerSocket: number;
}

function int(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
  }
  return value;
}

function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name]?.toLowerCase();
  if (raw === undefined || raw === '') return fallback;
  if (['1', 'true', 'yes', 'on'].includes(raw)) return true;
  if (['0', 'false', 'no', 'off'].includes(raw)) return false;
  throw new ConfigError(`${name} must be true or false, got "${env[name]}"`);
}

function url(env: Env, name: string): string {
  const raw = env[name] as string;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(`${name} is not a URL: "${raw}"`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new ConfigError(`${name} must be an http or https URL`);
  }
  return raw.replace(/\/+$/, '');
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

function logLevel(env: Env): Config['logLevel'] {
  const raw = env.LOG_LEVEL || 'info';
  if (!(LOG_LEVELS as readonly string[]).includes(raw)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${raw}"`);
  }
  return raw as Config['logLevel'];
}

/** A bech32 human-readable part: lowercase letters and digits, starting with a letter. */
function prefix(env: Env, name: string, fallback: string): string;
function prefix(env: Env, name: string, fallback: null): string | null;
function prefix(env: Env, name: string, fallback: string | null): string | null {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^[a-z][a-z0-9]{0,19}$/.test(raw)) {
    throw new ConfigError(`${name} must be a lowercase bech32 prefix such as "biya", got "${raw}"`);
  }
  return raw;
}

function codes(env: Env, name: string, fallback: readonly number[]): readonly number[] {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const parts = raw.split(',').map((part) => part.trim());
  if (parts.some((part) => !/^-?\d{1,10}$/.test(part))) {
    throw new ConfigError(`${name} must be a comma-separated list of integers, got "${raw}"`);
  }
  return Object.freeze(parts.map(Number));
}

function queryParam(env: Env): string {
  const raw = env.SCAN_QUERY_PARAM || 'q';
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(raw)) {
    throw new ConfigError(`SCAN_QUERY_PARAM must be a query parameter name, got "${raw}"`);
  }
  return raw;
}

function origins(env: Env): readonly string[] {
  const raw = env.CORS_ORIGINS;
  if (raw === undefined || raw.trim() === '') return Object.freeze([]);
  return Object.freeze(
    raw.split(',').map((part) => {
      const origin = part.trim();
      let parsed: URL | null = null;
      try {
        parsed = new URL(origin);
      } catch {}
      if (!parsed || !/^https?:$/.test(parsed.protocol) || parsed.origin !== origin) {
        throw new ConfigError(
          `CORS_ORIGINS must list exact origins such as https://explorer.example (scheme, host and port only), got "${origin}"`,
        );
      }
      return origin;
    }),
  );
}

/** A header name: an RFC 7230 token. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/;

function allowHeaders(env: Env): readonly string[] {
  const raw = env.CORS_ALLOW_HEADERS;
  if (raw === undefined || raw.trim() === '') return Object.freeze([]);
  return Object.freeze(
    raw.split(',').map((part) => {
      const name = part.trim();
      if (!HEADER_NAME.test(name)) {
        throw new ConfigError(
          `CORS_ALLOW_HEADERS must list header names such as x-app-build, separated by commas, got "${name}"`,
        );
      }
      return name.toLowerCase();
    }),
  );
}

function tracing(env: Env): TracingConfig {
  const protocol =
    env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL || 'http/protobuf';
  if (protocol !== 'http/protobuf' && protocol !== 'http/json') {
    throw new ConfigError(
      `OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or http/json (grpc is not shipped), got "${protocol}"`,
    );
  }
  return Object.freeze({
    enabled:
      Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) &&
      env.OTEL_SDK_DISABLED?.toLowerCase() !== 'true',
    protocol,
    serviceName: env.OTEL_SERVICE_NAME || 'chain-gateway',
  });
}

function live(env: Env): LiveConfig {
  const pollMs = int(env, 'LIVE_POLL_MS', 2_000, 10, 3_600_000);
  const config = {
    pollMs,
    leaseMs: int(env, 'LIVE_LEASE_MS', Math.max(10_000, 3 * pollMs), 100, 3_600_000),
    backlog: int(env, 'LIVE_BACKLOG', 1_000, 1, 100_000),
    catchUp: int(env, 'LIVE_CATCH_UP', 20, 1, 1_000),
    maxSubscriptions: int(env, 'MAX_SUBSCRIPTIONS', 10_000, 0, 1_000_000),
    maxSubscriptionsPerClient: int(env, 'MAX_SUBSCRIPTIONS_PER_CLIENT', 20, 0, 1_000_000),
    maxStreamAgeMs: int(env, 'MAX_STREAM_AGE_MS', 1_800_000, 0, 86_400_000),
    // About a block and a half of a 6 s chain: a client that just saw block n asks for n + 1.
    minChainHeightWaitMs: int(env, 'MIN_CHAIN_HEIGHT_WAIT_MS', 10_000, 0, 120_000),
    headHoldMs: int(env, 'CHAIN_HEAD_HOLD_MS', 60_000, 0, 3_600_000),
  };
  // An age within the reconnection's own spread (a `retry:` of up to 10 s) would churn streams.
  if (config.maxStreamAgeMs > 0 && config.maxStreamAgeMs < 60_000)
    throw new ConfigError('MAX_STREAM_AGE_MS must be 0 (streams never aged) or at least 60000');
  // A holder renews its lease at each poll: a lease shorter than two polls would lapse between them.
  if (config.leaseMs < 2 * pollMs) throw new ConfigError('LIVE_LEASE_MS must be at least twice LIVE_POLL_MS');
  // One poll may bring LIVE_CATCH_UP blocks at once: a reader keeping up must never look stalled.
  if (config.backlog < config.catchUp) throw new ConfigError('LIVE_BACKLOG must be at least LIVE_CATCH_UP');
  return Object.freeze(config);
}

/**
 * What one client may hold besides its streams: the parallel connections of a browser (6) and of
 * anything else behind its address, with room. More streams per client raise it to fit.
 */
const CONNECTIONS_BESIDE_STREAMS = 64;

function serverLimits(env: Env, streams: LiveConfig, requestBytes: number): ServerLimits {
  const limits = {
    // A load balancer notices a failing readiness probe within a few seconds; by hand, at once.
    shutdownDelayMs: int(env, 'SHUTDOWN_DELAY_MS', env.NODE_ENV === 'production' ? 5_000 : 0, 0, 600_000),
    headersTimeoutMs: int(env, 'HEADERS_TIMEOUT_MS', 15_000, 100, 3_600_000),
    requestTimeoutMs: int(env, 'REQUEST_TIMEOUT_MS', 30_000, 100, 3_600_000),
    keepAliveTimeoutMs: int(env, 'KEEP_ALIVE_TIMEOUT_MS', 5_000, 100, 3_600_000),
    // Ordinary requests' 1,024 beside every subscription stream a process may hold.
    maxConnections: int(env, 'MAX_CONNECTIONS', 1_024 + streams.maxSubscriptions, 1, 10_000_000),
    // Eighty bodies at the MAX_REQUEST_BYTES cap arriving at once, or thousands of the few KB a
    // valid request sends: more than ever arrive together, and a few MB of memory at worst.
    maxInflightBodyBytes: int(env, 'MAX_INFLIGHT_BODY_BYTES', 8_000_000, 1_000, 100_000_000_000),
    maxConnectionsPerClient: int(
      env,
      'MAX_CONNECTIONS_PER_CLIENT',
      Math.max(128, streams.maxSubscriptionsPerClient + CONNECTIONS_BESIDE_STREAMS),
      1,
      10_000_000,
    ),
    // Apache's mod_reqtimeout asks 500 bytes a second; a phone on a poor link sends tens of KB a second.
    minBodyRate: int(env, 'MIN_BODY_RATE', 1_000, 1, 1_000_000_000),
    bodyTimeoutMs: int(env, 'BODY_TIMEOUT_MS', 10_000, 100, 3_600_000),
    // A client sends its body with its headers, or right after a 100 Continue: two seconds is a
    // lost packet's retransmission and then some.
    bodyFirstByteMs: int(env, 'BODY_FIRST_BYTE_MS', 2_000, 100, 3_600_000),
  };
  // A few bodies at the cap at once: no client may hold the whole budget with stalled bodies.
  const maxInflightBodyBytesPerClient = int(
    env,
    'MAX_INFLIGHT_BODY_BYTES_PER_CLIENT',
    Math.min(4 * requestBytes, limits.maxInflightBodyBytes),
    1_000,
    100_000_000_000,
  );
  // node:http checks both timeouts on the same clock and refuses a request timeout below the headers'.
  if (limits.requestTimeoutMs < limits.headersTimeoutMs)
    throw new ConfigError('REQUEST_TIMEOUT_MS must be at least HEADERS_TIMEOUT_MS');
  // A body the cap allows must fit the budget on its own, or it could never be admitted.
  if (limits.maxInflightBodyBytes < requestBytes)
    throw new ConfigError('MAX_INFLIGHT_BODY_BYTES must be at least MAX_REQUEST_BYTES');
  if (
    maxInflightBodyBytesPerClient < requestBytes ||
    maxInflightBodyBytesPerClient > limits.maxInflightBodyBytes
  )
    throw new ConfigError(
      'MAX_INFLIGHT_BODY_BYTES_PER_CLIENT must be at least MAX_REQUEST_BYTES and at most MAX_INFLIGHT_BODY_BYTES',
    );
  // Every stream holds a connection (or is a request in flight): a client at its stream cap must
  // still have connections left for its queries.
  if (limits.maxConnectionsPerClient <= streams.maxSubscriptionsPerClient)
    throw new ConfigError('MAX_CONNECTIONS_PER_CLIENT must be more than MAX_SUBSCRIPTIONS_PER_CLIENT');
  return Object.freeze({ ...limits, maxInflightBodyBytesPerClient });
}

function workers(env: Env): number {
  if (env.WORKERS?.trim().toLowerCase() === 'auto') return availableParallelism();
  return int(env, 'WORKERS', 1, 1, 256);
}

/** A Redis Cluster as REDIS_URL names it: seed nodes (the others are found from them), TLS, credentials. */
export interface RedisClusterTarget {
  nodes: { host: string; port: number }[];
  tls: boolean;
  /** The user info as written (null: none); an empty password is refused at start (`redisUrl`). */
  auth: { username: string; password: string } | null;
}

/** `host`, `host:port` or `[v6]:port`, as a seed node (port 6379 unless written). */
function seedNode(text: string): { host: string; port: number } {
  const found = /^(?:\[([0-9a-f:.]+)\]|([a-z0-9.-]+))(?::(\d{1,5}))?$/i.exec(text);
  const port = Number(found?.[3] ?? 6379);
  if (!found || port < 1 || port > 65_535) {
    throw new ConfigError(`REDIS_URL names "${text.slice(0, 80)}" as a cluster node: expected host:port`);
  }
  return { host: (found[1] ?? found[2]) as string, port };
}

/**
 * A REDIS_URL that names a Redis Cluster, with the schemes Apollo Router uses: `redis-cluster://`
 * (TCP) or `rediss-cluster://` (TLS), then `[user:password@]host:port[,host:port…]`; further seed
 * nodes may also come as Apollo Router writes them, `?node=host:port&node=…`. A cluster has one
 * database, so a path other than `/0` is refused, as is any other parameter. Null for a URL of any
 * other scheme; a cluster URL that names no node throws.
 */
export function redisCluster(url: string): RedisClusterTarget | null {
  const found = /^(rediss?)-cluster:\/\/([^/?#]*)(\/[^?#]*)?(?:\?([^#]*))?$/i.exec(url);
  if (!found) {
    if (/^rediss?-cluster:/i.test(url)) throw new ConfigError('REDIS_URL is not a well-formed cluster URL');
    return null;
  }
  const [, scheme, authority = '', path = '', query = ''] = found;
  const at = authority.lastIndexOf('@');
  const hosts = authority.slice(at + 1).split(',');
  for (const [name, value] of new URLSearchParams(query)) {
    if (name !== 'node') {
      throw new ConfigError(`REDIS_URL: a cluster URL takes only node= parameters, not ${name}=`);
    }
    hosts.push(value);
  }
  const nodes = hosts.filter((host) => host !== '').map(seedNode);
  if (nodes.length === 0) {
    throw new ConfigError('REDIS_URL names no node of the cluster: redis-cluster://host:port');
  }
  if (!['', '/', '/0'].includes(path)) {
    throw new ConfigError('REDIS_URL: a Redis Cluster has database 0 only; leave the path out');
  }
  let auth: RedisClusterTarget['auth'] = null;
  if (at >= 0) {
    const info = authority.slice(0, at);
    const colon = info.indexOf(':');
    try {
      auth = {
        username: decodeURIComponent(colon < 0 ? info : info.slice(0, colon)),
        password: colon < 0 ? '' : decodeURIComponent(info.slice(colon + 1)),
      };
    } catch {
      throw new ConfigError('REDIS_URL: the user info of the cluster URL is not well percent-encoded');
    }
  }
  return { nodes, tls: scheme?.toLowerCase() === 'rediss', auth };
}

/**
 * REDIS_URL, checked in one place. A URL that names a user (or a `:`) with an empty password is
 * refused: it is what `redis://gateway:$(REDIS_PASSWORD)@…` becomes when the Secret's password is
 * blanked, and a Redis whose password was blanked alike would then accept anyone.
 */
function redisUrl(env: Env): string | null {
  const raw = env.REDIS_URL?.trim();
  if (!raw) return null;
  // The password the URL writes: null without user info.
  let password: string | null;
  const cluster = redisCluster(raw);
  if (cluster) {
    password = cluster.auth?.password ?? null;
  } else {
    let parsed: URL | null = null;
    try {
      parsed = new URL(raw);
    } catch {
      parsed = null;
    }
    if (!parsed || (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:')) {
      throw new ConfigError(
        'REDIS_URL must be a redis://, rediss://, redis-cluster:// or rediss-cluster:// URL',
      );
    }
    // WHATWG's URL drops an empty user info (`redis://:@host` has neither user nor password): read
    // the authority as written.
    password = /^[a-z]+:\/\/([^/?#]*)@/i.test(raw) ? parsed.password : null;
  }
  if (password === '') {
    throw new ConfigError(
      'REDIS_URL names a user but its password is empty: set the password (redis://user:password@host), or leave the user info out for a Redis without one',
    );
  }
  return raw;
}

/** BUILD_REVISION: the source revision the image was built from (its Dockerfile sets it), a label value. */
function buildRevision(env: Env): string {
  const raw = env.BUILD_REVISION?.trim();
  if (!raw) return 'unknown';
  if (!/^[\w.+-]{1,64}$/.test(raw)) {
    throw new ConfigError(
      `BUILD_REVISION must be up to 64 letters, digits, '.', '+', '-' or '_', got "${raw.slice(0, 80)}"`,
    );
  }
  return raw;
}

function dialect(env: Env): DevnetDialect {
  const raw = env.DEVNET_DIALECT || 'spec';
  if (raw !== 'spec' && raw !== 'kratos') {
    throw new ConfigError(`DEVNET_DIALECT must be spec or kratos, got "${raw}"`);
  }
  return raw;
}

function limits(env: Env): Limits {
  return Object.freeze({
    // A valid request is a few KB: at most MAX_TOKENS (1,000) tokens of document, and at most
    // MAX_VARIABLE_VALUES (1,000) values of variables, each held short by its argument's rule.
    requestBytes: int(env, 'MAX_REQUEST_BYTES', 100_000, 1_000, 100_000_000),
    depth: int(env, 'MAX_DEPTH', 10, 1, 100),
    aliases: int(env, 'MAX_ALIASES', 15, 0, 1_000),
    tokens: int(env, 'MAX_TOKENS', 1_000, 10, 100_000),
    directives: int(env, 'MAX_DIRECTIVES', 10, 0, 1_000),
    rootFields: int(env, 'MAX_ROOT_FIELDS', 10, 1, 1_000),
    complexity: int(env, 'MAX_COMPLEXITY', 3_000, 1, 10_000_000),
    batch: int(env, 'BATCH_LIMIT', 0, 0, 100),
    variablesDepth: int(env, 'MAX_VARIABLES_DEPTH', 8, 1, 100),
    variableValues: int(env, 'MAX_VARIABLE_VALUES', 1_000, 1, 1_000_000),
    // HTTP/2's advice for its concurrent streams (RFC 9113 §6.5.2: no fewer than 100): a page's
    // burst of queries fits; thousands sent at once do not.
    operationsPerSocket: int(env, 'MAX_OPERATIONS_PER_SOCKET', 100, 1, 100_000),
  });
}

function documents(env: Env): DocumentCacheConfig {
  return Object.freeze({
    maxEntries: int(env, 'DOCUMENT_CACHE_ENTRIES', 1_000, 1, 1_000_000),
    maxBytes: int(env, 'DOCUMENT_CACHE_BYTES', 32_000_000, 100_000, 4_000_000_000),
    keepAfter: int(env, 'DOCUMENT_KEEP_AFTER', 2, 1, 100),
    compileAfter: int(env, 'COMPILE_AFTER', 10, 0, 1_000_000),
    compileWindowMs: int(env, 'COMPILE_WINDOW_MS', 60_000, 1, 86_400_000),
  });
}

function scale(env: Env): ScaleConfig {
  return Object.freeze({
    workers: workers(env),
    redisUrl: redisUrl(env),
    redisTimeoutMs: int(env, 'REDIS_TIMEOUT_MS', 100, 1, 10_000),
    // A public explorer's default: 30,000 points a minute per client, about 18 loads of the
    // 100-row validator table (cost 1,610) or 730 exact searches (cost 41).
    rateLimitPoints: int(env, 'RATE_LIMIT_POINTS', 30_000, 0, 100_000_000),
    rateLimitWindowMs: int(env, 'RATE_LIMIT_WINDOW_MS', 60_000, 1_000, 86_400_000),
    trustProxy: int(env, 'TRUST_PROXY', 0, 0, 10),
    ipv6Prefix: int(env, 'CLIENT_IPV6_PREFIX', 64, 16, 128),
  });
}

/**
 * CURSOR_SECRET. Required in production on real upstreams: instances must share it, and a key
 * derived from the upstream URLs would let anyone who knows them forge cursors and token HMACs.
 */
function cursorSecret(env: Env, required: boolean): string | null {
  const raw = env.CURSOR_SECRET || null;
  if (raw === null && required) {
    throw new ConfigError(
      'CURSOR_SECRET must be set in production on real upstreams (the same random value, 32 bytes or more, on every instance)',
    );
  }
  if (raw !== null && Buffer.byteLength(raw) < 16) {
    throw new ConfigError('CURSOR_SECRET must be at least 16 bytes long');
  }
  return raw;
}

/**
 * CURSOR_SECRET_PREVIOUS: the first step of a rotation (docs/deploy.md). Without CURSOR_SECRET it
 * would stand beside a secret derived from the upstream URLs, which is no rotation at all.
 */
function cursorSecretPrevious(env: Env, current: string | null): string | null {
  const raw = env.CURSOR_SECRET_PREVIOUS || null;
  if (raw === null) return null;
  if (current === null) {
    throw new ConfigError(
      'CURSOR_SECRET_PREVIOUS is set without CURSOR_SECRET: set CURSOR_SECRET to the new secret, and CURSOR_SECRET_PREVIOUS to the one it replaces',
    );
  }
  if (Buffer.byteLength(raw) < 16)
    throw new ConfigError('CURSOR_SECRET_PREVIOUS must be at least 16 bytes long');
  return raw === current ? null : raw;
}

/**
 * What a process logs at start about its secret: where CURSOR_SECRET may be left unset (the
 * devnet, real upstreams outside production), the secret derived in its place is one anyone who
 * knows the upstream URLs can derive too.
 */
export function secretWarnings(config: Pick<Config, 'cursorSecret' | 'upstreams' | 'scale'>): string[] {
  if (config.cursorSecret) return [];
  const warnings: string[] = [];
  if (config.upstreams) {
    warnings.push(
      'CURSOR_SECRET is not set: page cursors are signed with a key derived from the upstream URLs, which anyone who knows them can forge',
    );
  }
  if (config.scale.redisUrl) {
    warnings.push(
      'CURSOR_SECRET is not set: the secret derived from the upstream URLs also signs and seals what the gateway keeps in Redis and names its keys, so that anyone who knows the URLs and reaches Redis can forge its values and read private live events',
    );
  }
  return warnings;
}

const UPSTREAM_VARS = ['SCAN_URL', 'EXPLORER_URL', 'STAKE_URL'] as const;

/** The variables that choose the devnet's ports, by service. */
export const DEVNET_PORT_VARIABLES = {
  scan: 'SCAN_PORT',
  explorer: 'EXPLORER_PORT',
  stake: 'STAKE_PORT',
} as const;

/**
 * A server's failure to listen as the person who started the process reads it: a port already
 * taken names the variable that chose it, in one line (main.ts prints a ConfigError without its
 * stack); any other failure is returned as it is.
 */
export function listenError(variable: string, host: string, port: number, error: unknown): unknown {
  if ((error as NodeJS.ErrnoException | null)?.code !== 'EADDRINUSE') return error;
  return new ConfigError(
    `${variable}=${port}: ${host}:${port} is already in use; stop what listens there, or set ${variable} to another port (0: any free port)`,
  );
}

export function loadDevnetConfig(env: Env = process.env): DevnetConfig {
  const devnetDialect = dialect(env);
  return Object.freeze({
    seed: env.DEVNET_SEED || 'devnet',
    host: env.DEVNET_HOST || '127.0.0.1',
    token: env.DEVNET_TOKEN || 'devnet-token',
    ports: Object.freeze({
      scan: int(env, DEVNET_PORT_VARIABLES.scan, 4101, 0, 65_535),
      explorer: int(env, DEVNET_PORT_VARIABLES.explorer, 4102, 0, 65_535),
      stake: int(env, DEVNET_PORT_VARIABLES.stake, 4103, 0, 65_535),
    }),
    dialect: devnetDialect,
    stakeEnvelope: bool(env, 'DEVNET_STAKE_ENVELOPE', false),
    explorerSuccessCode: int(env, 'DEVNET_EXPLORER_SUCCESS_CODE', 0, 0, 999),
    bech32Prefix: prefix(env, 'DEVNET_BECH32_PREFIX', devnetDialect === 'kratos' ? 'byb' : 'biya'),
    blockIntervalMs: int(env, 'DEVNET_BLOCK_MS', 6_000, 0, 3_600_000),
  });
}

/**
 * Whether the process runs on the embedded devnet: with no upstream URL, outside production (`npm
 * start`), or in production only when DEVNET=true asks for it by name. A production process that
 * lost its upstream URLs would otherwise serve made-up data and take the devnet's public token,
 * the mutation included. Throws when the variables disagree.
 */
function runsDevnet(env: Env, production: boolean, upstreamsGiven: boolean): boolean {
  const asked = bool(env, 'DEVNET', !production && !upstreamsGiven);
  const urls = UPSTREAM_VARS.join(', ').replace(/, (?=[^,]*$)/, ' and ');
  if (asked && upstreamsGiven) {
    throw new ConfigError(
      `DEVNET=true runs the embedded devnet, but ${urls} are set: unset one or the other`,
    );
  }
  if (!asked && !upstreamsGiven) {
    throw new ConfigError(
      `${env.DEVNET ? 'no upstream URL and DEVNET=false' : 'NODE_ENV=production and no upstream URL'}: set ${urls}, or DEVNET=true to run on the embedded devnet (made-up data, and a public token that may run the mutation: a try-out, never a deployment)`,
    );
  }
  return asked;
}

/** METRICS_PORT (see Config.metricsPort): 9464 by default in production, none otherwise. */
function metricsPort(env: Env, production: boolean, port: number): number | null {
  const raw = env.METRICS_PORT;
  if ((raw === undefined || raw === '') && !production) return null;
  const metrics = int(env, 'METRICS_PORT', 9464, 0, 65_535);
  // Both servers would claim the one port: the second to listen fails to start.
  if (metrics === port && port !== 0) throw new ConfigError(`METRICS_PORT must differ from PORT (${port})`);
  return metrics;
}

export function loadConfig(env: Env = process.env): Config {
  const given = UPSTREAM_VARS.filter((name) => env[name]);
  if (given.length > 0 && given.length < UPSTREAM_VARS.length) {
    const missing = UPSTREAM_VARS.filter((name) => !env[name]);
    throw new ConfigError(
      `${given.join(' and ')} set but ${missing.join(' and ')} missing: set all three upstream URLs, or none to run on the devnet`,
    );
  }
  const production = env.NODE_ENV === 'production';
  // GraphiQL, introspection and suggestions follow what the process serves: on for the devnet's
  // public, made-up data (its try-out in production included), off for real upstreams in production.
  const tools = runsDevnet(env, production, given.length > 0) || !production;
  const port = int(env, 'PORT', 4000, 0, 65_535);
  const upstreamTimeoutMs = int(env, 'UPSTREAM_TIMEOUT_MS', 5_000, 1, 600_000);
  const requestLimits = limits(env);
  const liveConfig = live(env);
  return Object.freeze({
    host: env.HOST || '127.0.0.1',
    port,
    metricsPort: metricsPort(env, production, port),
    upstreams:
      given.length === 0
        ? null
        : Object.freeze({
            scan: url(env, 'SCAN_URL'),
            explorer: url(env, 'EXPLORER_URL'),
            stake: url(env, 'STAKE_URL'),
          }),
    upstreamTimeoutMs,
    upstreamConnections: int(env, 'UPSTREAM_CONNECTIONS', 32, 1, 1_024),
    circuitFailureThreshold: int(env, 'CIRCUIT_FAILURE_THRESHOLD', 5, 1, 1_000),
    circuitHalfOpenMs: int(env, 'CIRCUIT_HALF_OPEN_MS', 10_000, 1, 3_600_000),
    production,
    build: Object.freeze({ version: PACKAGE_VERSION, revision: buildRevision(env) }),
    logLevel: logLevel(env),
    introspection: bool(env, 'GRAPHQL_INTROSPECTION', tools),
    graphiql: bool(env, 'GRAPHIQL', tools),
    fieldSuggestions: bool(env, 'GRAPHQL_FIELD_SUGGESTIONS', tools),
    explorerToken: env.EXPLORER_TOKEN || null,
    validatorCacheTtlMs: int(env, 'VALIDATOR_CACHE_TTL_MS', 5_000, 0, 3_600_000),
    responseCacheTtlMs: int(env, 'RESPONSE_CACHE_TTL_MS', 5_000, 0, 3_600_000),
    responseCacheEntries: int(env, 'RESPONSE_CACHE_ENTRIES', 10_000, 1, 1_000_000),
    limits: requestLimits,
    documents: documents(env),
    server: serverLimits(env, liveConfig, requestLimits.requestBytes),
    persistedOperationsFile: env.PERSISTED_OPERATIONS || null,
    cursorSecret: cursorSecret(env, production && given.length > 0),
    cursorSecretPrevious: cursorSecretPrevious(env, env.CURSOR_SECRET || null),
    apq: Object.freeze({
      maxEntries: int(env, 'APQ_ENTRIES', 1_000, 1, 1_000_000),
      maxBytes: int(env, 'APQ_BYTES', 8_000_000, 10_000, 1_000_000_000),
      redisBytes: int(env, 'APQ_REDIS_BYTES', 64_000_000, 100_000, 100_000_000_000),
    }),
    dialects: Object.freeze({
      explorerSuccessCodes: codes(env, 'EXPLORER_SUCCESS_CODES', Object.freeze([0, 200])),
      bech32Prefix: prefix(env, 'BECH32_PREFIX', null),
      scanQueryParam: queryParam(env),
      validatorMaxPages: int(env, 'VALIDATOR_MAX_PAGES', 50, 1, 10_000),
    }),
    cors: Object.freeze({
      origins: origins(env),
      localhost: !env.CORS_ORIGINS?.trim() && given.length === 0,
      allowHeaders: allowHeaders(env),
    }),
    tracing: tracing(env),
    scale: scale(env),
    live: liveConfig,
    devnet: loadDevnetConfig(env),
  });
}

/**
 * The process's open-file limit (RLIMIT_NOFILE, soft), from /proc/self/limits; null where it cannot
 * be read (not Linux), and then nothing is capped.
 */
export function openFileLimit(limits = '/proc/self/limits'): number | null {
  try {
    const line = /^Max open files\s+(\d+)/m.exec(readFileSync(limits, 'utf8'));
    return line ? Number(line[1]) : null;
  } catch {
    return null;
  }
}

/**
 * MAX_CONNECTIONS and MAX_SUBSCRIPTIONS within the open-file limit: every socket is a file, and a
 * process whose client sockets took every file has none left for its upstream, Redis and log
 * sockets, so that its polls fail and no event reaches anyone. The reserve: each upstream's
 * connections (twice over with the embedded devnet, whose servers hold the other ends), plus 128
 * for Redis, logs, the listening sockets and the process's own files. Streams keep 64 sockets
 * free for probes and queries. Returns the settings and what was capped, for a log line.
 */
export function fitToFileLimit(config: Config, files: number | null): { config: Config; capped: string[] } {
  if (files === null) return { config, capped: [] };
  const reserve = 3 * config.upstreamConnections * (config.upstreams ? 1 : 2) + 128;
  const connections = Math.max(1, files - reserve);
  const streams = Math.max(0, connections - 64);
  const capped: string[] = [];
  let { server, live } = config;
  if (server.maxConnections > connections) {
    capped.push(`MAX_CONNECTIONS ${server.maxConnections} → ${connections}`);
    server = Object.freeze({ ...server, maxConnections: connections });
  }
  if (live.maxSubscriptions > streams) {
    capped.push(`MAX_SUBSCRIPTIONS ${live.maxSubscriptions} → ${streams}`);
    live = Object.freeze({ ...live, maxSubscriptions: streams });
  }
  return { config: capped.length > 0 ? Object.freeze({ ...config, server, live }) : config, capped };
}

/** Reads a persisted-documents manifest: a JSON object of operation id → document text. */
export function loadPersistedOperations(path: string): Readonly<Record<string, string>> {
  let manifest: unknown;
  try {
    manifest = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new ConfigError(`PERSISTED_OPERATIONS: cannot read ${path}: ${(error as Error).message}`);
  }
  if (typeof manifest !== 'object' || manifest === null || Array.isArray(manifest)) {
    throw new ConfigError(`PERSISTED_OPERATIONS: ${path} is not a JSON object of id → document`);
  }
  for (const [id, document] of Object.entries(manifest)) {
    if (typeof document !== 'string')
      throw new ConfigError(`PERSISTED_OPERATIONS: entry ${id} is not a document string`);
  }
  return Object.freeze(manifest as Record<string, string>);
}
