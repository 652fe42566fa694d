import type { ServerResponse } from 'node:http';
import { useDeferStream } from '@graphql-yoga/plugin-defer-stream';
import { RequestCache } from '@pothos/plugin-scope-auth';
import { createYoga, type Plugin, type YogaServerInstance, type YogaServerOptions } from 'graphql-yoga';
import { type GatewayOptions, GRAPHQL_PATH } from '../config.js';
import type { CorsPolicy } from '../exchange/headers.js';
import { type MaskLog, maskedResult, maskUnexpected, publicError } from '../exchange/public-errors.js';
import type { LiveUpdates } from '../live/index.js';
import { blockAt } from '../live/sources.js';
import { StreamHandle } from '../live/streams.js';
import { yogaLogger } from '../ops/logger.js';
import { type Telemetry, traceOf } from '../ops/request-trace.js';
import { clientOf, type RateLimit, rateLimited } from '../scale/rate-limit.js';
import type { RedisStore } from '../scale/redis.js';
import { UPSTREAM_COST } from '../schema/builder.js';
import { bearerToken, type Context, explorerTokenOf, resumeAfter } from '../schema/context.js';
import type { CursorCodec } from '../schema/cursors.js';
import { schema } from '../schema/index.js';
import { Loaders, type ValidatorCache } from '../schema/loaders.js';
import type { Upstreams } from '../upstream/index.js';
import { EXAMPLE_QUERY, type GraphiQLPage, graphiqlPage, graphiqlPageOptions } from './graphiql.js';
import { guardPipeline, pipelineWatcher } from './guard.js';
import type { DocumentCache } from './pipeline/documents.js';
import { type PartPlugin, partPlugin, type RequestPart } from './pipeline/parts.js';
import { useAnswers } from './plugins/answers.js';
import { automaticPersistedQueries, type PersistedQueryStore } from './plugins/apq.js';
import { useRequestBodyLimit } from './plugins/body-limit.js';
import { useMinChainHeight } from './plugins/chain-height.js';
import { usePricing } from './plugins/cost.js';
import { useCsrfPrevention } from './plugins/csrf.js';
import { useOperationalEndpoints } from './plugins/endpoints.js';
import { limitPlugins } from './plugins/limits.js';
import { useLiveGroups } from './plugins/live-groups.js';
import { type Manifest, usePersistedOnly } from './plugins/persisted.js';
import type { PublicResponseCache } from './plugins/response-cache.js';
import { useSubscriptionLimits } from './plugins/subscriptions.js';
import { operationLabeler, useTelemetry } from './plugins/telemetry.js';
import { Routing, withHttpStage } from './routing.js';

export type GatewayYoga = YogaServerInstance<Record<string, unknown>, Context>;

/** What the Yoga instance is wired to: the parts the gateway built once for every request. */
export interface YogaParts {
  telemetry: Telemetry;
  cors: CorsPolicy;
  upstreams: Upstreams;
  validatorCache: ValidatorCache;
  redis: RedisStore | null;
  rateLimit: RateLimit | null;
  documents: DocumentCache;
  responses: PublicResponseCache | null;
  live: LiveUpdates;
  cursors: CursorCodec;
  /** Apollo's automatic persisted queries; null with a persisted-operations manifest. */
  persistedQueries: PersistedQueryStore | null;
  /** A persisted-operations manifest: when given, no other operation runs. */
  manifest: Manifest | null;
  /** Whether the process is shutting down (`/readyz` answers 503). */
  draining: () => boolean;
}

/**
 * The request pipeline, in order: every plugin of the one envelop pipeline that both transports
 * (http/fast-path.ts and Yoga's own) run.
 */
