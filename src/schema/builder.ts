import SchemaBuilder from '@pothos/core';
import ComplexityPlugin from '@pothos/plugin-complexity';
import { GatewayError } from '../errors.js';
import { type Context, pricedWithinLimitAlready } from '../graphql/context.js';
import CacheScopePlugin from './cache-scope.js';

interface GatewayTypes {
  Context: Context;
  DefaultFieldNullability: false;
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
  // Each field says what it costs (complexity) and whether its result may be shared (cacheScope).
  plugins: [ComplexityPlugin, CacheScopePlugin],
  defaultFieldNullability: false,
  complexity: {
    defaultComplexity: 1,
    // Short lists (search suggestions, rewards) count 10 items; paged fields set their own
    // multiplier from pageSize, and their `nodes` list multiplies by 1.
    defaultListMultiplier: 10,
    // An operation the rate limit priced before execution (rate-limit.ts) is known to be within
    // the limit: no second pricing. Otherwise the plugin prices it when the first root field runs.
    limit: (ctx) => (pricedWithinLimitAlready(ctx) ? {} : { complexity: ctx.maxComplexity }),
    complexityError: (kind, result) =>
      new GatewayError(
        `The query costs ${result.complexity}; at most ${result.maxComplexity} is allowed. Ask for smaller pages or fewer fields.`,
        'BAD_USER_INPUT',
        { limit: kind.toLowerCase(), cost: result.complexity },
      ),
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

/** The cost of a paged field: one upstream call, then each of up to pageSize (1..100) nodes. */
export const pagedCost = (args: { pageSize?: number | null }) => ({
  field: UPSTREAM_COST,
  multiplier: Math.min(Math.max(args.pageSize ?? 20, 1), 100),
});
