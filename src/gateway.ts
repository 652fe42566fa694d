import type { RequestListener } from 'node:http';
import { pino } from 'pino';
import type { GatewayOptions } from './config.js';
import { CorsPolicy } from './exchange/headers.js';
import { DocumentCache } from './graphql/pipeline/documents.js';
import { PersistedQueryStore } from './graphql/plugins/apq.js';
import { Manifest } from './graphql/plugins/persisted.js';
import { type CacheHead, PublicResponseCache } from './graphql/plugins/response-cache.js';
import { createGatewayYoga, type GatewayYoga, gatewayContext, type YogaParts } from './graphql/yoga.js';
import { createRequestListener } from './http/fast-path.js';
import type { UpgradeListener } from './http/node-server.js';
import { EventStreams, SSE_PING_MS } from './http/sse.js';
import { type WebSocketOptions, WebSockets, WS_INIT_TIMEOUT_MS } from './http/websocket.js';
import { LiveUpdates } from './live/index.js';
import { StreamAges } from './live/streams.js';
import { GatewayMetrics } from './ops/metrics.js';
import type { Telemetry } from './ops/request-trace.js';
import { RateLimit } from './scale/rate-limit.js';
import { deploymentPrefix, type KeyedRedis, RedisStore } from './scale/redis.js';
import { RedisValues } from './scale/redis-values.js';
import { SharedCache, sharedKeyPrefix } from './scale/shared-cache.js';
import { CursorCodec } from './schema/cursors.js';
import { ValidatorCache } from './schema/loaders.js';
import { printedSchema } from './schema/print.js';
import { createUpstreams, type Upstreams } from './upstream/index.js';

/**
 * The composition root: everything one gateway process holds (metrics, upstream clients, Redis,
 * caches, rate limit), built once and handed to the Yoga instance (graphql/yoga.ts) and the
 * node:http listener (http/fast-path.ts). A pure factory: tests build as many as they like.
 */

export type { GatewayOptions, GatewaySettings } from './config.js';

export interface Gateway {
  metrics: GatewayMetrics;
  yoga: GatewayYoga;
  /** The node:http listener: Yoga, with a fast path for plain JSON POSTs (see http/fast-path.ts). */
  listener: RequestListener;
  /** node:http's `upgrade` listener: GraphQL over WebSocket on /graphql (http/websocket.ts). */
  upgrade: UpgradeListener;
  /** The one CORS policy: every answer's, intake's refusals' (http/node-server.ts) and WebSocket origins'. */
  cors: CorsPolicy;
  upstreams: Upstreams;
  /** The per-client rate limit; null when RATE_LIMIT_POINTS is 0. */
  rateLimit: RateLimit | null;
  /** Live updates: the subscription streams of this process and their pollers. */
  live: LiveUpdates;
  /** The process is shutting down: `/readyz` answers 503 from now on, while requests are still served. */
  startDraining(): void;
  /**
   * Completes every subscription stream, each with a `retry:` hint so that its client reconnects
   * (to another instance): the start of the drain proper, after SHUTDOWN_DELAY_MS.
   */
  drain(): Promise<void>;
  close(): Promise<void>;
}

/**
 * REDIS_URL: the one connection for what is shared between instances (scale/redis.ts), and the
 * second level of the public caches on it (scale/shared-cache.ts). Never needed for an answer.
 * Every value kept there is signed or sealed with keys derived from the deployment's `secret`, and
 * proven when read back (scale/redis-values.ts); one that is not is counted in `redis_rejected_total`.
 */
function connectRedis(options: GatewayOptions, telemetry: Telemetry, secret: string) {
  const { redisUrl, redisTimeoutMs } = options.scale;
  if (!redisUrl) return { redis: null, shared: null, keyed: null };
  const { metrics } = telemetry;
  const redis = new RedisStore({
    url: redisUrl,
    timeoutMs: redisTimeoutMs,
    logger: telemetry.logger,
    onError: (kind) => metrics.observeRedisError(kind),
  });
  metrics.watchRedis(() => redis.up);
  // The shared caches, and what else lives in Redis (live leases and events, persisted queries),
  // under one prefix (named after the secret, too) and one set of keys.
  const keyed: KeyedRedis = {
    store: redis,
    prefix: deploymentPrefix(
      sharedKeyPrefix(printedSchema(), { urls: options.upstreamUrls, dialects: options.dialects }),
      secret,
    ),
    values: new RedisValues(
      secret,
      (kind) => metrics.observeRedisRejected(kind),
      options.cursorSecretPrevious,
    ),
  };
  const shared = new SharedCache(keyed, options.upstreamTimeoutMs, (cache, result) =>
    metrics.observeSharedCache(cache, result),
  );
  return { redis, shared, keyed };
}