function pipeline(
  options: GatewayOptions,
  parts: YogaParts,
  logMasked: MaskLog,
  graphiql: GraphiQLPage | null,
): Plugin[] {
  const apq = parts.persistedQueries
    ? automaticPersistedQueries(parts.persistedQueries, parts.rateLimit)
    : null;
  return [
    // First: every request gets its exchange (its trace, and so its x-request-id), health checks included.
    useAnswers(parts.telemetry, parts.cors),
    useTelemetry(operationLabeler({ forget: (name) => parts.telemetry.metrics.forgetOperation(name) })),
    useOperationalEndpoints({
      upstreams: parts.upstreams,
      metrics: parts.telemetry.metrics,
      scrape: options.scrapeMetrics,
      metricsPort: options.metricsPort,
      redis: parts.redis,
      live: parts.live,
      draining: parts.draining,
    }),
    // After useAnswers' onResponse: GraphiQL's page compressed, tagged, 304 while unchanged.
    ...(graphiql ? [graphiql.plugin] : []),
    // Either a manifest says which operations run, or clients register theirs (Apollo's APQ).
    ...(parts.manifest ? [usePersistedOnly(parts.manifest)] : []),
    ...(apq ? [apq.lookup] : []),
    useCsrfPrevention(),
    useRequestBodyLimit(options.limits.requestBytes),
    ...limitPlugins(options.limits, options),
    // @defer and @stream: multipart/mixed (or SSE) answers, interpreted, never cached.
    withHttpStage(useDeferStream() as Plugin, {
      declines: ({ shape }) =>
        shape() === 'incremental' ? 'incremental delivery, which Yoga writes (multipart or SSE)' : null,
    }),
    // A subscription takes a place among the streams of its client and of the process, or is refused.
    useSubscriptionLimits(options.live, options.scale, parts.telemetry.metrics),
    // Before execution (and before the response cache): every operation is priced, refused over
    // MAX_COMPLEXITY, and charged its cost to its client's budget.
    usePricing(parts.rateLimit),
    // Priced first (a wait is charged like the request), then waits for the chain to reach the
    // height a `Min-Chain-Height` asks for, before the response cache judges its entries by it.
    useMinChainHeight(parts.live.head, options.live.minChainHeightWaitMs),
    // A document sent with its hash is kept only now: proven, valid, priced, and charged its size.
    ...(apq ? [apq.register] : []),
    // After the limits, whose rules are part of the validation it keeps (refusals included).
    // Queries hot enough are compiled by graphql-jit; the mutation and cold documents are interpreted.
    parts.documents.plugin(),
    ...(parts.responses ? [parts.responses.plugin] : []),
    // Last, so that every other plugin's onSubscribe ran (and may have refused) before a subscriber
    // joins a group of alike subscribers: one execution per event for the group.
    useLiveGroups(liveGroupOptions(options, parts, logMasked)),
  ];
}

/** How subscribers of alike subscriptions share one execution per event (live-groups.ts). */
function liveGroupOptions(
  options: GatewayOptions,
  parts: YogaParts,
  logMasked: MaskLog,
): Parameters<typeof useLiveGroups>[0] {
  return {
    backlog: options.live.backlog,
    catchUp: options.live.catchUp,
    metrics: parts.telemetry.metrics,
    groupContext: (member, signal) => ({
      callerToken: member.callerToken,
      explorerToken: member.explorerToken,
      loaders: new Loaders({
        upstreams: parts.upstreams,
        validatorCache: parts.validatorCache,
        scope: { signal },
      }),
      maxComplexity: member.maxComplexity,
      // The group is the live one: a resuming member's replay is its own (live-groups.ts).
      resumeAfter: null,
      unknownEnumValue: member.unknownEnumValue,
      live: member.live,
      // A group's source ends when the group closes, never with one member's stream.
      stream: new StreamHandle(),
      cursors: member.cursors,
    }),
    stampOf: (payload) => parts.live.stampOf(payload),
    mask: (error) => publicError(error, logMasked),
    missed: (field, after) =>
      field === 'blockAdded'
        ? { ...parts.live.missedBlocks(after), ahead: () => blockAhead(parts, after) }
        : null,
    // Reads a replay makes are priced as the queries that would make them: one upstream read each.
    charge: async (context, reads) => {
      const { rateLimit } = parts;
      const over = rateLimit
        ? await rateLimit.charge(clientOf(context, rateLimit.client), reads * UPSTREAM_COST)
        : null;
      return over ? rateLimited(over.retryAfterMs) : null;
    },
    admit: async (context) => {
      const token = explorerTokenOf(context);
      return token === null ? null : parts.live.checkToken(token, context.loaders.scope);
    },
  };
}

/**
 * Whether block `after` (a Last-Event-ID) is past the chain's head: not if this process delivered
 * it, else by one read of it (the chain the id came from may have started again since).
 */
async function blockAhead(parts: YogaParts, after: number): Promise<boolean> {
  const delivered = parts.live.hub.recent('blocks');
  const newest = delivered.at(-1);
  if (newest?.kind === 'block' && newest.block.height >= after) return false;
  return (await blockAt(parts.upstreams, after, {})) === null;
}

/** What Yoga's context function is handed that the gateway's context reads. */
export interface ContextSource {
  request: { headers: { get(name: string): string | null }; signal: AbortSignal | unknown };
  res?: unknown;
  sse?: unknown;
}

/** The context of one request, whichever path runs it: what every resolver sees. */
export function gatewayContext(
  options: GatewayOptions,
  parts: YogaParts,
): (source: ContextSource) => Context {
  const { upstreams, validatorCache, telemetry } = parts;
  const unknownEnumValue = (enumName: string) => telemetry.metrics.observeUnknownEnum(enumName);
  return ({ request, res, sse }) => ({
    callerToken: bearerToken(request.headers.get('authorization')),
    explorerToken: options.explorerToken,
    loaders: new Loaders({
      upstreams,
      validatorCache,
      scope: { signal: request.signal as AbortSignal, trace: traceOf(request) },
    }),
    maxComplexity: options.limits.complexity,
    resumeAfter: resumeAfter(request.headers.get('last-event-id')),
    unknownEnumValue,
    live: parts.live,
    // A subscriber that stops reading is cut off: its connection closed. The node:http adapter
    // (http/sse.ts) also takes its group member over, to write the stream itself.
    stream: (sse as StreamHandle | undefined) ?? new StreamHandle(res as ServerResponse | undefined),
    cursors: parts.cursors,
  });
}

