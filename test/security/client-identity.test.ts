import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import type { Gateway } from '../../src/gateway.js';
import { BoundedWindows, clientKey, RateLimit } from '../../src/scale/rate-limit.js';
import { parseAnswer, testSettings, useGatewayOnDevnet } from '../gateway/helpers.js';
import { subscribe } from '../support/sse.js';

/**
 * Client identity that a host cannot multiply (contract.md §7): an IPv6 client is its /64
 * (CLIENT_IPV6_PREFIX), for the rate limit and MAX_SUBSCRIPTIONS_PER_CLIENT alike, and the
 * in-process limiter's memory stays bounded under a flood of distinct addresses.
 */

const env = useGatewayOnDevnet();

const BLOCK = '{ block(height: 1) { height } }'; // costs 11

/** A gateway behind one trusted proxy, served on a real socket. */
async function behindProxy(overrides: Parameters<typeof env.coldGateway>[0] = {}) {
  const gateway: Gateway = env.coldGateway({
    ...overrides,
    scale: { ...testSettings().scale, trustProxy: 1, rateLimitPoints: 11, ...overrides.scale },
  });
  return env.listenOn(gateway);
}

const from = (address: string) => ({ 'content-type': 'application/json', 'x-forwarded-for': address });

describe('an IPv6 client is its /64', () => {
  it('gives every address of one /64 one budget, and another /64 its own', async () => {
    const { url, close } = await behindProxy();
    const post = async (address: string) => {
      const res = await fetch(url, {
        method: 'POST',
        headers: from(address),
        body: JSON.stringify({ query: BLOCK }),
      });
      return { status: res.status, body: parseAnswer(await res.text()) };
    };
    expect((await post('2001:db8:1:2::1')).status).toBe(200);
    // The same host picks another address of its /64 for each request: still one client.
    const second = await post('2001:db8:1:2:ffff:ffff:ffff:fffe');
    expect(second.status).toBe(429);
    expect(second.body.errors[0].extensions.code).toBe('RATE_LIMITED');
    expect((await post('2001:db8:1:2:0:0:0:7')).status).toBe(429);
    // The positive control: the next /64 is another client.
    expect((await post('2001:db8:1:3::1')).status).toBe(200);
    // Upstream reads: one per answered request, none for the refused.
    expect(env.devnet.requests.filter((r) => r.service === 'scan')).toHaveLength(2);
    await close();
  });

  it('counts every address of one /64 as one client for MAX_SUBSCRIPTIONS_PER_CLIENT', async () => {
    const live = loadConfig({}).live;
    const { url, close } = await behindProxy({
      live: { ...live, maxSubscriptionsPerClient: 2 },
      scale: { ...testSettings().scale, trustProxy: 1, rateLimitPoints: 0 },
    });
    const query = 'subscription { validatorStatisticsUpdated { totalValidators } }';
    const open = [
      await subscribe(url, query, { headers: { 'x-forwarded-for': '2001:db8:9:9::1' } }),
      await subscribe(url, query, { headers: { 'x-forwarded-for': '2001:db8:9:9::2' } }),
    ];
    expect(open.map((s) => s.status)).toEqual([200, 200]);
    const third = await fetch(url, {
      method: 'POST',
      headers: { ...from('2001:db8:9:9:abcd::3'), accept: 'application/json' },
      body: JSON.stringify({ query }),
    });
    expect(third.status).toBe(429);
    expect(parseAnswer(await third.text()).errors[0].extensions.code).toBe('RATE_LIMITED');
    // The positive control: another /64 still subscribes.
    const other = await subscribe(url, query, { headers: { 'x-forwarded-for': '2001:db8:9:a::1' } });
    expect(other.status).toBe(200);
    for (const s of [...open, other]) s.close();
    await close();
  });

  const addresses = [
    { address: '2001:db8:1:2:3:4:5:6', prefix: 64, key: '2001:db8:1:2::/64' },
    { address: '2001:DB8:1:2::6', prefix: 64, key: '2001:db8:1:2::/64' },
    { address: '2001:db8:1:2:3:4:5:6', prefix: 48, key: '2001:db8:1::/48' },
    { address: '2001:db8:1:2:3:4:5:6', prefix: 56, key: '2001:db8:1:0::/56' },
    { address: '2001:db8:1:2ff:3:4:5:6', prefix: 56, key: '2001:db8:1:200::/56' },
    { address: '2001:db8:1:2:3:4:5:6', prefix: 128, key: '2001:db8:1:2:3:4:5:6/128' },
    { address: 'fe80::1%eth0', prefix: 64, key: 'fe80:0:0:0::/64' },
    { address: '::1', prefix: 64, key: '0:0:0:0::/64' },
    { address: '64:ff9b::192.0.2.1', prefix: 96, key: '64:ff9b:0:0:0:0::/96' },
    { address: '::ffff:10.0.0.9', prefix: 64, key: '10.0.0.9' },
    // A proxy that writes the port: each source port is not another client.
    { address: '203.0.113.5:41234', prefix: 64, key: '203.0.113.5' },
    { address: '[2001:db8:1:2::1]:443', prefix: 64, key: '2001:db8:1:2::/64' },
    { address: '10.0.0.9', prefix: 64, key: '10.0.0.9' },
  ];
  for (const { address, prefix, key } of addresses) {
    it(`${address} with CLIENT_IPV6_PREFIX ${prefix} is ${key}`, () => {
      expect(clientKey(address, prefix)).toBe(key);
    });
  }
});

describe('the in-process limiter under a flood of distinct addresses', () => {
  it('holds at most its bound of windows, and gives the clients beyond it no fresh budget', () => {
    const windows = new BoundedWindows(10, 60_000, 1_000);
    for (let i = 0; i < 50_000; i++) windows.charge(`198.18.${i >> 8}.${i & 255}`, 1, 0);
    expect(windows.size).toBe(1_001);
    // A new client arriving now shares the overflow budget the flood has spent: refused.
    expect(windows.charge('203.0.113.9', 1, 1)).toEqual({ retryAfterMs: 59_999 });
    // Windows end, and their room is given back.
    expect(windows.charge('203.0.113.9', 1, 60_000)).toBeNull();
    expect(windows.size).toBe(1);
  });

  it('is what RateLimit counts with when there is no Redis', async () => {
    let refused = 0;
    const limit = new RateLimit(
      { rateLimitPoints: 5, rateLimitWindowMs: 60_000, trustProxy: 0, ipv6Prefix: 64 },
      { refused: () => refused++ },
    );
    expect(await limit.charge('a', 5)).toBeNull();
    expect(await limit.charge('a', 1)).toEqual({ retryAfterMs: expect.any(Number) });
    expect(refused).toBe(1);
  });
});
