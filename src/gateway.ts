import type { RequestListener } from 'node:http';
import { useCSRFPrevention } from '@graphql-yoga/plugin-csrf-prevention';
import { usePersistedOperations } from '@graphql-yoga/plugin-persisted-operations';
import { createYoga, maskError, type Plugin, type YogaServerInstance } from 'graphql-yoga';
import { type Logger, pino } from 'pino';
import type { Config } from './config.js';
import type { UpstreamName } from './errors.js';
import { bearerToken, type Context } from './graphql/context.js';
import { graphiqlPageOptions } from './graphql/graphiql.js';
import { Loaders, ValidatorCache } from './graphql/loaders.js';
import { limitPlugins } from './graphql/plugins/limits.js';
import { DocumentCache } from './graphql/plugins/prepared.js';
import { RateLimit } from './graphql/plugins/rate-limit.js';
import { publicResponseCache } from './graphql/plugins/response-cache.js';
import { operationLabeler, traceOf, useTelemetry, yogaLogger } from './graphql/plugins/telemetry.js';
import { CorsPolicy, useAnswers } from './http/answer.js';
import { createRequestListener } from './http/fast-path.js';
import { GatewayMetrics } from './ops/metrics.js';
import { RedisStore } from './scale/redis.js';
import { SharedCache, sharedKeyPrefix } from './scale/shared-cache.js';
import { schema } from './schema/index.js';
import { printedSchema } from './schema/print.js';
import { createUpstreams, type Upstreams } from './upstream/index.js';

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
>;

export interface GatewayOptions extends GatewaySettings {
  upstreamUrls: Record<UpstreamName, string>;
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
}

export interface Gateway {
  metrics: GatewayMetrics;
  yoga: YogaServerInstance<Record<string, unknown>, Context>;
  /** The node:http listener: Yoga, with a fast path for plain JSON POSTs (see http/fast-path.ts). */
  listener: RequestListener;
  upstreams: Upstreams;
  /** The per-client rate limit; null when RATE_LIMIT_POINTS is 0. */
  rateLimit: RateLimit | null;
  close(): Promise<void>;
}

export const EXAMPLE_QUERY = `# Welcome to the chain gateway. Press the run button to try this query.
query Overview {
  searchSuggestions(query: "12") {
    selectedCategory
    blocks { height hash transactionCount proposerValidator { moniker } }
  }
  validators(pageSize: 5) {
    pageInfo { total totalPages }
    nodes { moniker operatorAddress tokens jailed commission { rate } }
  }
  validatorStatistics { activeValidators totalStakedAmount annualizedRewardRate }
}

# contractsBySymbol, failedTransactions and updateBuybackRound need the
# Authorization header (see the Headers tab below).
`;

/**
 * `/healthz`: the process is up. `/readyz`: 200 only when every upstream answers.
 * `/metrics`: Prometheus text, of this gateway's registry unless `scrape` says otherwise.
 */
function useOperationalEndpoints(
  upstreams: Upstreams,
  metrics: GatewayMetrics,
  scrape: () => Promise<string> = () => metrics.registry.metrics(),
  redis: RedisStore | null = null,
): Plugin {
  const json = (status: number, body: unknown) =>
    new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
  return {
    async onRequest({ url, endResponse }) {
      if (url.pathname === '/healthz') endResponse(json(200, { status: 'ok' }));
      else if (url.pathname === '/readyz') {
        const [upstreamsUp, redisUp] = await Promise.all([upstreams.ping(), redis?.ping()]);
        const ready = Object.values(upstreamsUp).every(Boolean);
        // Redis is reported, never required: without it answers come from the upstreams.
        endResponse(
          json(ready ? 200 : 503, {
            status: ready ? 'ready' : 'not ready',
            upstreams: upstreamsUp,
            ...(redis ? { redis: redisUp ? 'up' : 'down' } : {}),
          }),
        );
      } else if (url.pathname === '/metrics') {
        const text = await scrape();
        endResponse(new Response(text, { headers: { 'content-type': metrics.registry.contentType } }));
      }
    },
  };
}

