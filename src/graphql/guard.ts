import type { Plugin } from 'graphql-yoga';
import { hasPart } from './pipeline/parts.js';
import { HTTP_STAGE_HOOKS, hasHttpStage } from './routing.js';

/**
 * The start-time guard over Yoga's final plugin list: Yoga's own plugins (its engine, context,
 * request parsers, masking…) and every plugin the gateway gave it, flattened as envelop runs them.
 * Two paths skip parts of that list, so every plugin must say how they cover it, or the gateway
 * does not start:
 *
 * - A prepared request (graphql/pipeline/) runs plugins' parts, not their execution hooks: a plugin
 *   that works on every execution has a part, or is Yoga's own and named below with what the
 *   prepared request does in its place.
 * - The node:http adapter (http/fast-path.ts) skips the HTTP stage: a plugin with an HTTP-stage hook
 *   says what it decides there (routing.ts), or is Yoga's own, whose request reading and routes the
 *   adapter's own reading replaces (it takes a JSON POST of one request, a GET of a hot query, or an
 *   EventSource GET, on the GraphQL endpoint only). Yoga's refusal of a mutation over GET hangs on
 *   parsing, which a prepared request skips: the adapter takes a GET only for a prepared query.
 *
 * Yoga's own plugins are told by their make, not by their place: each is compared with those of a
 * Yoga built with the same options and no plugin of the gateway (same hooks, same code).
 */

/** The hooks a prepared request skips (a subscription, an onSubscribe's business, is never prepared). */
const EXECUTION_HOOKS = ['onExecute', 'onContextBuilding', 'onExecutionResult'] as const;

/** One of Yoga's own plugins that works on every execution, and what a prepared request does instead. */
export interface Substitute {
  /** The plugin's hooks, which tell it apart among Yoga's own. */
  hooks: readonly string[];
  name: string;
  /** What runs in its place on a prepared request. */
  instead: string;
}

/** What the prepared request substitutes of Yoga's own plugins. */
export const SUBSTITUTED: readonly Substitute[] = [
  {
    hooks: ['onExecute', 'onParse', 'onValidate', 'onSubscribe'],
    name: "Yoga's engine (useEngine)",
    instead: 'the compiled plan of graphql-jit, on a document the engine parsed and validated once',
  },
  {
    hooks: ['onContextBuilding'],
    name: "Yoga's context (useExtendContext)",
    instead: 'the same context function (gatewayContext in yoga.ts)',
  },
  {
    hooks: ['onPluginInit', 'onExecute', 'onSubscribe'],
    name: "Yoga's error masking (useMaskedErrors)",
    instead: "useResultMasking's part: public-errors.ts, as Yoga's maskError",
  },
];

const hooksOf = (plugin: Plugin): string[] =>
  Object.keys(plugin).filter((key) => typeof (plugin as Record<string, unknown>)[key] === 'function');

/** Whether two plugins were made by the same factory: the same hooks, each of the same code. */
function sameMake(a: Plugin, b: Plugin): boolean {
  const hooks = hooksOf(a);
  const other = hooksOf(b);
  if (hooks.length !== other.length) return false;
  return hooks.every(
    (hook) =>
      String((a as Record<string, unknown>)[hook]) === String((b as Record<string, unknown>)[hook] ?? ''),
  );
}

const sameHooks = (plugin: Plugin, hooks: readonly string[]) => {
  const own = hooksOf(plugin);
  return own.length === hooks.length && hooks.every((hook) => own.includes(hook));
};

/**
 * Refuses a pipeline that a path would skip part of: the reason names the plugin (its hooks) and
 * what it lacks. `yogaOwn` is the list of a Yoga with no plugin of the gateway; `engine` the
 * document cache's own plugin, which is the prepared request's engine.
 */
export function guardPipeline(
  plugins: readonly (Plugin | false | null | undefined)[],
  yogaOwn: readonly Plugin[],
  engine: Plugin,
  substituted: readonly Substitute[] = SUBSTITUTED,
): void {
  for (const plugin of plugins) {
    if (!plugin || plugin === engine) continue;
    const hooks = hooksOf(plugin);
    const yoga = yogaOwn.some((own) => sameMake(own, plugin));
    if (!hasPart(plugin) && EXECUTION_HOOKS.some((hook) => hooks.includes(hook))) {
      if (!yoga || !substituted.some((s) => sameHooks(plugin, s.hooks)))
        throw new Error(
          `A plugin that runs on every execution has no part in prepared requests (hooks: ${hooks.join(', ')}).`,
        );
    }
    if (!yoga && !hasHttpStage(plugin) && HTTP_STAGE_HOOKS.some((hook) => hooks.includes(hook)))
      throw new Error(
        `A plugin that acts at the HTTP stage does not say what it decides there (hooks: ${hooks.join(', ')}).`,
      );
  }
}

/**
 * A plugin that sees Yoga's final plugin list: envelop hands every plugin the list, complete once
 * every plugin is initialised, which is before Yoga calls `onYogaInit`.
 */
export function pipelineWatcher(): { plugin: Plugin; plugins(): readonly Plugin[] } {
  let list: readonly (Plugin | false)[] = [];
  return {
    plugin: {
      onPluginInit({ plugins }) {
        list = plugins;
      },
    },
    plugins: () => list.filter((plugin): plugin is Plugin => Boolean(plugin)),
  };
}
