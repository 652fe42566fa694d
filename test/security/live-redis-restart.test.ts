import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Devnet, startDevnet } from '../../src/devnet/index.js';
import { hasRedis, startRedis, type TestRedis } from '../support/redis.js';
import { killAll, type Started, startLiveGateway } from '../support/server-process.js';
import { type Subscription, subscribe } from '../support/sse.js';
import { until } from '../support/until.js';

/**
 * A Redis restart mid-stream (contract.md §9: after a reconnect every instance catches up, no
 * block skipped). Redis runs without persistence, so a restart loses the leases and the pollers'
 * state; pub/sub keeps nothing for a listener that was away. Two gateway processes on one Redis,
 * a blockAdded subscriber on each: through three restarts, each gets every block once, in order.
 */

const POLL_MS = 100;
const LEASE_MS = 600;
const BLOCKS = 'subscription { blockAdded { height } }';

let devnet: Devnet;
let redis: TestRedis;
const processes: Started[] = [];

beforeAll(async () => {
  devnet = await startDevnet({ seed: 'live-redis-restart', record: true });
  if (hasRedis) redis = await startRedis();
});

afterAll(async () => {
  await killAll(processes);
  await redis?.close();
  await devnet?.close();
});

/** The heights a subscriber has been sent so far, in order. */
const heightsOf = (sub: Subscription): number[] =>
  sub.messages.filter((m) => m.event === 'next').map((m) => JSON.parse(m.data).data.blockAdded.height);

/**
 * Waits until every subscriber has been sent `last` (or 20 s have passed, so that a skipped block
 * fails on the list below rather than on the test's timeout), then compares what each was sent.
 */
async function sentEach(subs: Subscription[], expected: number[]): Promise<void> {
  const last = expected.at(-1) as number;
  await until(() => subs.every((sub) => heightsOf(sub).includes(last)), {
    within: 20_000,
    what: `block ${last} sent to every subscriber`,
  }).catch(() => undefined);
  for (const sub of subs) expect(heightsOf(sub)).toEqual(expected);
}

/** Resolves once some process asks the devnet for the block after its head. */
async function asksForNext(): Promise<void> {
  const next = String(devnet.data.blocks.count + 1);
  devnet.resetRecords();
  await until(
    () => devnet.requests.some((r) => r.service === 'scan' && new URLSearchParams(r.query).get('q') === next),
    { within: 30_000, what: 'a poll asking for the block after the head' },
  );
}

/** Redis as a process sees it on /readyz: `up` once its connection is back. */
async function redisUp(url: string): Promise<boolean> {
  const body = await (await fetch(new URL('/readyz', url))).json();
  return body.redis === 'up';
}

describe.runIf(hasRedis)('a Redis restart mid-stream', () => {
  it('loses no block on either instance, through three restarts', { timeout: 120_000 }, async () => {
    const env = { REDIS_URL: redis.url, REDIS_TIMEOUT_MS: '300' };
    const [a, b] = await Promise.all([
      startLiveGateway(devnet.urls, { pollMs: POLL_MS, leaseMs: LEASE_MS }, env, processes),
      startLiveGateway(devnet.urls, { pollMs: POLL_MS, leaseMs: LEASE_MS }, env, processes),
    ]);
    const subs: Subscription[] = [await subscribe(a.url, BLOCKS), await subscribe(b.url, BLOCKS)];
    await asksForNext();
    const expected = devnet.advance(1).heights;
    await sentEach(subs, expected);

    for (let restart = 0; restart < 3; restart++) {
      await redis.stop();
      // A block while Redis is away, one as it comes back (before the instances reconnect), and
      // one once both say it is up.
      const away = devnet.advance(1).heights;
      await redis.start();
      const back = devnet.advance(1).heights;
      await until(async () => (await redisUp(a.url)) && (await redisUp(b.url)), {
        within: 30_000,
        what: 'both instances connected to Redis again',
      });
      expected.push(...away, ...back, ...devnet.advance(1).heights);
      await sentEach(subs, expected);
    }
    // Nothing twice, nothing late: the next event of each is the next block.
    expected.push(...devnet.advance(1).heights);
    await sentEach(subs, expected);
    for (const sub of subs) sub.close();
  });
});
