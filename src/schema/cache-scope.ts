import SchemaBuilder, {
  BasePlugin,
  type FieldNullability,
  type InputFieldMap,
  type PothosOutputFieldConfig,
  PothosSchemaError,
  type SchemaTypes,
  type TypeParam,
} from '@pothos/core';
import type { GraphQLField, GraphQLFieldResolver } from 'graphql';
import type { RequestTrace } from '../ops/request-trace.js';
import type { Block, Transaction } from '../upstream/models.js';

/**
 * Whether a field's result may be shared between callers, declared on every field where it is
 * defined (`cacheScope:` beside `description:`), kept in the built schema's
 * `field.extensions.cacheScope`, and read from there by the response cache and the live groups:
 * - `public`: the same for everyone (fit for the response cache and a CDN);
 * - `private`: one caller's, or live (a caller's token, live balances, keystroke data);
 * - `parent`: part of its parent's result, computed from it alone: it adds no restriction.
 *
 * Forgetting is refused when the schema is built, not found in production: a root query field
 * declares `public` or `private` (TypeScript requires it), any other field with a resolver of its
 * own one of the three (the plugin throws, naming it); an exposed property is `parent`; a mutation
 * field is private whatever it says. A subscription field declares `public` (every subscriber
 * alike) or `private` (read with one caller's credential, which graphql/plugins/live-groups.ts
 * then puts in the group's key); the response cache never keeps a subscription.
 */
export type CacheScope = 'public' | 'private' | 'parent';

const pluginName = 'cacheScope';

declare global {
  export namespace PothosSchemaTypes {
    export interface Plugins<Types extends SchemaTypes> {
      cacheScope: CacheScopePlugin<Types>;
    }

    export interface FieldOptions<
      Types extends SchemaTypes = SchemaTypes,
      ParentShape = unknown,
      Type extends TypeParam<Types> = TypeParam<Types>,
      Nullable extends FieldNullability<Type> = FieldNullability<Type>,
      Args extends InputFieldMap = InputFieldMap,
      ResolveShape = unknown,
      ResolveReturnShape = unknown,
    > {
      /** Whether the result may be shared between callers (see schema/cache-scope.ts). */
      cacheScope?: CacheScope;
      /**
       * A public field that reads chain history by height or hash (a block, a transaction): its
       * result is final when the chain says so (see `noteRead`); any other public field reads latest state.
       */
      chainHistory?: boolean;
    }

    export interface QueryFieldOptions<
      Types extends SchemaTypes,
      Type extends TypeParam<Types>,
      Nullable extends FieldNullability<Type>,
      Args extends InputFieldMap,
      ResolveReturnShape,
    > {
      /** Required on every root query field: whether its result may be shared between callers. */
      cacheScope: 'public' | 'private';
    }

    export interface MutationFieldOptions<
      Types extends SchemaTypes,
      Type extends TypeParam<Types>,
      Nullable extends FieldNullability<Type>,
      Args extends InputFieldMap,
      ResolveReturnShape,
    > {
      /** A write is never shared. */
      cacheScope?: 'private';
    }
  }
}

const SCOPES: readonly unknown[] = ['public', 'private', 'parent'];

export class CacheScopePlugin<Types extends SchemaTypes> extends BasePlugin<Types> {
  override onOutputFieldConfig(config: PothosOutputFieldConfig<Types>): PothosOutputFieldConfig<Types> {
    const declared = (config.pothosOptions as { cacheScope?: unknown }).cacheScope;
    const coordinate = `${config.parentType}.${config.name}`;
    if (declared !== undefined && !SCOPES.includes(declared)) {
      throw new PothosSchemaError(`${coordinate}: cacheScope must be 'public', 'private' or 'parent'.`);
    }
    let scope = declared as CacheScope | undefined;
    if (config.kind === 'Mutation') {
      if (declared === 'public') throw new PothosSchemaError(`${coordinate}: a write is never public.`);
      scope = 'private';
    } else if (config.kind === 'Subscription' && scope !== 'public' && scope !== 'private') {
      throw new PothosSchemaError(
        `${coordinate} declares no cacheScope: every subscription field says whether its events answer every subscriber alike ('public') or depend on the caller ('private').`,
      );
    } else if (config.kind === 'Query' && (scope === undefined || scope === 'parent')) {
      throw new PothosSchemaError(
        `${coordinate} declares no cacheScope: every root query field says whether its result may be shared between callers ('public' or 'private').`,
      );
    } else if (scope === undefined && config.extensions?.pothosExposedField !== undefined) {
      scope = 'parent';
    } else if (scope === undefined) {
      throw new PothosSchemaError(
        `${coordinate} declares no cacheScope: a field with a resolver of its own says whether its result may be shared ('public', 'private', or 'parent' when it only reads its parent).`,
      );
    }
    return { ...config, extensions: { ...config.extensions, cacheScope: scope } };
  }

  /**
   * What a public field read, noted in its request's trace (ChainReads): final history, or latest
   * state. Anything public not declared `chainHistory` reads latest state (fail closed); `parent`
   * and private fields note nothing (a private answer is never kept).
   */
  override wrapResolve(
    resolver: GraphQLFieldResolver<unknown, Types['Context'], object>,
    config: PothosOutputFieldConfig<Types>,
  ): GraphQLFieldResolver<unknown, Types['Context'], object> {
    if (config.extensions?.cacheScope !== 'public' || config.kind === 'Subscription') return resolver;
    if (!(config.pothosOptions as { chainHistory?: unknown }).chainHistory) {
      return (parent, args, context, info) => {
        const reads = readsOf(context);
        if (reads) reads.latest = true;
        return resolver(parent, args, context, info);
      };
    }
    return (parent, args, context, info) => {
      const value = resolver(parent, args, context, info);
      if (value instanceof Promise) return value.then((v: unknown) => noteRead(context, v));
      return noteRead(context, value);
    };
  }
}

type ChainContext = {
  loaders?: { scope?: { trace?: RequestTrace } };
  live?: { head: { height(): number | null } };
};
const readsOf = (context: unknown) => (context as ChainContext).loaders?.scope?.trace?.reads;

/**
 * What a history field's result says of its request's answer: final at its height when it is a
 * block whose action count is complete below the chain's head, or a transaction in a block below
 * the head (its block is complete once the next one exists, as the scan service marks it);
 * anything else (none found: it may come; the head unknown) is latest state.
 */
function noteRead<T>(context: unknown, value: T): T {
  const reads = readsOf(context);
  if (!reads) return value;
  const head = (context as ChainContext).live?.head.height() ?? null;
  const read = value as Partial<Block & Transaction> | null;
  const height =
    read && typeof read.actionCountComplete === 'boolean'
      ? read.actionCountComplete
        ? read.height
        : undefined
      : read?.blockHeight;
  if (head !== null && typeof height === 'number' && height < head)
    reads.final = Math.max(reads.final, height);
  else reads.latest = true;
  return value;
}

// Once per process, however often a test runner evaluates this module.
const registered = (SchemaBuilder as unknown as { plugins: Record<string, unknown> }).plugins;
if (!registered[pluginName]) SchemaBuilder.registerPlugin(pluginName, CacheScopePlugin);

export default pluginName;

/** A built field's scope; undefined only for a field this plugin never saw (introspection). */
export function declaredCacheScope(field: GraphQLField<unknown, unknown>): CacheScope | undefined {
  const scope = field.extensions.cacheScope;
  return SCOPES.includes(scope) ? (scope as CacheScope) : undefined;
}
