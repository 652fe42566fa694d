import { createRequire } from 'node:module';
import { configDefaults, defineConfig, type TestProjectInlineConfiguration } from 'vitest/config';
import type { DevnetVariant } from './test/gateway/helpers.js';

const require = createRequire(import.meta.url);

/** The gateway's domain tests: run once per upstream dialect and variant (contract.md §5). */
const DOMAIN_TESTS = [
  'test/gateway/search.test.ts',
  'test/gateway/staking.test.ts',
  'test/gateway/explorer.test.ts',
  'test/gateway/buyback.test.ts',
  'test/gateway/partial.test.ts',
  'test/gateway/operations.test.ts',
  'test/gateway/paging.test.ts',
  'test/gateway/live.test.ts',
  'test/gateway/live-groups.test.ts',
  'test/gateway/nodes.test.ts',
  'test/gateway/prepared.test.ts',
  'test/gateway/chain-height.test.ts',
];

const variant = (
  name: string,
  devnet: DevnetVariant,
  productionCaches = false,
): TestProjectInlineConfiguration => ({
  extends: true,
  test: { name, include: DOMAIN_TESTS, provide: { devnet, productionCaches, overSocket: false } },
});

/** What proves that the socket project's requests took the production path (it runs there only). */
const PRODUCTION_PATH_TEST = 'test/gateway/production-path.test.ts';

export default defineConfig({
  // One copy of graphql: Yoga and Pothos load its CommonJS build, and a second (ESM) copy would
  // make `instanceof GraphQLError` fail, masking every coded error as INTERNAL_SERVER_ERROR.
  resolve: { alias: { graphql: require.resolve('graphql') } },
  test: {
    reporters: ['default', './test/summary-reporter.ts'],
    testTimeout: 20_000,
    hookTimeout: 30_000,
    pool: 'forks',
    projects: [
      // Everything, against upstream-api.md's dialect (the devnet's default).
      {
        extends: true,
        test: {
          name: 'spec',
          include: ['test/**/*.test.ts'],
          // The deploy tests run in a project of their own (below).
          exclude: [...configDefaults.exclude, 'test/deploy/**', PRODUCTION_PATH_TEST],
          provide: { devnet: {}, productionCaches: false, overSocket: false },
        },
      },
      // The domain tests through the production path: every request the helpers send goes over a
      // socket to the gateway's node:http listener, its document warmed first so that the request
      // runs the prepared request (test/support/production-path.ts).
      {
        extends: true,
        test: {
          name: 'spec, over a socket',
          include: [...DOMAIN_TESTS, PRODUCTION_PATH_TEST],
          provide: { devnet: {}, productionCaches: false, overSocket: true },
        },
      },
      // The domain tests again with the caches production runs with (response and validator lists),
      // every query compiled by graphql-jit on first use (the other projects interpret them).
      variant('spec, production caches, compiled', {}, true),
      // The production services' protojson dialect, and its two deployment variants.
      variant('kratos', { dialect: 'kratos' }),
      variant('kratos, staking enveloped', { dialect: 'kratos', stakeEnvelope: true }),
      variant('kratos, explorer code 200', { dialect: 'kratos', explorerSuccessCode: 200 }),
      // The deployable artifacts (docs/deploy.md): the image built and run with podman, the compose
      // file and the Kubernetes manifests checked. After every other project (a group of its own),
      // one file at a time: a cold image build takes minutes and both cores.
      {
        extends: true,
        test: {
          name: 'deploy',
          include: ['test/deploy/**/*.test.ts'],
          sequence: { groupOrder: 1 },
          fileParallelism: false,
          testTimeout: 120_000,
          hookTimeout: 1_200_000,
        },
      },
    ],
  },
});
