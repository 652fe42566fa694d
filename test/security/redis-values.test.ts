import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createGateway, type GatewayOptions } from '../../src/gateway.js';
import { deploymentPrefix } from '../../src/scale/redis.js';
import { sharedKeyPrefix } from '../../src/scale/shared-cache.js';
import { printedSchema } from '../../src/schema/print.js';
import { listen, parseAnswer, testSettings, useDevnetAndRedis } from '../gateway/helpers.js';
import { subscribe } from '../support/sse.js';
import { until } from '../support/until.js';

/**
 * Redis is a neighbour, not a friend (contract.md §8): whoever can write to the deployment's Redis
 * must not answer for the gateway, and whoever can read it must not see what only a token holder
 * may. Each test writes into (or listens on) the Redis of real gateways, over real HTTP, the way
 * such a neighbour would: without the deployment's secret. What it planted is never served or
 * delivered, is counted in `redis_rejected_total{kind}`, and the upstreams are asked as if it were
 * not there.
 */

const SECRET = 'redis-values-test-secret-0123456789';
const BLOCKS = 'subscription { blockAdded { height } }';
const FAILED = 'subscription { failedTransactionAdded { hash initiator error } }';
const BLOCK_QUERY = '{ block(height: 5) { height hash } }';
const VALIDATORS_QUERY = '{ validators(pageSize: 3) { nodes { moniker operatorAddress } } }';
/** Far enough for every test: what is planted outlives the test. */
const PLANTED_MS = 600_000;

