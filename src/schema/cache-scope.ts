import SchemaBuilder, {
  BasePlugin,
  type FieldNullability,
  type InputFieldMap,
  type PothosOutputFieldConfig,
  PothosSchemaError,
  type SchemaTypes,
  type TypeParam,
} from '@pothos/core';
import type { GraphQLField } from 'graphql';

/**
 * Whether a field's result may be shared between callers: `public` (the same for everyone, fit for
 * the response cache and a CDN) or `private` (a caller's token, live balances, keystroke data).
 * Declared on the field where it is defined (`cacheScope:` beside `description:`), kept in the
 * built schema's `field.extensions.cacheScope`, and read from there by the response cache.
 *
 * Forgetting is refused when the schema is built, not discovered in production:
 * - every root query field declares its scope (TypeScript requires the option; the plugin throws);
 * - every other field whose resolver takes the request context declares it too: the context is
 *   the only way to an upstream (its loaders), so a field that can call one cannot stay silent;
 * - mutation fields are private whatever they say (a write is never shared).
 * Any other field is part of its parent's answer and inherits it: it adds no restriction.
 */
export type CacheScope = 'public' | 'private';

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
    }

    export interface QueryFieldOptions<
      Types extends SchemaTypes,
      Type extends TypeParam<Types>,
      Nullable extends FieldNullability<Type>,
      Args extends InputFieldMap,
      ResolveReturnShape,
    > {
      /** Required on every root query field: whether its result may be shared between callers. */
      cacheScope: CacheScope;
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

/** Whether a resolver can reach an upstream: it takes the request context (its third parameter). */
function takesContext(config: PothosOutputFieldConfig<SchemaTypes>): boolean {
  if (config.extensions?.pothosExposedField !== undefined) return false;
  const resolve = (config.extensions?.pothosOriginalResolve ?? config.resolve) as unknown;
  return typeof resolve === 'function' && resolve.length >= 3;
}

export class CacheScopePlugin<Types extends SchemaTypes> extends BasePlugin<Types> {
  override onOutputFieldConfig(config: PothosOutputFieldConfig<Types>): PothosOutputFieldConfig<Types> {
    const declared = (config.pothosOptions as { cacheScope?: unknown }).cacheScope;
    const coordinate = `${config.parentType}.${config.name}`;
    if (declared !== undefined && declared !== 'public' && declared !== 'private') {
      throw new PothosSchemaError(`${coordinate}: cacheScope must be 'public' or 'private'.`);
    }
    let scope: CacheScope | undefined = declared;
    if (config.kind === 'Mutation' || config.kind === 'Subscription') {
      if (declared === 'public') throw new PothosSchemaError(`${coordinate}: a write is never public.`);
      scope = 'private';
    } else if (scope === undefined && config.kind === 'Query') {
      throw new PothosSchemaError(
        `${coordinate} declares no cacheScope: every root query field says whether its result may be shared between callers.`,
      );
    } else if (scope === undefined && takesContext(config as PothosOutputFieldConfig<SchemaTypes>)) {
      throw new PothosSchemaError(
        `${coordinate} declares no cacheScope: its resolver takes the context, so it may call an upstream.`,
      );
    }
    if (scope === undefined) return config;
    return { ...config, extensions: { ...config.extensions, cacheScope: scope } };
  }
}

// Once per process, however often a test runner evaluates this module.
const registered = (SchemaBuilder as unknown as { plugins: Record<string, unknown> }).plugins;
if (!registered[pluginName]) SchemaBuilder.registerPlugin(pluginName, CacheScopePlugin);

export default pluginName;

/** A built field's declared scope; undefined when it declared none (it inherits its parent's). */
export function declaredCacheScope(field: GraphQLField<unknown, unknown>): CacheScope | undefined {
  const scope = field.extensions.cacheScope;
  return scope === 'public' || scope === 'private' ? scope : undefined;
}
