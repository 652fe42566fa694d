import type { Plugin } from 'graphql-yoga';
import { hasPart } from './pipeline/parts.js';
import { HTTP_STAGE_HOOKS, hasHttpStage } from './routing.js';

/**
 * The start-time guard over the plugins the gateway gives Yoga. Two paths skip parts of the
 * pipeline, so every such plugin must say how they cover it, or the gateway does not start: a
 * prepared request (graphql/pipeline/) runs plugins' parts, not their execution hooks; the node:http
 * adapter (http/fast-path.ts) skips the HTTP stage, so a plugin with a hook there says what it
 * decides (routing.ts). The plugins of Yoga itself (engine, context, masking, request parsers) are
 * not told apart at start: the pipeline guard's test keeps each configuration's inventory of the
 * final list, so that a Yoga upgrade that adds or changes one fails a test and is reviewed.
 */

/** The hooks a prepared request skips (a subscription, an onSubscribe's business, is never prepared). */
export const EXECUTION_HOOKS = ['onExecute', 'onContextBuilding', 'onExecutionResult'] as const;

export const hooksOf = (plugin: Plugin): string[] =>
  Object.keys(plugin).filter((key) => typeof (plugin as Record<string, unknown>)[key] === 'function');

/**
 * Refuses a plugin that a path would skip part of: the reason names its hooks and what it lacks.
 * `engine` is the document cache's own plugin, which is the prepared request's engine.
 */
export function guardPipeline(plugins: readonly (Plugin | false | null | undefined)[], engine: Plugin): void {
  for (const plugin of plugins) {
    if (!plugin || plugin === engine) continue;
    const hooks = hooksOf(plugin);
    if (!hasPart(plugin) && EXECUTION_HOOKS.some((hook) => hooks.includes(hook)))
      throw new Error(
        `A plugin that runs on every execution has no part in prepared requests (hooks: ${hooks.join(', ')}).`,
      );
    if (!hasHttpStage(plugin) && HTTP_STAGE_HOOKS.some((hook) => hooks.includes(hook)))
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