describe('values read back from Redis are authenticated', () => {
  const env = useDevnetAndRedis();
  let closers: (() => Promise<void>)[] = [];

  afterEach(async () => {
    await Promise.all(closers.map((close) => close()));
    closers = [];
  });

  /** A gateway on the devnet and the test's Redis, served over a real socket. */
  async function start(overrides: Partial<GatewayOptions> = {}): Promise<string> {
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
    closers.push(async () => {
      await served.close();
      await gateway.close();
    });
    return served.url;
  }

  /** The deployment's key prefix, as the gateways build it (schema, format, upstreams and secret). */
  const prefix = () =>
    deploymentPrefix(
      sharedKeyPrefix(printedSchema(), { urls: env.devnet.urls, dialects: testSettings().dialects }),
      SECRET,
    );

  async function post(url: string, body: Record<string, unknown>) {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify(body),
    });
    return parseAnswer(await res.text());
  }

  /** `redis_rejected_total{kind}` on a gateway's /metrics (0 while the series does not exist). */
  async function rejected(url: string, kind: string): Promise<number> {
    const text = await (await fetch(new URL('/metrics', url))).text();
    const series = `redis_rejected_total{kind="${kind}"} `;
    const line = text.split('\n').find((l) => l.startsWith(series));
    return line === undefined ? 0 : Number(line.slice(series.length));
  }

  /** The one key matching `pattern`, once it exists. */
  async function keyOf(pattern: string): Promise<string> {
    let key: string | undefined;
    await until(
      async () => {
        [key] = await env.inspect.keys(pattern);
        return key !== undefined;
      },
      { what: `a key matching ${pattern} in Redis` },
    );
    return key as string;
  }

  /** What a shared-cache entry holds as JSON, whatever is written before it (`<expiry>|<json>`). */
  const jsonOf = (stored: string) => JSON.parse(stored.slice(stored.indexOf('|') + 1));
  /** A shared-cache entry as anyone who can write to Redis can make one: no key to sign it with. */
  const forgedEntry = (value: unknown) => `${Date.now() + PLANTED_MS}|${JSON.stringify(value)}`;

  describe('the shared caches', () => {
    const cached = { responseCacheTtlMs: 60_000, validatorCacheTtlMs: 60_000 };

    it('does not serve a forged response-cache entry: the next caller gets the devnet’s answer', async () => {
      const a = await start(cached);
      const real = await post(a, { query: BLOCK_QUERY });
      expect(real.data.block.height).toBe(5);
      const asked = env.devnet.requests.map((r) => r.path);
      expect(asked.length).toBeGreaterThan(0);
      const key = await keyOf('*responses:*');
      const planted = forgedEntry({ data: { block: { height: 5, hash: 'forged-by-a-neighbour' } } });
      await env.inspect.set(key, planted, 'PX', PLANTED_MS);
      env.devnet.resetRecords();
      const b = await start(cached);
      expect(await post(b, { query: BLOCK_QUERY })).toEqual(real);
      // Asked as a cold instance asks, once: the forgery was a miss, not a wait for a fetch elsewhere.
      expect(env.devnet.requests.map((r) => r.path)).toEqual(asked);
      expect(await rejected(b, 'responses')).toBe(1);
      // B's own answer replaced the forgery: a third instance is served from Redis, asking nothing.
      await until(async () => (await env.inspect.get(key)) !== planted, {
        what: "B's own answer in place of the forged entry",
      });
      env.devnet.resetRecords();
      expect(await post(await start(cached), { query: BLOCK_QUERY })).toEqual(real);
      expect(env.devnet.requests).toEqual([]);
    });

    it('does not serve a forged validator list', async () => {
      const lists = { ...cached, responseCacheTtlMs: 0 };
      const a = await start(lists);
      const real = await post(a, { query: VALIDATORS_QUERY });
      expect(real.data.validators.nodes).toHaveLength(3);
      const asked = env.devnet.requests.map((r) => r.path);
      const key = await keyOf('*validators:{list}');
      const list = jsonOf((await env.inspect.get(key)) as string);
      list.validators[0].moniker = 'Forged by a neighbour';
      await env.inspect.set(key, forgedEntry(list), 'PX', PLANTED_MS);
      env.devnet.resetRecords();
      const b = await start(lists);
      const answer = await post(b, { query: VALIDATORS_QUERY });
      expect(answer).toEqual(real);
      expect(JSON.stringify(answer)).not.toContain('Forged by a neighbour');
      expect(env.devnet.requests.map((r) => r.path)).toEqual(asked);
      expect(await rejected(b, 'validators')).toBe(1);
    });
  });

  describe('live updates', () => {
    it('does not deliver a forged event published on the blocks channel; the real next block comes', async () => {
      const url = await start();
      const sub = await subscribe(url, BLOCKS);
      expect(sub.status).toBe(200);
      // The first poll found the head (and stored it), and the channel is listened to.
      await keyOf('*live:state:{blocks}');
      let channel: string | undefined;
      await until(
        async () => {
          [channel] = (await env.inspect.call('PUBSUB', 'CHANNELS', '*live:events:{blocks}')) as string[];
          return channel !== undefined;
        },
        { what: "the blocks' events channel listened to" },
      );
      const forged = { kind: 'block', block: { height: 999_999_999, hash: 'forged' }, polledAt: Date.now() };
      expect(await env.inspect.publish(channel as string, JSON.stringify(forged))).toBe(1);
      const { heights } = env.devnet.advance(1);
      expect((await sub.next()).data.blockAdded.height).toBe(heights[0]);
      expect(await rejected(url, 'event')).toBe(1);
      sub.close();
    });

    it('sends no private event or state through Redis in clear (PSUBSCRIBE * sees nothing of them)', async () => {
      const spy = new Redis(env.redis.url, { maxRetriesPerRequest: 1 });
      const heard: string[] = [];
      spy.on('pmessage', (_pattern: string, _channel: string, message: string) => heard.push(message));
      await spy.psubscribe('*');
      try {
        const url = await start();
        const sub = await subscribe(url, FAILED, { token: env.devnet.token });
        expect(sub.status).toBe(200);
        const stateKey = await keyOf('*live:state:{failed:*');
        const added: string[] = [];
        while (added.length < 3) added.push(...env.devnet.advance(1).failedTxs);
        const events = (await sub.take(added.length)).map((e) => e.data.failedTransactionAdded);
        // The positive control: the subscriber got each failure, with what the spy must not see.
        expect(events.map((e) => e.hash)).toEqual(added);
        const secrets = events.flatMap((e) => [e.hash, e.initiator, e.error]).filter((s) => s !== null);
        expect(secrets.length).toBeGreaterThan(added.length * 2);
        await until(() => heard.length >= added.length, {
          what: 'as many messages heard by the spy as failures added',
        });
        const stored = (await env.inspect.get(stateKey)) as string;
        for (const secret of secrets) {
          for (const message of heard) expect(message).not.toContain(secret);
          expect(stored).not.toContain(secret);
        }
        sub.close();
      } finally {
        spy.disconnect();
      }
    });

    it('does not let a forged lease stop the polls', async () => {
      const lease = `${prefix()}live:lease:{blocks}`;
      await env.inspect.set(lease, 'ffffffffffffffff', 'PX', PLANTED_MS);
      const url = await start();
      const sub = await subscribe(url, BLOCKS);
      expect(sub.status).toBe(200);
      await until(async () => (await env.inspect.keys('*live:state:{blocks}')).length === 1, {
        within: 10_000,
        what: 'a first poll despite the forged lease',
      });
      const { heights } = env.devnet.advance(1);
      expect((await sub.next()).data.blockAdded.height).toBe(heights[0]);
      expect(await env.inspect.get(lease)).not.toBe('ffffffffffffffff');
      // Seen once, on the claim that replaced it; every later claim finds this instance's own.
      expect(await rejected(url, 'lease')).toBe(1);
      sub.close();
    });

    it('names a forged lease holder on /readyz as unverified, never by its text', async () => {
      // The first poll takes the lease; the next claim (which would replace the forgery) is far off.
      const url = await start({ live: { ...loadConfig({}).live, pollMs: 60_000, leaseMs: 60_000 } });
      const sub = await subscribe(url, BLOCKS);
      expect(sub.status).toBe(200);
      await keyOf('*live:state:{blocks}');
      await env.inspect.set(`${prefix()}live:lease:{blocks}`, 'a-forged-holder', 'PX', PLANTED_MS);
      // /readyz answers at once with the last check it finished: the first one is under way.
      let ready: any;
      await until(
        async () => {
          ready = await (await fetch(new URL('/readyz', url))).json();
          return ready.live !== undefined;
        },
        { what: 'a /readyz check that reports the live sources' },
      );
      expect(ready.live).toEqual({ blocks: 'unverified' });
      expect(await rejected(url, 'lease')).toBe(1);
      sub.close();
    });

    it('does not take over a forged state', async () => {
      const stateKey = `${prefix()}live:state:{blocks}`;
      // A head no chain reaches: taken over, every block would be skipped.
      const planted = '{"head": 1000000000}';
      await env.inspect.set(stateKey, planted, 'PX', PLANTED_MS);
      const url = await start();
      const sub = await subscribe(url, BLOCKS);
      expect(sub.status).toBe(200);
      await until(async () => (await env.inspect.get(stateKey)) !== planted, {
        what: 'the forged state replaced by the first poll',
      });
      expect(await env.inspect.get(stateKey)).not.toContain('1000000000');
      const { heights } = env.devnet.advance(1);
      expect((await sub.next()).data.blockAdded.height).toBe(heights[0]);
      expect(await rejected(url, 'state')).toBe(1);
      sub.close();
    });
  });

  describe('automatic persisted queries', () => {
    const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
    const persisted = (hash: string) => ({ persistedQuery: { version: 1, sha256Hash: hash } });

    it('does not run a document planted under its own hash without the deployment’s key', async () => {
      const document = '{ block(height: 3) { height hash } }';
      const hash = sha256(document);
      await env.inspect.hset(`${prefix()}{apq}:documents`, hash, document);
      await env.inspect.zadd(`${prefix()}{apq}:registered`, Date.now(), hash);
      const url = await start();
      const answer = await post(url, { extensions: persisted(hash) });
      expect(answer.errors?.[0]?.extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
      expect(answer.data).toBeUndefined();
      expect(env.devnet.requests).toEqual([]);
      expect(await rejected(url, 'apq')).toBe(1);
      // The client sends the document with its hash, as Apollo's link does: registered, it replaces
      // the planted entry, and another instance runs it by hash alone.
      expect((await post(url, { query: document, extensions: persisted(hash) })).data.block.height).toBe(3);
      await until(async () => (await env.inspect.hget(`${prefix()}{apq}:documents`, hash)) !== document, {
        what: 'the planted document replaced by the registered one',
      });
      const other = await start();
      expect((await post(other, { extensions: persisted(hash) })).data.block.height).toBe(3);
      expect(await rejected(other, 'apq')).toBe(0);
    });
  });
});