/**
 * Only the operations of a persisted-documents manifest (as graphql-codegen's client preset writes
 * it), by `documentId` or Apollo's `extensions.persistedQuery.sha256Hash`; any other document is
 * refused before it is parsed.
 */
function usePersistedOnly(manifest: Readonly<Record<string, string>>): Plugin {
  return usePersistedOperations({
    extractPersistedOperationId: (params) => {
      const documentId = (params as { documentId?: unknown }).documentId;
      if (typeof documentId === 'string') return documentId;
      const apollo = (
        params.extensions as { persistedQuery?: { version?: number; sha256Hash?: unknown } } | undefined
      )?.persistedQuery;
      return apollo?.version === 1 && typeof apollo.sha256Hash === 'string' ? apollo.sha256Hash : null;
    },
    getPersistedOperation: (id) => manifest[id] ?? manifest[`sha256:${id}`] ?? null,
    allowArbitraryOperations: false,
    customErrors: {
      notFound: { message: 'Unknown persisted operation.', extensions: { code: 'BAD_USER_INPUT' } },
      persistedQueryOnly: {
        message: 'Only persisted operations are accepted.',
        extensions: { code: 'BAD_USER_INPUT' },
      },
      keyNotFound: { message: 'Send a persisted operation id.', extensions: { code: 'BAD_USER_INPUT' } },
    },
  });
}

/**
 * Pinned error masking: whatever NODE_ENV says, an unexpected error reaches the client as a bare
 * INTERNAL_SERVER_ERROR, never with its message, stack or cause. Errors the gateway or the
 * frameworks raise on purpose pass, and answer.ts gives each a contract code.
 */
const maskGatewayError = (error: unknown, message: string): Error => maskError(error, message, false);