/**
 * The end of an execution for Pothos' scope-auth, whose scopes a request computes once and keeps
 * in a WeakMap keyed by the request's context: the entry is deleted as soon as the execution is
 * done. Left to the WeakMap, it costs far more than its few bytes: V8's scavenger (Node 20) keeps
 * an old WeakMap's young keys and values alive, and the entry's cache holds the context, which holds
 * the request. Each request that checked a scope (the mutation, the explorer's fields) then
 * survived its scavenges whole and was promoted: S5 promoted 1.3 MB per scavenge (the baseline
 * 40 KB) and its scavenges paused 4.4 ms instead of 1.2 (docs/performance.md).
 */
function useScopeRelease(): PartPlugin {
  const part: RequestPart = ({ contextValue }) => ({
    done: () => {
      RequestCache.clearForContext(contextValue as object);
      return undefined;
    },
  });
  return partPlugin(() => part);
}

/**
 * The masking of an executed result's errors (public-errors.ts, step 1), logged as Yoga logs what
 * it masks: the last part of every prepared request, which runs without Yoga's masking. On the
 * first path Yoga's masking (the same step) runs after it and finds nothing left to mask.
 */
function useResultMasking(log: MaskLog): PartPlugin {
  const part: RequestPart = () => ({ done: (result) => maskedResult(result, log) });
  return partPlugin(() => part);
}

/**
 * The gateway's Yoga instance (schema, context, GraphiQL and the pipeline, buildable without a
 * socket), and what its plugins decide for the node:http adapter.
 */
export function createGatewayYoga(
  options: GatewayOptions,
  parts: YogaParts,
  context: (source: ContextSource) => Context,
): { yoga: GatewayYoga; routing: Routing } {
  const logger = yogaLogger(parts.telemetry.logger);
  // What is masked is logged as Yoga logs it, on every path (public-errors.ts).
  const logMasked: MaskLog = (error) => logger.error(error);
  const graphiql = options.graphiql ? graphiqlPage() : null;
  const plugins = [
    ...pipeline(options, parts, logMasked, graphiql),
    useScopeRelease(),
    useResultMasking(logMasked),
  ];
  // A hot operation's prepared request is made of the parts these plugins contribute.
  parts.documents.prepareWith(plugins);
  const yogaOptions = yogaOptionsFor(options, logger, context, graphiql);
  // The guard (guard.ts) checks the gateway's plugins; the final list is kept for its inventory test.
  guardPipeline(plugins, parts.documents.plugin());
  const final = pipelineWatcher();
  const yoga = createYoga<Record<string, unknown>, Context>({
    ...yogaOptions,
    plugins: [...plugins, final.plugin],
  });
  pipelines.set(yoga, { plugins: final.plugins(), given: new Set([...plugins, final.plugin]) });
  return { yoga, routing: new Routing(plugins) };
}

/** Yoga's final plugin list, and which of them the gateway gave it. */
export interface Pipeline {
  plugins: readonly Plugin[];
  given: ReadonlySet<Plugin>;
}
const pipelines = new WeakMap<GatewayYoga, Pipeline>();
/** The final plugin list of a gateway's Yoga (the guard's inventory test reads it). */
export const pipelineOf = (yoga: GatewayYoga): Pipeline | undefined => pipelines.get(yoga);

/** Yoga's options but the plugins. */
function yogaOptionsFor(
  options: GatewayOptions,
  logger: ReturnType<typeof yogaLogger>,
  context: (source: ContextSource) => Context,
  graphiql: GraphiQLPage | null,
) {
  return {
    schema,
    // CORS is answered by useAnswers, with the same headers on every path.
    cors: false,
    graphqlEndpoint: GRAPHQL_PATH,
    landingPage: false,
    // The body cap is useRequestBodyLimit's: Yoga's holds about 10 KB per open stream.
    maxRequestBodySize: false,
    parserAndValidationCache: false,
    multipart: false,
    // Rendered once, on first use (graphiql.ts), and sent compressed by its plugin.
    ...(graphiql ? { renderGraphiQL: graphiql.render } : {}),
    batching: options.limits.batch > 0 ? { limit: options.limits.batch } : false,
    // A welcome tab, then one tab per operation of operations/ (read on the first page).
    graphiql: graphiql
      ? graphiqlPageOptions({
          title: 'Chain gateway',
          welcomeQuery: EXAMPLE_QUERY,
          token: options.exampleToken,
          variables: options.exampleVariables,
        })
      : false,
    maskedErrors: { maskError: maskUnexpected },
    logging: logger,
    context: (initial: unknown) => context(initial as ContextSource),
  } satisfies YogaServerOptions<Record<string, unknown>, Context>;
}
