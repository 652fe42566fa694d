import { afterAll, describe, expect, it } from 'vitest';
import { createGateway, type Gateway } from '../../src/gateway.js';
import { guardPipeline, SUBSTITUTED } from '../../src/graphql/guard.js';
import { partPlugin } from '../../src/graphql/pipeline/parts.js';
import { withHttpStage } from '../../src/graphql/routing.js';
import { type Pipeline, pipelineOf } from '../../src/graphql/yoga.js';
import { testSettings } from './helpers.js';

/**
 * The start-time guard over Yoga's final plugin list (src/graphql/guard.ts), on a built gateway:
 * Yoga's own plugins and the gateway's, as envelop runs them. A path that skips part of the list
 * (the prepared request, the node:http adapter) must be told how each plugin is covered, or the
 * gateway does not start.
 */

const NOWHERE = { scan: 'http://127.0.0.1:9', explorer: 'http://127.0.0.1:9', stake: 'http://127.0.0.1:9' };

describe('the pipeline guard', () => {
  const gateway: Gateway = createGateway({ ...testSettings(), upstreamUrls: NOWHERE });
  afterAll(() => gateway.close());
  const pipeline = pipelineOf(gateway.yoga) as Pipeline;
  const guard =
    (plugins: Pipeline['plugins'], substituted = SUBSTITUTED) =>
    () =>
      guardPipeline(plugins, pipeline.yogaOwn, pipeline.engine, substituted);

  it("sees Yoga's own plugins, not only those given to createYoga", () => {
    // Yoga's engine, context and masking are among them, each named with its substitute.
    expect(guard(pipeline.plugins)).not.toThrow();
    for (const substitute of SUBSTITUTED) {
      const without = SUBSTITUTED.filter((s) => s !== substitute);
      expect(guard(pipeline.plugins, without), substitute.name).toThrow(
        'A plugin that runs on every execution has no part in prepared requests',
      );
    }
  });

  it('stops the gateway at start for a plugin that works on every execution without a part', () => {
    expect(guard([...pipeline.plugins, { onExecute: () => undefined }])).toThrow(
      'A plugin that runs on every execution has no part in prepared requests (hooks: onExecute).',
    );
    expect(guard([...pipeline.plugins, { onContextBuilding: () => undefined }])).toThrow(
      'A plugin that runs on every execution has no part in prepared requests (hooks: onContextBuilding).',
    );
    expect(guard([...pipeline.plugins, partPlugin(() => null)])).not.toThrow();
  });

  it('stops the gateway at start for a plugin that acts at the HTTP stage without saying what it decides', () => {
    for (const hook of ['onRequest', 'onRequestParse', 'onParams', 'onResultProcess', 'onResponse']) {
      expect(guard([...pipeline.plugins, { [hook]: () => undefined }]), hook).toThrow(
        `A plugin that acts at the HTTP stage does not say what it decides there (hooks: ${hook}).`,
      );
      expect(
        guard([...pipeline.plugins, withHttpStage({ [hook]: () => undefined }, { declines: () => null })]),
        hook,
      ).not.toThrow();
    }
  });

  it("does not take a plugin of the gateway for one of Yoga's own by its hooks alone", () => {
    // The same hooks as Yoga's context plugin, made elsewhere: not a substitute the guard knows.
    expect(
      guard([...pipeline.plugins, { onContextBuilding: ({ extendContext }) => extendContext({}) }]),
    ).toThrow(
      'A plugin that runs on every execution has no part in prepared requests (hooks: onContextBuilding).',
    );
  });
});
