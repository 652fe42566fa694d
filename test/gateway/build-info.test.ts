import { describe, expect, it } from 'vitest';
import { loadConfig, PACKAGE_VERSION } from '../../src/config.js';
import { useGatewayOnDevnet } from './helpers.js';

/**
 * Every gateway describes itself, whoever builds it (issue 49): `build_info` with its version and
 * revision (BUILD_REVISION) and `graphql_subscriptions_limit` (MAX_SUBSCRIPTIONS, as capped) are
 * served by a gateway that createGateway built, as the tests' helpers and a cluster's workers do,
 * not only by the one main.ts starts.
 */

const { build } = loadConfig({ BUILD_REVISION: '5f3a9c1e' });
const env = useGatewayOnDevnet({
  gateway: { build, live: { ...loadConfig({}).live, maxSubscriptions: 321 } },
});
env.serveOverHttp();

describe('a gateway built by createGateway', () => {
  it('serves build_info with its revision, and its subscription cap, on /metrics', async () => {
    const text = await (await fetch(env.url.replace('/graphql', '/metrics'))).text();
    expect(
      text.split('\n').filter((line) => /^(build_info|graphql_subscriptions_limit)\b/.test(line)),
    ).toEqual([
      'graphql_subscriptions_limit 321',
      `build_info{version="${PACKAGE_VERSION}",revision="5f3a9c1e"} 1`,
    ]);
  });
});
