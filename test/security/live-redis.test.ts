import { createHash, createHmac } from 'node:crypto';
import { hostname } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createGateway, type Gateway } from '../../src/gateway.js';
import { listen, testSettings, useDevnetAndRedis } from '../gateway/helpers.js';
import { hasRedis } from '../support/redis.js';
import { subscribe } from '../support/sse.js';
import { until } from '../support/until.js';

/**
 * What live updates leave in a shared Redis (contract.md §7): the keys and channels that stand for
 * a caller's token are HMACs with the deployment's secret, never a bare hash of the token that
 * anyone holding a token could compute and look for; and the lease names its holder by an opaque
 * id, never a host name or process id, which /readyz shows.
 */

const SECRET = 'live-redis-test-secret-0123456789';
const FAILED = 'subscription { failedTransactionAdded { hash } }';
const BLOCKS = 'subscription { blockAdded { height } }';

/** The credential the gateway must name the token by: HMAC-SHA256 keyed by the secret (src/live/index.ts). */
const hmacOf = (token: string) =>
  createHmac('sha256', SECRET).update(`live-token\u0000${token}`).digest('base64url').slice(0, 22);
/** What it named it by before: a bare SHA-256, computable by anyone who holds the token. */
const sha256Of = (token: string) => createHash('sha256').update(token).digest('base64url').slice(0, 22);
/** The holder a lease value names: it is `<mac>.<owner>.<expires at>` (src/live/bus.ts). */
const ownerOf = (lease: string | null) => lease?.split('.')[1] ?? null;

describe.runIf(hasRedis)('live updates on a shared Redis', () => {
  const env = useDevnetAndRedis();
  let gateways: { gateway: Gateway; close(): Promise<void> }[] = [];

  afterEach(async () => {
    await Promise.all(gateways.map((g) => g.close()));
    gateways = [];
  });

  /** A gateway on the devnet and the test's Redis, served over a real socket. */
  async function start(): Promise<{ gateway: Gateway; url: string }> {
    const base = testSettings();
    const gateway = createGateway({
      ...testSettings({
        cursorSecret: SECRET,
        live: { ...loadConfig({}).live, pollMs: 50, leaseMs: 1_000 },
        scale: { ...base.scale, redisUrl: env.redis.url, redisTimeoutMs: 1_000, rateLimitPoints: 0 },
      }),
      upstreamUrls: env.devnet.urls,
    });
    const served = await listen(gateway);
    gateways.push({
      gateway,
      close: async () => {
        await served.close();
        await gateway.close();
      },
    });
    return { gateway, url: served.url };
  }

  const liveKeys = async () =>
    (await env.inspect.keys('*live:*')).map((k) => k.slice(k.indexOf('live:'))).sort();
  const liveChannels = async () =>
    ((await env.inspect.call('PUBSUB', 'CHANNELS', '*live:*')) as string[]).map((c) =>
      String(c).slice(String(c).indexOf('live:')),
    );

  it('names a caller’s token in keys and channels by an HMAC with the deployment’s secret', async () => {
    const { url } = await start();
    const token = env.devnet.token;
    const sub = await subscribe(url, FAILED, { token });
    expect(sub.status).toBe(200);
    // The first poll stored what it saw: the source's lease, state and channel all exist now.
    await until(async () => (await liveKeys()).some((k) => k.startsWith('live:state:')), {
      what: "the failed-transactions source's first poll stored in Redis",
    });
    const hmac = hmacOf(token);
    expect(await liveKeys()).toEqual([`live:lease:{failed:${hmac}}`, `live:state:{failed:${hmac}}`]);
    expect(await liveChannels()).toEqual([`live:events:{failed:${hmac}}`]);
    // Neither the token nor the hash anyone holding it could compute is anywhere in Redis.
    const everything = JSON.stringify([
      await env.inspect.keys('*'),
      await env.inspect.call('PUBSUB', 'CHANNELS', '*'),
      await env.inspect.get((await env.inspect.keys('*live:state:*'))[0] as string),
    ]);
    expect(everything).not.toContain(sha256Of(token));
    expect(everything).not.toContain(token);
    // The explorer was asked with that token only: one check, then the polls of the first page.
    const explorer = env.devnet.requests.filter((r) => r.service === 'explorer');
    expect(new Set(explorer.map((r) => r.headers.authorization))).toEqual(new Set([`Bearer ${token}`]));
    const sizes = explorer.map((r) => {
      const q = new URLSearchParams(r.query);
      return q.get('pagination.page_size') ?? q.get('pagination.pageSize');
    });
    expect(sizes[0]).toBe('1');
    expect(sizes.slice(1).every((s) => s === '100')).toBe(true);
    expect(sizes.length).toBeGreaterThan(1);
    sub.close();
  });

  it('names the lease holder on /readyz by an opaque random id, not its host name or process id', async () => {
    const a = await start();
    const b = await start();
    const onA = await subscribe(a.url, BLOCKS);
    // A polls: it holds the lease before B has a subscriber.
    await until(async () => (await liveKeys()).includes('live:state:{blocks}'), {
      what: "A's first poll of the blocks stored in Redis",
    });
    const onB = await subscribe(b.url, BLOCKS);
    await until(() => b.gateway.live.hub.sources().includes('blocks'), {
      what: "B's blocks source started",
    });
    const holder = ownerOf(
      await env.inspect.get((await env.inspect.keys('*live:lease:{blocks}'))[0] as string),
    ) as string;
    const readyOf = async (g: Gateway) => (await g.yoga.fetch('http://gateway.test/readyz')).json();
    // /readyz answers at once with the last check it finished: the first one is under way.
    await until(async () => (await readyOf(a.gateway)).live !== undefined, {
      what: 'a /readyz check of A that reports the live sources',
    });
    await until(async () => (await readyOf(b.gateway)).live !== undefined, {
      what: 'a /readyz check of B that reports the live sources',
    });
    expect((await readyOf(a.gateway)).live).toEqual({ blocks: 'this instance' });
    expect((await readyOf(b.gateway)).live).toEqual({ blocks: holder });
    expect(holder).toMatch(/^[0-9a-f]{16}$/);
    expect(holder).not.toContain(hostname());
    // Random per instance: B's own id (its lease, once A has given the source up) is another.
    onA.close();
    await until(
      async () => {
        const lease = ownerOf(
          await env.inspect.get((await env.inspect.keys('*live:lease:{blocks}'))[0] ?? 'none'),
        );
        return lease !== null && lease !== holder;
      },
      { what: "the blocks' lease taken over by B" },
    );
    const next = ownerOf(
      await env.inspect.get((await env.inspect.keys('*live:lease:{blocks}'))[0] as string),
    ) as string;
    expect(next).toMatch(/^[0-9a-f]{16}$/);
    // /readyz reuses its answer for a second: B says so once it checks again.
    await until(async () => (await readyOf(b.gateway)).live?.blocks === 'this instance', {
      what: "B's /readyz naming itself the blocks' poller",
    });
    onB.close();
  });
});
