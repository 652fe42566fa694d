import SchemaBuilder from '@pothos/core';
import ComplexityPlugin from '@pothos/plugin-complexity';
import RelayPlugin from '@pothos/plugin-relay';
import ScopeAuthPlugin from '@pothos/plugin-scope-auth';
import ValidationPlugin from '@pothos/plugin-validation';
import { unauthenticated } from '../errors.js';
import CacheScopePlugin from './cache-scope.js';
import { type Context, explorerTokenOf } from './context.js';
import { decodeGlobalID, encodeGlobalID, nodeCost, nodesCost } from './ids.js';
import { globalId, globalIds, ruleError } from './rules.js';

interface GatewayTypes {
  Context: Context;
  DefaultFieldNullability: false;
  /**
   * What a field may require of the caller (`authScopes:` on the field): `callerToken`, the caller's
   * own bearer token; `explorerToken`, the caller's or else the server's EXPLORER_TOKEN.
   */
  AuthScopes: { callerToken: boolean; explorerToken: boolean };
  Scalars: {
    Amount: { Input: string; Output: string };
    Decimal: { Input: string; Output: string };
    BigInt: { Input: string; Output: string };
    DateTime: { Input: string; Output: string };
    JSON: { Input: unknown; Output: unknown };
  };
}

/** The builder's resolved type parameters, for helpers that take refs or argument builders. */
export type Types = PothosSchemaTypes.ExtendDefaultTypes<GatewayTypes>;

/** Cost of a field that calls an upstream (fields that only read loaded data cost 1). */
export const UPSTREAM_COST = 10;

/** The schema builder, and nothing else: each domain file under schema/ adds its own types. */
export const builder = new SchemaBuilder<GatewayTypes>({
  // Each field declares its rules beside its type: what its arguments must be (`validate:`, checked
  // before the resolver), what it needs of the caller (`authScopes:`), what it costs (`complexity:`)
  // and whether its result may be shared (`cacheScope:`).
  // Relay first: its id decoding then runs after the argument rules (the last plugin's runs first).
  plugins: [RelayPlugin, ValidationPlugin, ScopeAuthPlugin, ComplexityPlugin, CacheScopePlugin],
  relay: {
    encodeGlobalID,
    decodeGlobalID,
    nodeTypeOptions: {
      description:
        'An object with a global id: fetch it again with `node(id:)`. The id is opaque and stable, the same whichever upstream dialect or address encoding the data came in.',
    },
    idFieldOptions: {
      cacheScope: 'parent',
      description: 'The global object id: opaque, stable, the same key for the same chain object.',
    },
    nodeQueryOptions: {
      cacheScope: 'private',
      // Each id is charged the upstream read its kind makes (ids.ts).
      complexity: nodeCost,
      description:
        'One object by its global id; null when nothing has that id any more (and for a buyback round, which the staking service does not read back). Objects behind a token (contracts, failed transactions) need one.',
      args: { id: { description: 'A global id this graph handed out.', validate: globalId('id') } },
    },
    nodesQueryOptions: {
      cacheScope: 'private',
      complexity: nodesCost,
      description:
        'Objects by their global ids, in order, at most 100; null for an id of nothing (an error beside it when its upstream failed). Read through the same loaders as the other fields, one upstream call per kind where the upstreams allow.',
      args: {
        ids: {
          description: 'Global ids this graph handed out, at most 100.',
          validate: globalIds('ids', 100),
        },
      },
    },
  },
  defaultFieldNullability: false,
  validation: { validationError: (failure) => ruleError(failure) },
  scopeAuth: {
    authScopes: (ctx) => ({
      callerToken: ctx.callerToken !== null,
      explorerToken: explorerTokenOf(ctx) !== null,
    }),
    // A subscription's scopes are checked once, when it starts, not at each event.
    authorizeOnSubscribe: true,
    // Without the token a field needs, it answers UNAUTHENTICATED and calls no upstream; a
    // subscription gets no stream (HTTP 401, so that an EventSource does not retry).
    unauthorizedError: (_parent, _ctx, info, result) =>
      unauthenticated(
        'scope' in result.failure && result.failure.scope === 'callerToken'
          ? `${info.fieldName} needs an \`Authorization: Bearer <token>\` header.`
          : 'This field needs an `Authorization: Bearer <token>` header.',
        info.parentType.name === 'Subscription' ? { http: { status: 401 } } : {},
      ),
  },
  complexity: {
    defaultComplexity: 1,
    // Short lists (search suggestions, rewards) count 10 items; paged fields set their own
    // multiplier from pageSize (or first), and their `nodes` and `edges` lists multiply by 1.
    defaultListMultiplier: 10,
    // Declarations only: every operation is priced once before it runs, by the pipeline's pricing
    // step (graphql/plugins/cost.ts), which also refuses it over MAX_COMPLEXITY.
    disabled: true,
  },
});

builder.queryType({
  description:
    'Reads of chain, search and staking data. Every root field is nullable on purpose: when its upstream fails it is null, with a coded error in `errors`, and the other fields of the same request still answer (a failing non-null root field would blank the whole response).',
});

/**
 * An enum value read from an upstream, or UNSPECIFIED for one outside the graph's enum (a service
 * may add values before the gateway knows them): never an error, counted in /metrics.
 */
export function knownOrUnspecified<V extends string>(
  ctx: Context,
  enumName: string,
  value: V | null,
): V | 'UNSPECIFIED' {
  if (value !== null) return value;
  ctx.unknownEnumValue(enumName);
  return 'UNSPECIFIED';
}

/** Said on every root query field: why it is nullable. */
export const NULL_ON_FAILURE = ' Null, with a coded error, when its upstream fails.';
builder.mutationType({ description: 'Writes. Each is sent to its upstream exactly once.' });
