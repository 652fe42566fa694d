import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, secretWarnings } from '../../src/config.js';
import { createGateway, type Gateway, type GatewayOptions } from '../../src/gateway.js';
import { keyId, RedisValues } from '../../src/scale/redis-values.js';
import { listen, parseAnswer, testSettings, useDevnetAndRedis } from '../gateway/helpers.js';
import { startServerProcess } from '../support/server-process.js';
import { type Subscription, subscribe } from '../support/sse.js';
import { until } from '../support/until.js';

/**
 * Redis messages are fresh (contract.md §9): whoever can reach the deployment's Redis can capture
 * what the gateways publish and store (PSUBSCRIBE, GET) and send it again. Signed or sealed by the
 * deployment, an old message still proves its key; what it must not do is end a stream, pass for
 * current, or take a poller back in time. Two deployments with other secrets (or one half-way
 * through a rotation) on one Redis never touch each other's keys, and a cursor signed with the
 * secret being rotated out is taken back while CURSOR_SECRET_PREVIOUS names it.
 */

const SECRET = 'redis-replay-test-secret-0123456789';
const OTHER_SECRET = 'redis-replay-other-secret-0123456789';
const BLOCKS = 'subscription { blockAdded { height } }';
const FAILED = 'subscription { failedTransactionAdded { hash } }';
const STATISTICS = 'subscription { validatorStatisticsUpdated { totalStakedAmount } }';
const VALIDATOR_PAGE =
  'query ($after: String) { validators(first: 3, after: $after) { nodes { operatorAddress } pageInfo { endCursor } } }';

