import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createGateway, type Gateway } from '../../src/gateway.js';
import { keyId } from '../../src/scale/redis-values.js';
import { listen, parseAnswer, testSettings, useDevnetAndRedis } from '../gateway/helpers.js';
import { hasRedis } from '../support/redis.js';
import { until } from '../support/until.js';

/**
 * The rate limit's counters are the deployment's (issue 49): like every other key the gateway keeps
 * in Redis, they are named after the key id of CURSOR_SECRET. Two deployments with different
 * secrets on one Redis each keep their own budget for the same client, and neither resets the
 * other's; two instances of one deployment share theirs.
 */

const POINTS = 20;
/** 10 for the upstream read, 1 for the field: two of these are over POINTS. */
const BLOCK = '{ block(height: 1) { height } }';

describe.runIf(hasRedis)('rate-limit counters on a Redis two deployments share', () => {
  const env = useDevnetAndRedis();
  const closing: (() => Promise<void>)[] = [];
  afterEach(async () => {
    await Promise.all(closing.splice(0).map((close) => close()));
  });

  /** A gateway of the deployment whose secret is `secret`, on the shared Redis, over a real socket. */
  async function deployment(secret: string): Promise<{ gateway: Gateway; url: string }> {
    const config = loadConfig({});
    const gateway = createGateway({
      ...testSettings({
        cursorSecret: secret,
        scale: { ...config.scale, redisUrl: env.redis.url, rateLimitPoints: POINTS },
      }),
      upstreamUrls: env.devnet.urls,
    });
    const http = await listen(gateway);
    closing.push(async () => {
      await http.close();
      await gateway.close();
    });
    // Counted in Redis, not by the in-process insurance (which would keep budgets apart anyway).
    await until(() => gateway.rateLimit?.store === 'redis', { what: "the rate limit's counters in Redis" });
    return { gateway, url: http.url };
  }

  const send = async (url: string) => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ query: BLOCK }),
    });
    const body = parseAnswer(await res.text());
    return {
      status: res.status,
      ratelimit: res.headers.get('ratelimit'),
      code: body.errors?.[0]?.extensions.code,
    };
  };

  it('keeps a budget per deployment: neither spends nor resets the other’s', async () => {
    const first = await deployment('first-deployment-secret-0123456789');
    const second = await deployment('second-deployment-secret-0123456789');
    const firstAgain = await deployment('first-deployment-secret-0123456789');

    expect(await send(first.url)).toMatchObject({
      status: 200,
      ratelimit: expect.stringMatching(/remaining=9,/),
    });
    // Another deployment: the same client has its whole budget there.
    expect(await send(second.url)).toMatchObject({
      status: 200,
      ratelimit: expect.stringMatching(/remaining=9,/),
    });
    // The first deployment's other instance counts on from the first's charge.
    expect(await send(firstAgain.url)).toMatchObject({ status: 429, code: 'RATE_LIMITED' });
    // The second deployment's charges did not reset the first's window, nor the other way round.
    expect(await send(second.url)).toMatchObject({ status: 429, code: 'RATE_LIMITED' });
    expect(await send(first.url)).toMatchObject({ status: 429, code: 'RATE_LIMITED' });

    // Each deployment's counter is named after its secret's key id, beside its other keys.
    const keys = (await env.inspect.keys('*rate-limit*')).sort();
    expect(keys).toEqual(
      [
        `chain-gateway:rate-limit:v1:${keyId('first-deployment-secret-0123456789')}:127.0.0.1`,
        `chain-gateway:rate-limit:v1:${keyId('second-deployment-secret-0123456789')}:127.0.0.1`,
      ].sort(),
    );
  });
});
