import { createHash } from 'node:crypto';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, redisCluster } from '../../src/config.js';
import { type Devnet, startDevnet } from '../../src/devnet/index.js';
import { hashSlot, hashTag } from '../../src/scale/redis.js';
import { notPolls } from '../gateway/helpers.js';
import { hasRedisCluster, startRedisCluster, type TestRedisCluster } from '../support/redis-cluster.js';
import { killAll, type Started, startLiveGateway } from '../support/server-process.js';
import { type Subscription, subscribe } from '../support/sse.js';
import { until } from '../support/until.js';

/**
 * A Redis Cluster (contract.md §9): REDIS_URL `redis-cluster://` / `rediss-cluster://` names seed
 * nodes; keys are hash-tagged so that every script stays in one slot; live events go over sharded
 * pub/sub. Two real gateway processes on a real three-node cluster and one devnet, connected as a
 * user limited to the gateway's keys and channels, share the response cache, one rate-limit budget
 * per client, persisted queries and one live poller, with no Redis error; a restart of the shard
 * that holds the blocks' slot, or its subscribers cut off, loses no block.
 * (test/scale/cluster.test.ts is about WORKERS, not this.)
 */

const POLL_MS = 100;
const LEASE_MS = 600;
const BLOCKS = 'subscription { blockAdded { height } }';

