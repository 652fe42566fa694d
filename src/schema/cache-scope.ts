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
 * Whether a field's result may be shared between callers, declared on every field where it is
 * defined (`cacheScope:` beside `description:`), kept in the built schema's
 * `field.extensions.cacheScope`, and read from there by the response cache:
 * - `public`: the same for everyone (fit for the response cache and a CDN);
 * - `private`: one caller's, or live (a caller's token, live balances, keystroke data);
 * - `parent`: part of its parent's answer, computed from it alone: it adds no restriction.
 *
 * Forgetting is refused when the schema is built, not discovered in production:
 * - every root query field declares `public` or `private` (TypeScript requires the option);
 * - every field with a resolver of its own declares one of the three (the plugin throws, naming it);
 * - a field that exposes a property of its parent (`t.exposeString(…)`) is `parent` by definition;
 * - mutation fields are private whatever they say (a write is never shared);
 * - every subscription field declares `public` (each event answers every subscriber alike) or
 *   `private` (events read with one caller's credential): the live groups (graphql/plugins/
 *   live-groups.ts) put the credential in a group's key exactly when an operation selects a
 *   `private` field. The response cache never keeps a subscription, whatever its scope.
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
