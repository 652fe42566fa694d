import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Devnet, startDevnet } from '../../src/devnet/index.js';
import { devnetOptions } from '../gateway/helpers.js';
import { openEventSource } from '../support/event-source.js';
import { type LoadBalancer, startLoadBalancer } from '../support/load-balancer.js';
import { hasRedis, startRedis, type TestRedis } from '../support/redis.js';
import { startServerProcess } from '../support/server-process.js';
import { until } from '../support/until.js';

/**
 * A rollout drops no stream (issue 30): two gateway processes on one Redis behind a load balancer
 * that follows their `/readyz`, the chain moving all the while. The instance a subscriber is on
 * gets SIGTERM: its `/readyz` answers 503 at once, it serves on for SHUTDOWN_DELAY_MS, then its
 * stream ends with a `retry:` hint (1 to 10 s); the client reconnects through the balancer to the
 * other instance with its Last-Event-ID, and gets every block it missed (from that instance's
 * memory of the last LIVE_CATCH_UP blocks), then the live ones: no block lost, none twice, and the
 * first instance exits 0.
 */

describe.runIf(hasRedis)('a rollout', () => {
  let redis: TestRedis;
  let devnet: Devnet;
  let balancer: LoadBalancer;
  const instances: ReturnType<typeof startServerProcess>[] = [];
  beforeAll(async () => {
    redis = await startRedis();
    devnet = await startDevnet(devnetOptions({ seed: 'rollout' }));
    for (let i = 0; i < 2; i++) {
      instances.push(
        startServerProcess({
          SCAN_URL: devnet.urls.scan,
          EXPLORER_URL: devnet.urls.explorer,
          STAKE_URL: devnet.urls.stake,
          REDIS_URL: redis.url,
          CURSOR_SECRET: 'rollout-test-secret-0123456789',
          LIVE_POLL_MS: '50',
          LIVE_LEASE_MS: '1000',
          // The client waits up to 10 s (the drain's `retry:` spread) while the chain moves every
          // 100 ms: memory must hold what 10 s of it adds, as a deployment sizes LIVE_CATCH_UP.
          LIVE_CATCH_UP: '200',
          SHUTDOWN_DELAY_MS: '300',
        }),
      );
    }
    await Promise.all(instances.map((instance) => instance.listening));
    balancer = await startLoadBalancer(instances.map((instance) => instance.url));
  });
  afterAll(async () => {
    for (const instance of instances) if (instance.child.exitCode === null) instance.child.kill('SIGKILL');
    await balancer?.close();
    await devnet?.close();
    await redis?.close();
  });

  it('keeps a subscriber receiving every block across the restart of the instance it was on', {
    timeout: 60_000,
  }, async () => {
    // Both instances ready behind the balancer: the first takes new requests.
    await until(() => balancer.ready.every(Boolean), { what: 'both instances ready behind the balancer' });
    const query = encodeURIComponent('subscription { blockAdded { height } }');
    const heights = () => client.events.map((data) => JSON.parse(data).data.blockAdded.height as number);
    // Another viewer on the second instance all along: its stream, and so its events, go on while
    // the first instance stops, so the blocks of the gap are not simply the next ones it reads.
    const [, second] = instances as [unknown, ReturnType<typeof startServerProcess>];
    const viewer = openEventSource(`${second.url}?query=${query}`);
    const client = openEventSource(`${balancer.url}/graphql?query=${query}`);
    // The chain moves every 100 ms, through the restart.
    const chain = setInterval(() => devnet.advance(1), 100);
    try {
      await until(() => heights().length >= 3 && viewer.events.length >= 3, {
        what: 'three blocks on the client and on the viewer',
      });
      expect(balancer.served.at(-1)).toBe(0);
      const [first] = instances as [ReturnType<typeof startServerProcess>];
      const exited = once(first.child, 'exit');
      first.child.kill('SIGTERM');
      const [code] = await exited;
      expect(code).toBe(0);
      // The client came back through the balancer, to the other instance, and the chain moved on.
      await until(() => client.connections === 2 && heights().length >= 20, {
        within: 20_000,
        what: 'the client reconnected through the balancer, twenty blocks in all',
      });
    } finally {
      clearInterval(chain);
      client.close();
      viewer.close();
    }
    expect(balancer.served.filter((backend) => backend === 1).length).toBeGreaterThan(0);
    const got = heights();
    const start = got[0] as number;
    expect(got).toEqual(got.map((_, i) => start + i));
  });
});