/**
 * Per-client budgets of query cost on the gateway's one Redis connection, under the key id of the
 * deployment's secret; null: no limiter.
 */
function rateLimitFor(
  options: GatewayOptions,
  telemetry: Telemetry,
  redis: RedisStore | null,
  secret: string,
) {
  if (options.scale.rateLimitPoints <= 0) return null;
  return new RateLimit(
    options.scale,
    { refused: () => telemetry.metrics.observeRateLimited() },
    redis ? { client: redis.client, secret } : null,
  );
}

/**
 * What clients cache by: cursors signed so every instance on the same upstreams accepts them
 * (unless CURSOR_SECRET says otherwise), and Apollo's automatic persisted queries unless a
 * manifest says which operations run.
 */
function clientCachesFor(options: GatewayOptions, keyed: KeyedRedis | null, secret: string) {
  const cursors = new CursorCodec(secret, options.cursorSecretPrevious);
  const manifest = options.persistedOperations ? new Manifest(options.persistedOperations) : null;
  const persistedQueries = manifest ? null : new PersistedQueryStore({ ...options.apq, redis: keyed });
  return { cursors, persistedQueries, manifest };
}

/** The public validator list shared across requests, through Redis as well when it is configured. */
function validatorCacheFor(
  options: GatewayOptions,
  upstreams: Upstreams,
  metrics: GatewayMetrics,
  shared: SharedCache | null,
): ValidatorCache {
  const ttlMs = options.validatorCacheTtlMs;
  return new ValidatorCache(
    ttlMs,
    Date.now,
    (hit) => metrics.observeCache('validators', hit),
    shared
      ? (fetch) =>
          shared.getOrFill('validators', 'list', ttlMs, fetch).then((got) => {
            // A list read from Redis teaches staking's account encoding as a fetched one does.
            upstreams.stake.learnAccountsFrom(got.value);
            return got;
          })
      : undefined,
  );
}

/** Whole answers of public queries (RESPONSE_CACHE_TTL_MS; 0: none). */
function responseCacheFor(
  options: GatewayOptions,
  metrics: GatewayMetrics,
  shared: SharedCache | null,
  head: CacheHead,
): PublicResponseCache | null {
  if (options.responseCacheTtlMs <= 0) return null;
  return new PublicResponseCache({
    head,
    headHoldMs: options.live.headHoldMs,
    ttlMs: options.responseCacheTtlMs,
    maxEntries: options.responseCacheEntries,
    onLookup: (hit) => metrics.observeCache('responses', hit),
    shared,
  });
}

/** The whole gateway, buildable without a socket (tests call `gateway.yoga.fetch`). */
/** The upstream clients and the metrics that observe them. */
function observedUpstreams(options: GatewayOptions): { metrics: GatewayMetrics; upstreams: Upstreams } {
  // Metrics and upstreams refer to each other (upstream calls are observed, circuits are scraped);
  // each reads the other only once both exist.
  const metrics: GatewayMetrics = new GatewayMetrics(() => upstreams.circuits());
  // Every gateway says what it runs (build_info) and the streams it takes, whoever builds it.
  metrics.describe({ build: options.build, maxSubscriptions: options.live.maxSubscriptions });
  const upstreams: Upstreams = createUpstreams({
    observe: (event) => metrics.observeUpstream(event),
    urls: options.upstreamUrls,
    dialects: options.dialects,
    timeoutMs: options.upstreamTimeoutMs,
    connections: options.upstreamConnections,
    resilience: {
      failureThreshold: options.circuitFailureThreshold,
      halfOpenAfterMs: options.circuitHalfOpenMs,
    },
  });
  return { metrics, upstreams };
}