/** The whole gateway as a Yoga instance, buildable without a socket (tests call `yoga.fetch`). */
export function createGateway(options: GatewayOptions): Gateway {
  // Metrics and upstreams refer to each other (upstream calls are observed, circuits are scraped);
  // each reads the other only once both exist.
  const metrics: GatewayMetrics = new GatewayMetrics(() => upstreams.circuits());
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
  const persisted = options.persistedOperations ?? null;
  const telemetry = { metrics, logger: options.logger ?? pino({ level: 'silent' }) };
  const operationLabel = operationLabeler();
  // REDIS_URL: the validator list and public answers shared by every instance, behind the
  // in-process caches (shared-cache.ts); never needed for an answer (redis.ts).
  const redis = options.scale.redisUrl
    ? new RedisStore({
        url: options.scale.redisUrl,
        timeoutMs: options.scale.redisTimeoutMs,
        logger: telemetry.logger,
        onError: (kind) => metrics.observeRedisError(kind),
      })
    : null;
  const shared = redis
    ? new SharedCache(
        redis,
        sharedKeyPrefix(printedSchema(), { urls: options.upstreamUrls, dialects: options.dialects }),
        options.upstreamTimeoutMs,
        (cache, result) => metrics.observeSharedCache(cache, result),
      )
    : null;
  if (redis) metrics.watchRedis(() => redis.up);
  const validatorCache = new ValidatorCache(
    options.validatorCacheTtlMs,
    Date.now,
    (hit) => metrics.observeCache('validators', hit),
    shared
      ? (fetch) =>
          shared.getOrFill('validators', 'list', options.validatorCacheTtlMs, fetch).then((got) => {
            // A list read from Redis teaches staking's account encoding as a fetched one does.
            upstreams.stake.learnAccountsFrom(got.value);
            return got;
          })
      : undefined,
  );

  const cors = new CorsPolicy(options.cors);
  // Per-client budgets of query cost (rate-limit.ts); RATE_LIMIT_POINTS=0: no limiter at all.
  const rateLimit =
    options.scale.rateLimitPoints > 0
      ? new RateLimit(
          options.scale,
          { logger: telemetry.logger, refused: () => metrics.observeRateLimited() },
          // The counters share the gateway's one Redis connection.
          redis?.client ?? null,
        )
      : null;
  const unknownEnumValue = (enumName: string) => metrics.observeUnknownEnum(enumName);
  // Every document's parse, validation, derived facts and (once hot) compiled plan, in one bounded
  // LRU (prepared.ts): Yoga's own parse and validation caches are off.
  const documents = new DocumentCache(options.documents, { compiled: () => metrics.observeCompilation() });
  const responses =
    options.responseCacheTtlMs > 0
      ? publicResponseCache({
          ttlMs: options.responseCacheTtlMs,
          maxEntries: options.responseCacheEntries,
          onLookup: (hit) => metrics.observeCache('responses', hit),
          shared,
        })
      : null;
  metrics.watchDocumentCaches(() => ({ ...documents.size(), responses: responses?.entries() ?? 0 }));

  const yoga = createYoga<Record<string, unknown>, Context>({
    schema,
    // CORS is answered by useAnswers, with the same headers on every path.
    cors: false,
    graphqlEndpoint: '/graphql',
    landingPage: false,
    maxRequestBodySize: options.limits.requestBytes,
    parserAndValidationCache: false,
    multipart: false,
    // GraphiQL's assets inlined in the page: it works offline and loads nothing from a CDN. Loaded
    // on first use only: the module weighs about 50 MB of memory, and production never serves it.
    renderGraphiQL: async (graphiqlOptions) =>
      (await import('@graphql-yoga/render-graphiql')).renderGraphiQL(graphiqlOptions),
    batching: options.limits.batch > 0 ? { limit: options.limits.batch } : false,
    // A welcome tab, then one tab per operation of operations/ (read on the first page).
    graphiql: options.graphiql
      ? graphiqlPageOptions({
          title: 'Chain gateway',
          welcomeQuery: EXAMPLE_QUERY,
          token: options.exampleToken,
          variables: options.exampleVariables,
        })
      : false,
    maskedErrors: { maskError: maskGatewayError },
    logging: yogaLogger(telemetry.logger),
    context: ({ request }): Context => ({
      callerToken: bearerToken(request.headers.get('authorization')),
      explorerToken: options.explorerToken,
      loaders: new Loaders({
        upstreams,
        validatorCache,
        scope: { signal: request.signal, trace: traceOf(request) },
      }),
      maxComplexity: options.limits.complexity,
      unknownEnumValue,
    }),
    plugins: [
      // First: every request gets its trace (and so its x-request-id), health checks included.
      useTelemetry(telemetry, operationLabel),
      useAnswers(cors),
      useOperationalEndpoints(upstreams, metrics, options.scrapeMetrics, redis),
      ...(persisted ? [usePersistedOnly(persisted)] : []),
      // A request must carry a header a plain HTML form cannot set (content-type application/json
      // counts), so that a cross-site form POST cannot act with a visitor's cookies.
      useCSRFPrevention({ requestHeaders: ['x-graphql-csrf', 'apollo-require-preflight'] }),
      ...limitPlugins(options.limits, options),
      // Before execution (and before the response cache): every operation is charged its cost.
      ...(rateLimit ? [rateLimit.plugin()] : []),
      // After the limits, whose rules are part of the validation it keeps (refusals included).
      // Queries hot enough are compiled by graphql-jit; the mutation and cold documents are interpreted.
      documents.plugin(),
      ...(responses ? [responses.plugin] : []),
    ],
  });

  return {
    yoga,
    metrics,
    listener: createRequestListener(yoga, options.limits.requestBytes, telemetry, cors, !persisted),
    upstreams,
    rateLimit,
    close: async () => {
      await Promise.all([upstreams.close(), redis?.close()]);
    },
  };
}
