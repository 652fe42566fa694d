import type { Plugin } from 'graphql-yoga';
import { afterAll, describe, expect, it } from 'vitest';
import { type GatewayOptions, loadConfig } from '../../src/config.js';
import { createGateway, type Gateway } from '../../src/gateway.js';
import { EXECUTION_HOOKS, guardPipeline, hooksOf } from '../../src/graphql/guard.js';
import { hasPart, partPlugin } from '../../src/graphql/pipeline/parts.js';
import { hasHttpStage, withHttpStage } from '../../src/graphql/routing.js';
import { type Pipeline, pipelineOf } from '../../src/graphql/yoga.js';

/**
 * The pipeline guard (src/graphql/guard.ts): at start, over the gateway's own plugins; here, over
 * Yoga's final list of each configuration, as an inventory kept in a snapshot. A Yoga upgrade that
 * adds, drops or changes one of its plugins changes the inventory: this test fails, and whoever
 * updates the snapshot says how the two paths that skip parts of the pipeline cover it.
 */

const NOWHERE = { scan: 'http://127.0.0.1:9', explorer: 'http://127.0.0.1:9', stake: 'http://127.0.0.1:9' };

/**
 * Yoga's own plugins that work on every execution, by their hooks, and what a prepared request
 * does in their place. No other plugin of Yoga's may have an execution hook.
 */
const SUBSTITUTED: Record<string, string> = {
  // Yoga's engine (useEngine)
  'onExecute,onParse,onSubscribe,onValidate':
    'the compiled plan of graphql-jit, on a document the engine parsed and validated once',
  // Yoga's context (useExtendContext)
  onContextBuilding: 'the same context function (gatewayContext in yoga.ts)',
  // Yoga's error masking (useMaskedErrors)
  'onExecute,onPluginInit,onSubscribe': "useResultMasking's part: public-errors.ts, as Yoga's maskError",
};

const CONFIGURATIONS: Record<string, Partial<GatewayOptions>> = {
  'the devnet defaults (npm start)': {},
  'production: no GraphiQL, a persisted-operations manifest, no batches': {
    graphiql: false,
    persistedOperations: { abc: '{ __typename }' },
    limits: { ...loadConfig({}).limits, batch: 0 },
  },
  'no response cache': { responseCacheTtlMs: 0 },
};

const gateways: Gateway[] = [];
afterAll(() => Promise.all(gateways.map((gateway) => gateway.close())));

function pipelineWith(overrides: Partial<GatewayOptions>): Pipeline {
  const gateway = createGateway({ ...loadConfig({}), ...overrides, upstreamUrls: NOWHERE });
  gateways.push(gateway);
  return pipelineOf(gateway.yoga) as Pipeline;
}

/** One line per plugin, in envelop's order: whose it is, its hooks, and how the two paths cover it. */
const inventory = ({ plugins, given }: Pipeline) =>
  plugins.map((plugin) =>
    [
      given.has(plugin) ? 'gateway' : 'yoga',
      hooksOf(plugin).sort().join(','),
      hasPart(plugin) ? 'part' : '',
      hasHttpStage(plugin) ? 'http stage' : '',
    ]
      .filter(Boolean)
      .join(' | '),
  );

describe('the pipeline guard', () => {
  for (const [name, overrides] of Object.entries(CONFIGURATIONS)) {
    it(`keeps the inventory of Yoga's final plugin list: ${name}`, () => {
      const pipeline = pipelineWith(overrides);
      expect(inventory(pipeline)).toMatchSnapshot();
      // Yoga's own plugins with an execution hook are the substituted ones, each once.
      const executing = pipeline.plugins
        .filter((plugin) => !pipeline.given.has(plugin) && !hasPart(plugin))
        .map((plugin) => hooksOf(plugin).sort())
        .filter((hooks) => EXECUTION_HOOKS.some((hook) => hooks.includes(hook)))
        .map((hooks) => hooks.join(','));
      expect(executing.sort()).toEqual(Object.keys(SUBSTITUTED).sort());
    });
  }

  const guard = (plugin: Plugin) => () => guardPipeline([plugin], {});

  it('stops the gateway at start for a plugin that works on every execution without a part', () => {
    expect(guard({ onExecute: () => undefined })).toThrow(
      'A plugin that runs on every execution has no part in prepared requests (hooks: onExecute).',
    );
    expect(guard({ onContextBuilding: () => undefined })).toThrow(
      'A plugin that runs on every execution has no part in prepared requests (hooks: onContextBuilding).',
    );
    expect(guard(partPlugin(() => null))).not.toThrow();
  });

  it('stops the gateway at start for a plugin that acts at the HTTP stage without saying what it decides', () => {
    for (const hook of ['onRequest', 'onRequestParse', 'onParams', 'onResultProcess', 'onResponse']) {
      expect(guard({ [hook]: () => undefined }), hook).toThrow(
        `A plugin that acts at the HTTP stage does not say what it decides there (hooks: ${hook}).`,
      );
      expect(guard(withHttpStage({ [hook]: () => undefined }, { declines: () => null })), hook).not.toThrow();
    }
  });
});