/**
 * The deployment's secret: CURSOR_SECRET, or (the devnet, real upstreams outside production:
 * config.ts) one derived from the upstreams.
 */
export const deploymentSecret = (
  options: Pick<GatewayOptions, 'cursorSecret' | 'upstreamUrls' | 'dialects'>,
) =>
  options.cursorSecret ??
  sharedKeyPrefix('cursors', { urls: options.upstreamUrls, dialects: options.dialects });

/** GraphQL over WebSocket (http/websocket.ts): the pipeline's parts, and the socket's own bounds. */
function webSocketsFor(
  options: GatewayOptions,
  { telemetry, cors, documents, draining }: YogaParts,
  yoga: Pick<WebSocketOptions, 'yoga' | 'routing' | 'ages'>,
): WebSockets {
  return new WebSockets({
    ...yoga,
    telemetry,
    cors,
    documents,
    draining,
    maxMessageBytes: options.limits.requestBytes,
    backlog: options.live.backlog,
    pingMs: SSE_PING_MS,
    initTimeoutMs: WS_INIT_TIMEOUT_MS,
    maxOperations: options.limits.operationsPerSocket,
  });
}

export function createGateway(options: GatewayOptions): Gateway {
  const { metrics, upstreams } = observedUpstreams(options);
  const telemetry: Telemetry = { metrics, logger: options.logger ?? pino({ level: 'silent' }) };
  const secret = deploymentSecret(options);
  const { redis, shared, keyed } = connectRedis(options, telemetry, secret);
  const rateLimit = rateLimitFor(options, telemetry, redis, secret);
  // Every document's parse, validation, derived facts and (once hot) compiled plan, in one bounded
  // LRU: Yoga's own parse and validation caches are off.
  const documents = new DocumentCache(options.documents, { compiled: () => metrics.observeCompilation() });
  const cors = new CorsPolicy(options.cors);
  const validatorCache = validatorCacheFor(options, upstreams, metrics, shared);
  const live = new LiveUpdates(options.live, {
    upstreams,
    metrics,
    logger: telemetry.logger,
    redis: keyed,
    secret,
    validatorsRead: (list) => validatorCache.refresh(list),
  });
  // Every request's trace is stamped with the chain's head as it opens (exchange/exchange.ts).
  telemetry.head = live.head;
  // Public answers follow the chain's head (response-cache.ts).
  const responses = responseCacheFor(options, metrics, shared, live.head);
  metrics.watchDocumentCaches(() => ({ ...documents.size(), responses: responses?.size() ?? 0 }));
  const { cursors, persistedQueries, manifest } = clientCachesFor(options, keyed, secret);
  // The streams the adapter writes itself (http/sse.ts); every stream's age (MAX_STREAM_AGE_MS).
  const ages = new StreamAges(options.live.maxStreamAgeMs);
  const streams = new EventStreams({ backlog: options.live.backlog, pingMs: SSE_PING_MS, metrics, ages });
  let draining = false;
  const parts: YogaParts = {
    draining: () => draining,
    telemetry,
    cursors,
    persistedQueries,
    manifest,
    cors,
    upstreams,
    validatorCache,
    redis,
    rateLimit,
    documents,
    responses,
    live,
  };
  // How every request's context is made, whichever path runs it.
  const context = gatewayContext(options, parts);
  const { yoga, routing } = createGatewayYoga(options, parts, context);
  const sockets = webSocketsFor(options, parts, { yoga, routing, ages });
  return {
    yoga,
    metrics,
    listener: createRequestListener(yoga, {
      telemetry,
      cors,
      streams,
      routing,
      prepared: { documents, context },
    }),
    upgrade: sockets.upgrade,
    cors,
    upstreams,
    rateLimit,
    live,
    startDraining: () => {
      draining = true;
    },
    drain: () => {
      draining = true;
      streams.draining = true;
      // WebSockets are told to go away (1001): graphql-ws clients reconnect, with their own backoff.
      sockets.close();
      return live.close();
    },
    close: async () => {
      sockets.close();
      await live.close();
      await Promise.all([upstreams.close(), redis?.close()]);
    },
  };
}
