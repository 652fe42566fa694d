import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Devnet, startDevnet } from '../../src/devnet/index.js';
import { hasRedis, startRedis, type TestRedis } from '../support/redis.js';
import { killAll, type Started, startLiveGateway } from '../support/server-process.js';
import { type Subscription, subscribe } from '../support/sse.js';
import { until } from '../support/until.js';

/**
 * Live updates across real gateway processes on one devnet: one poller per source across the
 * deployment with REDIS_URL (a lease in Redis, handed over when its holder dies), every subscriber
 * of every process served exactly once; without Redis each worker polls for itself; SIGTERM
 * ends every stream with a retry: hint.
 */

const POLL_MS = 100;
const LEASE_MS = 600;
const BLOCKS = 'subscription { blockAdded { height } }';

let devnet: Devnet;
const processes: Started[] = [];

beforeAll(async () => {
  devnet = await startDevnet({ seed: 'live-processes', record: true });
});

afterAll(async () => {
  await killAll(processes);
  await devnet?.close();
});

const startGateway = (env: Record<string, string>): Promise<Started> =>
  startLiveGateway(devnet.urls, { pollMs: POLL_MS, leaseMs: LEASE_MS }, env, processes);

/** The process ids whose block polls reached the devnet (their request ids are `live-blocks-<pid>-<n>`). */
const pollers = () =>
  new Set(
    devnet.requests.flatMap((r) => {
      const id = /^live-blocks-(\d+)-\d+$/.exec(String(r.headers['x-request-id']));
      return id ? [Number(id[1])] : [];
    }),
  );

/**
 * Resolves once `processes` processes have found the head and ask for the block after it; within
 * 30 s, half the timeout of the tests that ask (60 s), which wait for their events after it.
 */
async function headFound(processes = 1): Promise<void> {
  const next = String(devnet.data.blocks.count + 1);
  const asking = () =>
    new Set(
      devnet.requests
        .filter((r) => r.service === 'scan' && new URLSearchParams(r.query).get('q') === next)
        .map((r) => String(r.headers['x-request-id']).split('-')[2]),
    ).size;
  await until(() => asking() >= processes, {
    within: 30_000,
    what: `${processes === 1 ? 'a process' : `${processes} processes`} asking for the block after the head`,
  });
}

const heightsOf = (events: any[]) => events.map((e) => e.data.blockAdded.height);

