import { blockFieldSuggestionsPlugin } from '@escape.tech/graphql-armor-block-field-suggestions';
import { useDisableIntrospection } from '@graphql-yoga/plugin-disable-introspection';
import { renderGraphiQL } from '@graphql-yoga/render-graphiql';
import { GraphQLError } from 'graphql';
import { createYoga, maskError, type Plugin, type YogaServerInstance } from 'graphql-yoga';
import type { Config } from './config.js';
import { bearerToken, type Context } from './context.js';
import type { UpstreamName } from './errors.js';
import { createLoaders, ValidatorCache } from './loaders.js';
import { schema } from './schema/index.js';
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
>;

export interface GatewayOptions extends GatewaySettings {
  upstreamUrls: Record<UpstreamName, string>;
  /** Shown in GraphiQL's headers example (the devnet's token in devnet mode). */
  exampleToken?: string;
}

export interface Gateway {
  yoga: YogaServerInstance<Record<string, unknown>, Context>;
  upstreams: Upstreams;
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

/** `/healthz`: the process is up. `/readyz`: 200 only when every upstream answers. */
function useHealth(upstreams: Upstreams): Plugin {
  const json = (status: number, body: unknown) =>
    new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
  return {
    async onRequest({ url, endResponse }) {
      if (url.pathname === '/healthz') endResponse(json(200, { status: 'ok' }));
      else if (url.pathname === '/readyz') {
        const upstreamsUp = await upstreams.ping();
        const ready = Object.values(upstreamsUp).every(Boolean);
        endResponse(
          json(ready ? 200 : 503, { status: ready ? 'ready' : 'not ready', upstreams: upstreamsUp }),
        );
      }
    },
  };
}

/**
 * Pinned error masking: whatever NODE_ENV says, an unexpected error reaches the client as a bare
 * INTERNAL_SERVER_ERROR, never with its message, stack or cause. Errors raised before any field
 * runs (variable values that do not coerce, such as an Int over 2^31) are the caller's input.
 */
function maskGatewayError(error: unknown, message: string): Error {
  if (error instanceof GraphQLError && !error.path && error.extensions.code === undefined) {
    return new GraphQLError(error.message, { nodes: error.nodes, extensions: { code: 'BAD_USER_INPUT' } });
  }
  return maskError(error, message, false);
}

/** The whole gateway as a Yoga instance, buildable without a socket (tests call `yoga.fetch`). */
export function createGateway(options: GatewayOptions): Gateway {
  const upstreams = createUpstreams({
    urls: options.upstreamUrls,
    timeoutMs: options.upstreamTimeoutMs,
    connections: options.upstreamConnections,
    resilience: {
      failureThreshold: options.circuitFailureThreshold,
      halfOpenAfterMs: options.circuitHalfOpenMs,
    },
  });
  const validatorCache = new ValidatorCache(options.validatorCacheTtlMs);

  const yoga = createYoga<Record<string, unknown>, Context>({
    schema,
    graphqlEndpoint: '/graphql',
    landingPage: false,
    // GraphiQL's assets inlined in the page: it works offline and loads nothing from a CDN.
    renderGraphiQL,
    batching: false,
    graphiql: options.graphiql
      ? {
          title: 'Chain gateway',
          defaultQuery: EXAMPLE_QUERY,
          headers: JSON.stringify(
            { Authorization: `Bearer ${options.exampleToken ?? '<your token>'}` },
            null,
            2,
          ),
        }
      : false,
    maskedErrors: { maskError: maskGatewayError },
    context: ({ request }): Context => ({
      callerToken: bearerToken(request.headers.get('authorization')),
      explorerToken: options.explorerToken,
      loaders: createLoaders({ upstreams, validatorCache, signal: request.signal }),
    }),
    plugins: [
      useHealth(upstreams),
      ...(options.introspection ? [] : [useDisableIntrospection()]),
      ...(options.fieldSuggestions ? [] : [blockFieldSuggestionsPlugin()]),
    ],
  });

  return {
    yoga,
    upstreams,
    close: () => upstreams.close(),
  };
}
