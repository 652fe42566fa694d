import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Devnet, startDevnet } from '../../src/devnet/index.js';
import { hasRedis, startRedis, type TestRedis } from '../support/redis.js';
import { killAll, type Started, startLiveGateway } from '../support/server-process.js';
import { type Subscription, subscribe } from '../support/sse.js';
import { startTcpProxy } from '../support/tcp-proxy.js';
import { until } from '../support/until.js';

/**
 * Live events at most once, every kind, whatever Redis does (contract.md §7). Two gateway processes
 * on one redis-server, A holding the validators' lease:
 * - B connects as a Redis user of its own, whose commands the test then forbids (an ACL change:
 *   every command of B's command connection fails) while its pub/sub connection keeps receiving.
 *   B cannot tell whether it holds the lease, and A does and delivers through Redis: B must not
 *   poll for itself, or its subscribers get each event twice.
 * - B reaches Redis through a proxy the test cuts: no holder's events can reach B, which polls for
 *   its own subscribers meanwhile, and stops once Redis is back.
 */

const POLL_MS = 100;
const LEASE_MS = 600;
const VALIDATORS = 'subscription { validatorUpdated { operatorAddress tokens jailed } }';
const STATISTICS = 'subscription { validatorStatisticsUpdated { totalStakedAmount activeValidators } }';

let devnet: Devnet;
let redis: TestRedis;
let admin: Redis;
const processes: Started[] = [];

beforeAll(async () => {
  devnet = await startDevnet({ seed: 'live-at-most-once', record: true });
  if (!hasRedis) return;
  redis = await startRedis();
  admin = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  await admin.call('ACL', 'SETUSER', 'gateway-b', 'on', '>b-password', '~*', '&*', '+@all');
}, 60_000);

afterAll(async () => {
  await killAll(processes);
  admin?.disconnect();
  await redis?.close();
  await devnet?.close();
});

const startGateway = (redisUrl: string): Promise<Started> =>
  startLiveGateway(
    devnet.urls,
    { pollMs: POLL_MS, leaseMs: LEASE_MS },
    { REDIS_URL: redisUrl, REDIS_TIMEOUT_MS: '1000' },
    processes,
  );

/** The process ids whose validator polls reached the devnet (request ids `live-validators-<pid>-<n>`). */
const validatorPollers = () =>
  devnet.requests.flatMap((r) => {
    const id = /^live-validators-(\d+)-\d+$/.exec(String(r.headers['x-request-id']));
    return id ? [Number(id[1])] : [];
  });