describe('REDIS_URL naming a cluster', () => {
  const config = (url: string) => loadConfig({ REDIS_URL: url }).scale.redisUrl;

  it('takes seed nodes after the user info, or as Apollo Router writes them (?node=)', () => {
    const url = 'redis-cluster://127.0.0.1:7000,127.0.0.1:7001';
    expect(config(url)).toBe(url);
    expect(redisCluster(url)).toEqual({
      nodes: [
        { host: '127.0.0.1', port: 7000 },
        { host: '127.0.0.1', port: 7001 },
      ],
      tls: false,
      auth: null,
    });
    expect(redisCluster('rediss-cluster://gateway:p%40ss@redis.internal?node=[fd00::2]:6380')).toEqual({
      nodes: [
        { host: 'redis.internal', port: 6379 },
        { host: 'fd00::2', port: 6380 },
      ],
      tls: true,
      auth: { username: 'gateway', password: 'p@ss' },
    });
    expect(redisCluster('redis://127.0.0.1:6379')).toBeNull();
  });

  it.each([
    ['no host', 'redis-cluster://', /names no node/],
    ['no host but a user', 'redis-cluster://gateway:secret@', /names no node/],
    ['an empty password', 'redis-cluster://gateway:@10.0.0.1:6379', /password is empty/],
    ['an empty user info', 'rediss-cluster://:@10.0.0.1:6379', /password is empty/],
    ['a user without a password', 'redis-cluster://gateway@10.0.0.1:6379', /password is empty/],
    ['a database', 'redis-cluster://10.0.0.1:6379/2', /database 0 only/],
    ['another parameter', 'redis-cluster://10.0.0.1:6379?db=1', /only node= parameters/],
    ['a node that is no host:port', 'redis-cluster://10.0.0.1:6379,10.0.0.2:port', /expected host:port/],
    ['another scheme', 'redis-sentinel://10.0.0.1:26379', /redis-cluster:\/\//],
  ])('refuses %s at start', (_, url, message) => {
    expect(() => config(url)).toThrow(ConfigError);
    expect(() => config(url)).toThrow(message);
  });
});

let cluster: TestRedisCluster;
let devnet: Devnet;
const processes: Started[] = [];

beforeAll(async () => {
  if (!hasRedisCluster) return;
  cluster = await startRedisCluster();
  devnet = await startDevnet({ seed: 'cluster-redis', record: true });
}, 60_000);

afterAll(async () => {
  await killAll(processes);
  await devnet?.close();
  await cluster?.close();
});

/** One POST on a connection of its own from `from` (a client of its own); status and body. */
function post(url: string, body: unknown, from: string): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: 'POST', agent: false, localAddress: from, headers: { 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

/** The sum of a counter's series on a process's /metrics. */
async function counted(url: string, name: string): Promise<number> {
  const text = await (await fetch(new URL('/metrics', url))).text();
  return text
    .split('\n')
    .filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `))
    .reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0);
}

/** The process ids whose block polls reached the devnet (their request ids are `live-blocks-<pid>-<n>`). */
const pollers = () =>
  new Set(
    devnet.requests.flatMap((r) => {
      const id = /^live-blocks-(\d+)-\d+$/.exec(String(r.headers['x-request-id']));
      return id ? [Number(id[1])] : [];
    }),
  );

/** Resolves once some process asks the devnet for the block after its head. */
async function headFound(): Promise<void> {
  const next = String(devnet.data.blocks.count + 1);
  await until(
    () => devnet.requests.some((r) => r.service === 'scan' && new URLSearchParams(r.query).get('q') === next),
    { within: 30_000, what: 'a poll asking for the block after the head' },
  );
}

/** The heights a subscriber has been sent so far, in order. */
const heightsOf = (sub: Subscription): number[] =>
  sub.messages.filter((m) => m.event === 'next').map((m) => JSON.parse(m.data).data.blockAdded.height);

/** Waits until every subscriber has been sent the last of `expected` (20 s at most), then compares. */
async function sentEach(subs: Subscription[], expected: number[]): Promise<void> {
  const last = expected.at(-1) as number;
  await until(() => subs.every((sub) => heightsOf(sub).includes(last)), {
    within: 20_000,
    what: `block ${last} sent to every subscriber`,
  }).catch(() => undefined);
  for (const sub of subs) expect(heightsOf(sub)).toEqual(expected);
}

describe.runIf(hasRedisCluster)('two gateway processes on a three-node Redis Cluster', () => {
  let a: Started;
  let b: Started;
  beforeAll(async () => {
    const env = {
      REDIS_URL: cluster.url,
      REDIS_TIMEOUT_MS: '1000',
      // Four validator-statistics reads (cost 11 each) fit, a fifth does not.
      RATE_LIMIT_POINTS: '45',
      RATE_LIMIT_WINDOW_MS: '600000',
      // Their latest answers keep no block poller listening (the next describe counts the
      // subscribers of the blocks' shard channel: its own two processes).
      CHAIN_HEAD_HOLD_MS: '0',
    };
    const live = { pollMs: POLL_MS, leaseMs: LEASE_MS };
    [a, b] = await Promise.all([
      startLiveGateway(devnet.urls, live, env, processes),
      startLiveGateway(devnet.urls, live, env, processes),
    ]);
  }, 60_000);

  it('places keys and channels by the same slots as Redis does', async () => {
    for (const key of [
      '{blocks}',
      'gw:v2:x:live:lease:{blocks}',
      'a{b}c{d}',
      '{}x',
      'x{',
      'plain',
      '{{a}}',
    ]) {
      expect(hashSlot(key)).toBe(await cluster.call(0, 'CLUSTER', 'KEYSLOT', key));
    }
    expect(() => hashTag('a}b')).toThrow();
  });

  it('answers on the second process what the first fetched, with no upstream call', async () => {
    const table = { query: '{ validatorStatistics { totalValidators activeValidators } }' };
    devnet.resetRecords();
    const first = await post(a.url, table, '127.0.0.3');
    expect(first.status).toBe(200);
    expect(notPolls(devnet.requests).length).toBe(Math.ceil(devnet.data.validators.length / 100));
    devnet.resetRecords();
    for (const url of [b.url, b.url]) expect((await post(url, table, '127.0.0.3')).body).toEqual(first.body);
    expect(notPolls(devnet.requests)).toHaveLength(0);
  });

  it('keeps one rate-limit budget per client across both processes', async () => {
    const statistics = { query: '{ validatorStatistics { totalValidators } }' };
    const statuses: number[] = [];
    for (const url of [a.url, b.url, a.url, b.url, a.url, b.url]) {
      statuses.push((await post(url, statistics, '127.0.0.4')).status);
    }
    expect(statuses).toEqual([200, 200, 200, 200, 429, 429]);
    expect((await post(b.url, statistics, '127.0.0.5')).status).toBe(200);
  });

  it('finds on the second process a persisted query registered on the first', async () => {
    const query = '{ validatorStatistics { activeValidators } }';
    const sha256Hash = createHash('sha256').update(query).digest('hex');
    const extensions = { persistedQuery: { version: 1, sha256Hash } };
    // Unknown to both at first.
    expect((await post(b.url, { extensions }, '127.0.0.6')).body.errors[0].extensions.code).toBe(
      'PERSISTED_QUERY_NOT_FOUND',
    );
    const registered = await post(a.url, { query, extensions }, '127.0.0.6');
    expect(registered.status).toBe(200);
    // Registered in Redis after the answer: once it is there, the other process runs it by hash.
    await until(
      async () => {
        const [documents] = (await cluster.keys()).filter((k) => k.endsWith('{apq}:documents'));
        if (documents === undefined) return false;
        return (await cluster.call(await cluster.nodeOf(documents), 'HEXISTS', documents, sha256Hash)) === 1;
      },
      { what: 'the document registered in the cluster' },
    );
    const byHash = await post(b.url, { extensions }, '127.0.0.6');
    expect(byHash.status).toBe(200);
    expect(byHash.body).toEqual(registered.body);
  });

  it('polls from one process and delivers each block once to every subscriber of both, over sharded pub/sub', {
    timeout: 60_000,
  }, async () => {
    devnet.resetRecords();
    const subs: Subscription[] = [];
    for (const url of [a.url, b.url, a.url, b.url]) subs.push(await subscribe(url, BLOCKS));
    await headFound();
    const [holder, ...others] = [...pollers()];
    expect(others).toEqual([]);
    expect([a.child.pid, b.child.pid]).toContain(holder);
    const { heights } = devnet.advance(3);
    for (const sub of subs) expect((await sub.take(3)).map((e) => e.data.blockAdded.height)).toEqual(heights);
    const [next] = devnet.advance(1).heights;
    for (const sub of subs) expect((await sub.next()).data.blockAdded.height).toBe(next);
    expect([...pollers()]).toEqual([holder]);
    // The events went over a shard channel, in the slot of the source's lease and state.
    const keys = (await cluster.keys()).filter((k) => k.includes('live:'));
    expect(keys.map((k) => k.slice(k.indexOf('live:')))).toEqual([
      'live:lease:{blocks}',
      'live:state:{blocks}',
    ]);
    const shard = await cluster.nodeOf('{blocks}');
    const [channel] = (await cluster.call(
      shard,
      'PUBSUB',
      'SHARDCHANNELS',
      '*live:events:{blocks}',
    )) as string[];
    expect(hashSlot(channel as string)).toBe(hashSlot(keys[0] as string));
    expect(await cluster.call(shard, 'PUBSUB', 'SHARDNUMSUB', channel as string)).toEqual([channel, 2]);
    for (const node of [0, 1, 2]) expect(await cluster.call(node, 'PUBSUB', 'CHANNELS', '*')).toEqual([]);
    for (const sub of subs) sub.close();
  });

  it('met no Redis error on either process', async () => {
    for (const gateway of [a, b]) {
      expect(await counted(gateway.url, 'redis_errors_total')).toBe(0);
      expect(await counted(gateway.url, 'redis_rejected_total')).toBe(0);
      expect(gateway.output()).not.toMatch(/CROSSSLOT|redis unavailable|MOVED|READONLY/);
      // /readyz says what its last check found (none at first): it says so once it checks.
      await until(async () => (await (await fetch(new URL('/readyz', gateway.url))).json()).redis === 'up', {
        what: "the process's /readyz reporting Redis up",
      });
    }
  });
});

describe.runIf(hasRedisCluster)('the shard that holds the blocks, mid-stream', () => {
  let a: Started;
  let b: Started;
  let shard: number;
  let channel: string;
  let subs: Subscription[];
  const expected: number[] = [];
  /** How many subscribers the blocks' shard channel has on its node (one per process). */
  const subscribers = async () =>
    ((await cluster.call(shard, 'PUBSUB', 'SHARDNUMSUB', channel).catch(() => [])) as unknown[])[1];
  const bothSubscribed = () =>
    until(async () => (await subscribers()) === 2, {
      within: 30_000,
      what: 'both processes subscribed on the shard',
    });

  beforeAll(async () => {
    const env = { REDIS_URL: cluster.url, REDIS_TIMEOUT_MS: '300' };
    const live = { pollMs: POLL_MS, leaseMs: LEASE_MS };
    [a, b] = await Promise.all([
      startLiveGateway(devnet.urls, live, env, processes),
      startLiveGateway(devnet.urls, live, env, processes),
    ]);
    subs = [await subscribe(a.url, BLOCKS), await subscribe(b.url, BLOCKS)];
    devnet.resetRecords();
    await headFound();
    shard = await cluster.nodeOf('{blocks}');
    [channel] = (await cluster.call(shard, 'PUBSUB', 'SHARDCHANNELS', '*live:events:{blocks}')) as [string];
    await bothSubscribed();
    expected.push(...devnet.advance(1).heights);
    await sentEach(subs, expected);
  }, 60_000);

  afterAll(() => {
    for (const sub of subs ?? []) sub.close();
  });

  it('loses no block on either process when the node restarts: each subscriber follows it back', {
    timeout: 60_000,
  }, async () => {
    await cluster.stop(shard);
    // A block while the shard is away, one as it comes back, one once both hear it again.
    expected.push(...devnet.advance(1).heights);
    await cluster.start(shard);
    expected.push(...devnet.advance(1).heights);
    await sentEach(subs, expected);
    await bothSubscribed();
    expected.push(...devnet.advance(1).heights);
    await sentEach(subs, expected);
  });

  it('catches up what was published while its subscribers were cut off, once they are back', {
    timeout: 60_000,
  }, async () => {
    // The shard drops both subscriber connections and refuses SSUBSCRIBE for a while; commands
    // still work, so the poller publishes a block nobody hears.
    await cluster.call(shard, 'ACL', 'SETUSER', 'gateway', '-ssubscribe');
    try {
      await cluster.call(shard, 'CLIENT', 'KILL', 'TYPE', 'pubsub');
      expect(await subscribers()).toBe(0);
      devnet.resetRecords();
      const [missed] = devnet.advance(1).heights;
      await headFound();
      for (const sub of subs) expect(heightsOf(sub)).not.toContain(missed);
      expected.push(missed as number);
    } finally {
      await cluster.call(shard, 'ACL', 'SETUSER', 'gateway', '+ssubscribe');
    }
    // Subscribed again, each process reads what it missed: no block after it comes to reveal it.
    await sentEach(subs, expected);
    await bothSubscribed();
    expected.push(...devnet.advance(1).heights);
    await sentEach(subs, expected);
  });
});