describe('Redis messages are fresh', () => {
  const env = useDevnetAndRedis();
  let closers: (() => Promise<void>)[] = [];

  afterEach(async () => {
    await Promise.all(closers.map((close) => close()));
    closers = [];
  });

  /** A gateway on the devnet and the test's Redis, served over a real socket; `close` stops it early. */
  async function start(
    overrides: Partial<GatewayOptions> = {},
  ): Promise<{ gateway: Gateway; url: string; close(): Promise<void> }> {
    const base = testSettings();
    const gateway = createGateway({
      ...testSettings({
        cursorSecret: SECRET,
        live: { ...loadConfig({}).live, pollMs: 50, leaseMs: 1_000 },
        scale: { ...base.scale, redisUrl: env.redis.url, redisTimeoutMs: 1_000, rateLimitPoints: 0 },
        ...overrides,
      }),
      upstreamUrls: env.devnet.urls,
    });
    const served = await listen(gateway);
    let closed: Promise<void> | null = null;
    const close = () => {
      closed ??= served.close().then(() => gateway.close());
      return closed;
    };
    closers.push(close);
    return { gateway, url: served.url, close };
  }

  /** A message's lifetime in these gateways: three leases of 1 s (bus.ts). */
  const LIFETIME_MS = 3_000;
  /** Until a message captured at `at` is past its lifetime: the clock, observed. */
  const outlived = (at: number) =>
    until(() => Date.now() > at + LIFETIME_MS + 100, {
      what: 'the capture past its lifetime',
      within: 10_000,
    });

  /** Everything published on channels matching `pattern`, as a neighbour with PSUBSCRIBE hears it. */
  async function spy(pattern: string): Promise<{ channel: string; message: string }[]> {
    const client = new Redis(env.redis.url, { maxRetriesPerRequest: 1 });
    const heard: { channel: string; message: string }[] = [];
    client.on('pmessage', (_p: string, channel: string, message: string) => heard.push({ channel, message }));
    await client.psubscribe(pattern);
    closers.push(async () => client.disconnect());
    return heard;
  }

  /** `redis_rejected_total{kind}` on a gateway's /metrics (0 while the series does not exist). */
  async function rejected(url: string, kind: string): Promise<number> {
    const text = await (await fetch(new URL('/metrics', url))).text();
    const series = `redis_rejected_total{kind="${kind}"} `;
    const line = text.split('\n').find((l) => l.startsWith(series));
    return line === undefined ? 0 : Number(line.slice(series.length));
  }

  /** Polls of the blocks a gateway made (`live_polls_total{source="blocks",result="ok"}`). */
  async function okPolls(url: string): Promise<number> {
    const text = await (await fetch(new URL('/metrics', url))).text();
    const series = 'live_polls_total{source="blocks",result="ok"} ';
    const line = text.split('\n').find((l) => l.startsWith(series));
    return line === undefined ? 0 : Number(line.slice(series.length));
  }

  /** The one channel matching `pattern` once `listeners` connections listen on it (patterns aside). */
  async function listened(pattern: string, listeners = 1): Promise<string> {
    let channel: string | undefined;
    await until(
      async () => {
        [channel] = (await env.inspect.call('PUBSUB', 'CHANNELS', pattern)) as string[];
        if (channel === undefined) return false;
        const [, count] = (await env.inspect.call('PUBSUB', 'NUMSUB', channel)) as [string, number];
        return Number(count) === listeners;
      },
      { what: `${listeners} listener(s) on a channel matching ${pattern}` },
    );
    return channel as string;
  }

  /** Moves the chain until it adds a failed transaction; their hashes. */
  const addFailures = () => {
    let added: string[] = [];
    while (added.length === 0) added = env.devnet.advance(1).failedTxs;
    return added;
  };

  /** Moves the chain until validators change (and with them the statistics). */
  const moveValidators = () => {
    while (env.devnet.advance(1).validators.length === 0);
  };

  /** Explorer reads with `token` of one item: the token checks (a subscribe's, a refusal's confirmation). */
  const tokenChecks = (token: string) =>
    env.devnet.requests.filter((r) => {
      if (r.service !== 'explorer' || r.headers.authorization !== `Bearer ${token}`) return false;
      const q = new URLSearchParams(r.query);
      return (q.get('pagination.page_size') ?? q.get('pagination.pageSize')) === '1';
    }).length;

  /**
   * A subscriber to the failed transactions of `token` on `url`, once its group's first poll has
   * ended and its channel is listened to; and the channel.
   */
  async function followFailed(gateway: Gateway, url: string, token: string) {
    const polled = gateway.live.hub.afterPoll('failed');
    const sub = await subscribe(url, FAILED, { token });
    expect(sub.status).toBe(200);
    await polled;
    return { sub, channel: await listened('*live:events:{failed:*') };
  }

  it('seals a refusal to the length of a transaction: the ciphertext does not tell them apart', async () => {
    const token = 'sealed-length-token';
    env.devnet.grantToken(token);
    const heard = await spy('*live:events:{failed:*');
    const { gateway, url } = await start();
    const { sub } = await followFailed(gateway, url, token);
    const added = addFailures();
    expect((await sub.take(added.length)).map((e) => e.data.failedTransactionAdded.hash)).toEqual(added);
    await until(() => heard.length === added.length, { what: 'each failure heard by the spy' });
    env.devnet.revokeToken(token);
    expect((await sub.next()).errors.map((e: any) => e.extensions.code)).toEqual(['UNAUTHENTICATED']);
    await until(() => heard.length === added.length + 1, { what: 'the refusal heard by the spy' });
    const lengths = heard.map((h) => h.message.length);
    expect(new Set(lengths).size).toBe(1);
  });

  it('drops a captured "token refused" published again: the stream stays open, each replay counted', async () => {
    const token = 'replayed-refusal-token';
    env.devnet.grantToken(token);
    const heard = await spy('*live:events:{failed:*');
    const { gateway, url } = await start();
    const first = await followFailed(gateway, url, token);
    env.devnet.revokeToken(token);
    expect((await first.sub.next()).errors.map((e: any) => e.extensions.code)).toEqual(['UNAUTHENTICATED']);
    await until(() => heard.length === 1, { what: 'the refusal heard by the spy' });
    const refusal = heard[0] as { channel: string; message: string };
    await until(() => gateway.live.hub.sources().length === 0, { what: 'the refused group given up' });
    // The explorer accepts the token again: a new group of it, on the same channel.
    env.devnet.grantToken(token);
    const second = await followFailed(gateway, url, token);
    expect(second.channel).toBe(refusal.channel);
    env.devnet.resetRecords();
    for (let i = 0; i < 3; i++) await env.inspect.publish(refusal.channel, refusal.message);
    const added = addFailures();
    // Published before the failures, the replays were heard first: the stream got past them.
    const events = await second.sub.take(added.length);
    expect(events.map((e) => e.data.failedTransactionAdded.hash)).toEqual(added);
    expect(await rejected(url, 'stale')).toBe(3);
    // Dropped as they arrived: no replay cost an explorer read to confirm it.
    expect(tokenChecks(token)).toBe(0);
    second.sub.close();
  });

  it('does not deliver a captured older statistics event as current', async () => {
    const heard = await spy('*live:events:{validators}');
    const { gateway, url } = await start();
    const polled = gateway.live.hub.afterPoll('validators');
    const stats = await subscribe(url, STATISTICS);
    expect(stats.status).toBe(200);
    await polled;
    await listened('*live:events:{validators}');
    const amounts: string[] = [];
    for (let round = 0; round < 2; round++) {
      moveValidators();
      amounts.push((await stats.next()).data.validatorStatisticsUpdated.totalStakedAmount);
    }
    expect(amounts[0]).not.toBe(amounts[1]);
    const old = heard.find((h) => h.message.includes('"kind":"statistics"')) as {
      channel: string;
      message: string;
    };
    await env.inspect.publish(old.channel, old.message);
    moveValidators();
    const next = (await stats.next()).data.validatorStatisticsUpdated.totalStakedAmount;
    expect(next).toBe(env.devnet.data.statistics.total_staked_amount);
    expect(await rejected(url, 'stale')).toBe(1);
    stats.close();
  });

  it('does not take a poller back to an older state written back: no block read or delivered again', {
    timeout: 40_000,
  }, async () => {
    const heightsOf = (sub: Subscription) =>
      sub.messages.filter((m) => m.event === 'next').map((m) => JSON.parse(m.data).data.blockAdded.height);
    const a = await start();
    const onA = await subscribe(a.url, BLOCKS);
    await until(async () => (await env.inspect.keys('*live:state:{blocks}')).length === 1, {
      what: "A's first poll of the blocks stored",
    });
    const [stateKey] = await env.inspect.keys('*live:state:{blocks}');
    const leaseKey = (stateKey as string).replace('live:state:', 'live:lease:');
    const b = await start();
    const elsewhere = b.gateway.live.hub.afterPoll('blocks');
    const onB = await subscribe(b.url, BLOCKS);
    expect(await elsewhere).toBe('elsewhere');
    await listened('*live:events:{blocks}', 2);
    const old = (await env.inspect.get(stateKey as string)) as string;
    const { heights } = env.devnet.advance(2);
    for (const sub of [onA, onB])
      expect((await sub.take(2)).map((e) => e.data.blockAdded.height)).toEqual(heights);
    env.devnet.resetRecords();
    // The older state back, and no lease: the next claim (either instance's) reads it.
    await env.inspect
      .multi()
      .set(stateKey as string, old, 'PX', 60_000)
      .del(leaseKey)
      .exec();
    await until(
      async () => {
        const [lease, state] = await Promise.all([
          env.inspect.get(leaseKey),
          env.inspect.get(stateKey as string),
        ]);
        return lease !== null && state !== old;
      },
      { what: 'the lease taken again and a newer state stored' },
    );
    const next = env.devnet.advance(1).heights;
    for (const sub of [onA, onB]) expect((await sub.next()).data.blockAdded.height).toBe(next[0]);
    const asked = env.devnet.requests
      .filter((r) => r.service === 'scan')
      .map((r) => Number(new URLSearchParams(r.query).get('q')));
    expect(asked).toContain(next[0]);
    for (const height of heights) expect(asked).not.toContain(height);
    for (const sub of [onA, onB]) expect(heightsOf(sub)).toEqual([...heights, ...next]);
    expect((await rejected(a.url, 'stale')) + (await rejected(b.url, 'stale'))).toBe(1);
    onA.close();
    onB.close();
  });

  it('does not deliver a captured statistics event past its lifetime to a process that has heard nothing newer', {
    timeout: 30_000,
  }, async () => {
    const heard = await spy('*live:events:{validators}');
    const a = await start();
    const polled = a.gateway.live.hub.afterPoll('validators');
    const onA = await subscribe(a.url, STATISTICS);
    await polled;
    await listened('*live:events:{validators}');
    moveValidators();
    await onA.next();
    const old = heard.find((h) => h.message.includes('"kind":"statistics"')) as {
      channel: string;
      message: string;
    };
    const capturedAt = Date.now();
    // A process started later has heard nothing of the source: no order to drop the replay by.
    await outlived(capturedAt);
    const b = await start();
    const elsewhere = b.gateway.live.hub.afterPoll('validators');
    const onB = await subscribe(b.url, STATISTICS);
    expect(onB.status).toBe(200);
    await elsewhere;
    await listened('*live:events:{validators}', 2);
    await env.inspect.publish(old.channel, old.message);
    moveValidators();
    const first = (await onB.next()).data.validatorStatisticsUpdated.totalStakedAmount;
    expect(first).toBe(env.devnet.data.statistics.total_staked_amount);
    expect(await rejected(b.url, 'stale')).toBe(1);
    onA.close();
    onB.close();
  });

  it('does not let a process with no state of its own take a stored state past its lifetime: no block read again', {
    timeout: 30_000,
  }, async () => {
    const a = await start();
    const onA = await subscribe(a.url, BLOCKS);
    await until(async () => (await env.inspect.keys('*live:state:{blocks}')).length === 1, {
      what: "A's first poll of the blocks stored",
    });
    const [stateKey] = (await env.inspect.keys('*live:state:{blocks}')) as [string];
    const old = (await env.inspect.get(stateKey)) as string;
    const capturedAt = Date.now();
    const { heights } = env.devnet.advance(2);
    expect((await onA.take(2)).map((e) => e.data.blockAdded.height)).toEqual(heights);
    onA.close();
    await a.close();
    await outlived(capturedAt);
    // Written back, and no lease: the first claim of a process started now reads it.
    await env.inspect.set(stateKey, old, 'PX', 60_000);
    env.devnet.resetRecords();
    const c = await start();
    const polled = c.gateway.live.hub.afterPoll('blocks');
    const onC = await subscribe(c.url, BLOCKS);
    expect(await polled).toBe('ok');
    const next = env.devnet.advance(1).heights;
    // Its first block is the chain's next: none of those A delivered is delivered again.
    expect((await onC.next()).data.blockAdded.height).toBe(next[0]);
    expect(await rejected(c.url, 'stale')).toBe(1);
    onC.close();
  });

  it('keeps two deployments with different secrets on one Redis apart: each subscriber gets every block once', {
    timeout: 40_000,
  }, async () => {
    const heightsOf = (sub: Subscription) =>
      sub.messages.filter((m) => m.event === 'next').map((m) => JSON.parse(m.data).data.blockAdded.height);
    const a = await start();
    const b = await start({ cursorSecret: OTHER_SECRET });
    const onA = await subscribe(a.url, BLOCKS);
    const onB = await subscribe(b.url, BLOCKS);
    // Each deployment polls for itself.
    await until(async () => (await okPolls(a.url)) > 0 && (await okPolls(b.url)) > 0, {
      what: 'a poll of the blocks by each deployment',
    });
    const { heights } = env.devnet.advance(3);
    const more = env.devnet.advance(1).heights;
    const expected = [...heights, ...more];
    await until(() => [onA, onB].every((sub) => heightsOf(sub).length >= expected.length), {
      within: 10_000,
      what: 'four blocks sent to each subscriber',
    }).catch(() => undefined);
    for (const sub of [onA, onB]) expect(heightsOf(sub)).toEqual(expected);
    // Under keys of its own: neither met a value of the other.
    expect(await env.inspect.keys('*live:state:{blocks}')).toHaveLength(2);
    for (const url of [a.url, b.url]) {
      for (const kind of ['lease', 'state', 'event', 'stale']) expect(await rejected(url, kind)).toBe(0);
    }
    onA.close();
    onB.close();
  });

  describe('a CURSOR_SECRET rotation', () => {
    async function page(url: string, after?: string) {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ query: VALIDATOR_PAGE, variables: { after } }),
      });
      return parseAnswer(await res.text());
    }

    it('takes back a cursor signed with CURSOR_SECRET_PREVIOUS, and signs new ones with CURSOR_SECRET', async () => {
      const old = await start({ cursorSecret: OTHER_SECRET });
      const cursor = (await page(old.url)).data.validators.pageInfo.endCursor as string;
      const second = (await page(old.url, cursor)).data.validators;
      const rotating = await start({
        cursorSecret: SECRET,
        cursorSecretPrevious: OTHER_SECRET,
      } as Partial<GatewayOptions>);
      const taken = await page(rotating.url, cursor);
      expect(taken.errors).toBeUndefined();
      expect(taken.data.validators.nodes).toEqual(second.nodes);
      // Signed with the new secret alone: the old deployment refuses the cursors it hands out now.
      const fresh = (await page(rotating.url)).data.validators.pageInfo.endCursor as string;
      expect((await page(old.url, fresh)).errors[0].extensions.code).toBe('BAD_USER_INPUT');
      const rotated = await start({ cursorSecret: SECRET });
      expect((await page(rotated.url, fresh)).errors).toBeUndefined();
    });

    it('refuses a cursor of the previous secret once CURSOR_SECRET_PREVIOUS is dropped', async () => {
      const old = await start({ cursorSecret: OTHER_SECRET });
      const cursor = (await page(old.url)).data.validators.pageInfo.endCursor as string;
      const rotated = await start({ cursorSecret: SECRET });
      env.devnet.resetRecords();
      const refused = await page(rotated.url, cursor);
      expect(refused.errors.map((e: any) => e.extensions.code)).toEqual(['BAD_USER_INPUT']);
      // Refused before any upstream call.
      expect(env.devnet.requests).toEqual([]);
    });

    it('proves Redis values of the previous secret too, and signs and seals with the current one alone', () => {
      const counted: string[] = [];
      const old = new RedisValues(OTHER_SECRET, () => {});
      const rotating = new RedisValues(SECRET, (kind) => counted.push(kind), OTHER_SECRET);
      const current = new RedisValues(SECRET, (kind) => counted.push(kind));
      const key = 'gw:v1:schema:upstreams:live:state:failed:abc';
      expect(rotating.verify(key, old.sign(key, 'signed before'), 'state')).toBe('signed before');
      expect(rotating.open(key, old.seal(key, 'sealed before'), 'state')).toBe('sealed before');
      expect(current.verify(key, rotating.sign(key, 'signed now'), 'state')).toBe('signed now');
      expect(current.open(key, rotating.seal(key, 'sealed now'), 'state')).toBe('sealed now');
      expect(counted).toEqual([]);
      expect(current.verify(key, old.sign(key, 'signed before'), 'state')).toBeNull();
      expect(counted).toEqual(['state']);
      // Keys of one secret are named apart from another's.
      expect(keyId(SECRET)).toMatch(/^[0-9a-f]{8}$/);
      expect(keyId(SECRET)).not.toBe(keyId(OTHER_SECRET));
    });

    it('parses CURSOR_SECRET_PREVIOUS: 16 bytes or more, and only beside CURSOR_SECRET', () => {
      const current = 'a'.repeat(32);
      const previous = 'b'.repeat(32);
      expect(loadConfig({ CURSOR_SECRET: current }).cursorSecretPrevious).toBeNull();
      expect(
        loadConfig({ CURSOR_SECRET: current, CURSOR_SECRET_PREVIOUS: previous }).cursorSecretPrevious,
      ).toBe(previous);
      expect(() => loadConfig({ CURSOR_SECRET_PREVIOUS: previous })).toThrow(ConfigError);
      expect(() => loadConfig({ CURSOR_SECRET: current, CURSOR_SECRET_PREVIOUS: 'short' })).toThrow(
        'CURSOR_SECRET_PREVIOUS must be at least 16 bytes long',
      );
    });
  });

  describe('without CURSOR_SECRET', () => {
    it('warns at start when REDIS_URL is set: the derived secret keys Redis too', async () => {
      const gateway = startServerProcess({
        REDIS_URL: env.redis.url,
        CURSOR_SECRET: '',
        ...{ SCAN_PORT: '0', EXPLORER_PORT: '0', STAKE_PORT: '0' },
      });
      closers.push(async () => {
        gateway.child.kill('SIGKILL');
      });
      await gateway.printed(/CURSOR_SECRET is not set: [^"]*Redis/);
    });

    it('warns of Redis only when REDIS_URL is set, and of nothing once CURSOR_SECRET is', () => {
      const redisWarning = /CURSOR_SECRET is not set: [^"]*Redis/;
      const warnings = (env: Record<string, string>) => secretWarnings(loadConfig(env));
      expect(
        warnings({ REDIS_URL: 'redis://127.0.0.1:6379' }).filter((w) => redisWarning.test(w)),
      ).toHaveLength(1);
      expect(warnings({}).filter((w) => redisWarning.test(w))).toEqual([]);
      expect(warnings({ REDIS_URL: 'redis://127.0.0.1:6379', CURSOR_SECRET: SECRET })).toEqual([]);
    });
  });
});