/** The sum of a counter's series on a process's /metrics (`name{…} value` lines). */
async function counter(url: string, name: string, labels = ''): Promise<number> {
  const text = await (await fetch(new URL('/metrics', url))).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${name}{`) && l.includes(labels))
    .reduce((sum, l) => sum + Number(l.split(' ').at(-1)), 0);
}

/** The validators' lease held elsewhere: polls of B that found it so (or could not tell). */
const elsewherePolls = (url: string) =>
  counter(url, 'live_polls_total', 'source="validators",result="elsewhere"');

/**
 * Moves the chain until validators change, `rounds` times, and checks that each subscriber gets
 * each change (one event per validator that moved); resolves with the number of changes.
 */
async function changeValidators(rounds: number, subs: Subscription[]): Promise<number> {
  let changes = 0;
  for (let round = 0; round < rounds; round++) {
    let moved: string[] = [];
    while (moved.length === 0) moved = devnet.advance(1).validators;
    const onWire = moved.map((v) => devnet.stakeAddress(v)).sort();
    for (const sub of subs) {
      const events = await sub.take(moved.length);
      expect(events.map((e) => e.data.validatorUpdated.operatorAddress).sort()).toEqual(onWire);
    }
    changes += moved.length;
  }
  return changes;
}

/** The connections subscribed to the validators' events in Redis. */
async function validatorListeners(): Promise<number> {
  const [channel] = (await admin.call('PUBSUB', 'CHANNELS', '*live:events:{validators}')) as string[];
  if (channel === undefined) return 0;
  const [, count] = (await admin.call('PUBSUB', 'NUMSUB', channel)) as [string, number];
  return Number(count);
}

const nexts = (sub: Subscription) => sub.messages.filter((m) => m.event === 'next').length;

describe.runIf(hasRedis)('a process whose Redis commands fail while its pub/sub still receives', () => {
  it('does not poll for itself: every validatorUpdated and statistics event reaches each subscriber once', {
    timeout: 90_000,
  }, async () => {
    const a = await startGateway(redis.url);
    const b = await startGateway(`redis://gateway-b:b-password@127.0.0.1:${redis.port}`);
    const aPid = a.child.pid as number;
    // A subscribes first and holds the validators' lease; B then finds it held elsewhere.
    const onA = await subscribe(a.url, VALIDATORS);
    await until(() => validatorPollers().includes(aPid), {
      within: 20_000,
      what: 'A polling the validators',
    });
    const onB = await subscribe(b.url, VALIDATORS);
    const statsOnB = await subscribe(b.url, STATISTICS);
    await until(async () => (await elsewherePolls(b.url)) >= 1, {
      within: 20_000,
      what: "a poll of B that found the validators' lease held elsewhere",
    });
    const errorsBefore = await counter(b.url, 'redis_errors_total');
    // B's command connection fails from now on (NOPERM); its subscriber connection is untouched.
    await admin.call('ACL', 'SETUSER', 'gateway-b', '-@all', '+@pubsub', '+ping');
    try {
      // B has met the failure on several polls' claims (and, before the fix, polled for itself).
      await until(async () => (await counter(b.url, 'redis_errors_total')) >= errorsBefore + 6, {
        within: 20_000,
        what: "six more Redis errors on B's command connection",
      });
      devnet.resetRecords();
      let changes = 0;
      for (let round = 0; round < 4; round++) {
        changes += await changeValidators(1, [onA, onB]);
        const stats = await statsOnB.next();
        expect(stats.data.validatorStatisticsUpdated.totalStakedAmount).toBe(
          devnet.data.statistics.total_staked_amount,
        );
      }
      // Nothing twice: every subscriber has had exactly the changes, and only A asked the devnet.
      for (const sub of [onA, onB]) expect(nexts(sub)).toBe(changes);
      expect(nexts(statsOnB)).toBe(4);
      expect(new Set(validatorPollers())).toEqual(new Set([aPid]));
    } finally {
      await admin.call('ACL', 'SETUSER', 'gateway-b', '+@all');
    }
    for (const sub of [onA, onB, statsOnB]) sub.close();
  });
});

describe.runIf(hasRedis)('a process cut off from Redis altogether', () => {
  it('polls for its own subscribers meanwhile and stops once Redis is back: each validator change once', {
    timeout: 90_000,
  }, async () => {
    const proxy = await startTcpProxy(redis.port);
    try {
      const a = await startGateway(redis.url);
      const b = await startGateway(`redis://127.0.0.1:${proxy.port}`);
      const [aPid, bPid] = [a.child.pid as number, b.child.pid as number];
      const onA = await subscribe(a.url, VALIDATORS);
      await until(() => validatorPollers().includes(aPid), {
        within: 20_000,
        what: 'A polling the validators',
      });
      const listeners = (await validatorListeners()) + 1;
      const onB = await subscribe(b.url, VALIDATORS);
      // B listens on the validators' channel, and finds the lease held by A.
      await until(async () => (await validatorListeners()) === listeners, {
        within: 20_000,
        what: "B listening on the validators' channel",
      });
      await until(async () => (await elsewherePolls(b.url)) >= 1, {
        within: 20_000,
        what: "a poll of B that found the validators' lease held elsewhere",
      });
      await proxy.cut();
      // B polls for itself: its first poll reads the list as it is, the next ones diff it.
      devnet.resetRecords();
      await until(() => validatorPollers().filter((pid) => pid === bPid).length >= 2, {
        within: 20_000,
        what: 'two polls of the validators by B, cut off from Redis',
      });
      let changes = await changeValidators(3, [onA, onB]);
      expect(new Set(validatorPollers())).toEqual(new Set([aPid, bPid]));
      // Redis is back for B: it finds the lease held by A again, and polls no more.
      const waits = await elsewherePolls(b.url);
      await proxy.mend();
      await until(async () => (await elsewherePolls(b.url)) > waits, {
        within: 20_000,
        what: 'a poll of B, Redis back, that found the lease held by A again',
      });
      // And hears A's events again: its subscriber connection is back on the channel.
      await until(async () => (await validatorListeners()) === listeners, {
        within: 20_000,
        what: "B back on the validators' channel",
      });
      devnet.resetRecords();
      changes += await changeValidators(3, [onA, onB]);
      expect(new Set(validatorPollers())).toEqual(new Set([aPid]));
      for (const sub of [onA, onB]) expect(nexts(sub)).toBe(changes);
      onA.close();
      onB.close();
    } finally {
      await proxy.close();
    }
  });
});