describe.runIf(hasRedis)('two gateway processes on one Redis', () => {
  let redis: TestRedis;
  let a: Started;
  let b: Started;
  beforeAll(async () => {
    redis = await startRedis();
    const env = { REDIS_URL: redis.url, REDIS_TIMEOUT_MS: '1000' };
    [a, b] = await Promise.all([startGateway(env), startGateway(env)]);
  }, 90_000);
  afterAll(async () => {
    await redis?.close();
  });

  it('polls once per interval between them and delivers each event to every subscriber of both, once', {
    timeout: 60_000,
  }, async () => {
    devnet.resetRecords();
    const subs: Subscription[] = [];
    for (const url of [a.url, b.url, a.url, b.url, a.url, b.url]) subs.push(await subscribe(url, BLOCKS));
    await headFound();
    // One of the two polls; the other waits for its lease.
    const [holder, ...others] = [...pollers()];
    expect(others).toEqual([]);
    expect([a.child.pid, b.child.pid]).toContain(holder);
    const { heights } = devnet.advance(3);
    for (const sub of subs) expect(heightsOf(await sub.take(3))).toEqual(heights);
    // Nothing twice: the next event of each is the next block.
    const [next] = devnet.advance(1).heights;
    for (const sub of subs) expect(heightsOf([await sub.next()])).toEqual([next]);
    expect([...pollers()]).toEqual([holder]);
    for (const sub of subs) sub.close();
  });

  it('keeps its lease through a poll slower than the lease: one process polls, every block delivered', {
    timeout: 60_000,
  }, async () => {
    devnet.resetRecords();
    const subs = [await subscribe(a.url, BLOCKS), await subscribe(b.url, BLOCKS)];
    await headFound();
    // Each lookup now takes two lease periods, so one poll (head + 1, head + 2, head + 3) six: the
    // holder renews its lease while it polls, else its publish would be refused and the other
    // process take the source over, again and again, delivering nothing.
    devnet.setLatency(2 * LEASE_MS);
    try {
      const { heights } = devnet.advance(2);
      for (const sub of subs) expect(heightsOf(await sub.take(2))).toEqual(heights);
    } finally {
      devnet.setLatency(0);
    }
    expect(pollers().size).toBe(1);
    for (const sub of subs) sub.close();
  });

  it('hands polling to the other process when the lease holder dies, within two lease periods, losing no block', {
    timeout: 60_000,
  }, async () => {
    devnet.resetRecords();
    const onA = await subscribe(a.url, BLOCKS);
    const onB = await subscribe(b.url, BLOCKS);
    await headFound();
    const [holderPid] = [...pollers()];
    const [holder, survivor, survivorSub] = holderPid === a.child.pid ? [a, b, onB] : [b, a, onA];
    const waitsBefore = await elsewherePolls(survivor.url);
    holder.child.kill('SIGKILL');
    await once(holder.child, 'exit');
    devnet.resetRecords();
    const { heights } = devnet.advance(2);
    // The survivor continues from what the holder delivered: the next blocks, none skipped.
    expect(heightsOf(await survivorSub.take(2))).toEqual(heights);
    expect([...pollers()]).toEqual([survivor.child.pid]);
    // It polled again as soon as the dead holder's lease lapsed: each of its attempts in between
    // found the lease held, and a lease lives LIVE_LEASE_MS, so at most two lease periods' worth.
    const waits = (await elsewherePolls(survivor.url)) - waitsBefore;
    expect(waits).toBeLessThanOrEqual((2 * LEASE_MS) / POLL_MS);
    // /readyz answers at once with its last check, at most a second old: it says so once it checks.
    await until(
      async () =>
        (await (await fetch(new URL('/readyz', survivor.url))).json()).live?.blocks === 'this instance',
      { within: 20_000, what: "the survivor's /readyz naming itself the blocks' poller" },
    );
    survivorSub.close();
  });
});

/** A process's block polls that found another instance holding the lease (`elsewhere`). */
async function elsewherePolls(url: string): Promise<number> {
  const text = await (await fetch(new URL('/metrics', url))).text();
  const line = text
    .split('\n')
    .find((l) => l.startsWith('live_polls_total{source="blocks",result="elsewhere"}'));
  return Number(line?.split(' ')[1] ?? 0);
}

describe('WORKERS=2 without Redis', () => {
  it('polls once per worker that has subscribers, each for its own subscribers', {
    timeout: 60_000,
  }, async () => {
    const gateway = await startGateway({ WORKERS: '2' });
    devnet.resetRecords();
    // One connection each: the primary hands them to the two workers in turn.
    const subs = [await subscribe(gateway.url, BLOCKS), await subscribe(gateway.url, BLOCKS)];
    // Each worker found the head for itself.
    await headFound(2);
    const { heights } = devnet.advance(2);
    for (const sub of subs) expect(heightsOf(await sub.take(2))).toEqual(heights);
    expect(pollers().size).toBe(2);
    for (const sub of subs) sub.close();
    gateway.child.kill('SIGTERM');
    await once(gateway.child, 'exit');
  });
});

describe('SIGTERM', () => {
  it('ends every stream for its client to come back (no complete), then exits 0', {
    timeout: 60_000,
  }, async () => {
    const gateway = await startGateway({});
    const subs = [await subscribe(gateway.url, BLOCKS), await subscribe(gateway.url, BLOCKS)];
    devnet.resetRecords();
    await headFound();
    gateway.child.kill('SIGTERM');
    // Closed with a retry: and no `complete`, which would end graphql-sse's client for good.
    for (const sub of subs) expect(await sub.ended).toBe('closed');
    const [code] = await once(gateway.child, 'exit');
    expect(code).toBe(0);
  });
});
