import { createServer, type RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parse } from 'graphql';
import { Agent, request } from 'undici';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { loadConfig, type ScaleConfig } from '../../src/config.js';
import { type Devnet, startDevnet } from '../../src/devnet/index.js';
import { createGateway, type Gateway } from '../../src/gateway.js';
import { operationCost } from '../../src/graphql/plugins/cost.js';
import { clientAddress } from '../../src/graphql/plugins/rate-limit.js';
import { schema } from '../../src/schema/index.js';
import { hasRedis, startRedis, type TestRedis } from '../support/redis.js';
import { devnetOptions, parseAnswer, testSettings } from './helpers.js';

/**
 * Per-client rate limits over real HTTP on 127.0.0.1: the gateway's own listener (the node:http
 * fast path, and Yoga's adapter behind it), a recording devnet behind it, clients told apart by
 * their socket address (127.0.0.1 and 127.0.0.2, both loopback) or by `x-forwarded-for`.
 */

// Exact costs (the complexity MAX_COMPLEXITY limits): a field that calls an upstream 10, others 1.
const BLOCK = '{ block(height: 1) { height } }'; // 10 + 1
const STATS = '{ validatorStatistics { totalValidators } }'; // 10 + 1
const PAGE = 'query Page($n: Int) { validators(pageSize: $n) { nodes { moniker } } }'; // 10 + n × 2
const TYPENAME = '{ __typename }'; // 1

let devnet: Devnet;
const cleanup: (() => Promise<void>)[] = [];
beforeAll(async () => {
  devnet = await startDevnet(devnetOptions({ record: true }));
});
afterEach(async () => {
  await Promise.all(cleanup.splice(0).map((close) => close()));
});
afterAll(async () => {
  await devnet?.close();
});
beforeEach(() => devnet.resetRecords());

async function serve(listener: RequestListener): Promise<string> {
  const server = createServer(listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanup.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A gateway on the devnet with this rate limit, served by its listener on 127.0.0.1. */
async function gatewayWith(scale: Partial<ScaleConfig>): Promise<{ gateway: Gateway; base: string }> {
  const config = loadConfig({});
  const gateway = createGateway({
    ...testSettings({ scale: { ...config.scale, ...scale } }),
    upstreamUrls: devnet.urls,
  });
  cleanup.push(() => gateway.close());
  return { gateway, base: await serve(gateway.listener) };
}

/** Connections from 127.0.0.2: another client as far as the socket says. */
const otherClient = new Agent({ localAddress: '127.0.0.2' });
afterAll(() => otherClient.close());

interface Sent {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any;
}

async function send(
  base: string,
  query: string,
  options: { variables?: Record<string, unknown>; headers?: Record<string, string>; from?: Agent } = {},
): Promise<Sent> {
  const res = await request(`${base}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', ...options.headers },
    body: JSON.stringify({ query, variables: options.variables }),
    ...(options.from ? { dispatcher: options.from } : {}),
  });
  return { status: res.statusCode, headers: res.headers, body: parseAnswer(await res.body.text()) };
}

const answered = (sent: Sent) => {
  expect(sent.status).toBe(200);
  expect(sent.body.errors).toBeUndefined();
};
const refused = (sent: Sent) => {
  expect(sent.status).toBe(429);
  expect(sent.body.errors?.[0]?.extensions.code).toBe('RATE_LIMITED');
};

describe('what an operation costs', () => {
  it.each([
    [BLOCK, {}, 11],
    [STATS, {}, 11],
    [PAGE, { n: 5 }, 20],
    [PAGE, { n: 3 }, 16],
    [TYPENAME, {}, 1],
  ])('%s with %j costs %i', (query, variables, cost) => {
    expect(operationCost(schema, parse(query), null, variables)).toBe(cost);
  });

  it('prices an argument that a field’s rule refuses like any other: refusing it fails that field, not the price', () => {
    const portfolio = (address: string) =>
      parse(`{ delegations(delegatorAddress: "${address}", pageSize: 50) { nodes { shares } } }`);
    expect(operationCost(schema, portfolio('not-an-address'), null, {})).toBe(110);
    expect(operationCost(schema, portfolio('0x0000000000000000000000000000000000000001'), null, {})).toBe(
      110,
    );
  });

  it('a variable no declared cost reads leaves one price; its argument is still coerced on every request', () => {
    const document = parse(
      'query P($d: String, $n: Int) { delegations(delegatorAddress: $d, pageSize: $n) { nodes { shares } } }',
    );
    const byAddress = parse(
      'query Q($d: String) { delegations(delegatorAddress: $d, pageSize: 50) { nodes { shares } } }',
    );
    // The page's cost reads `pageSize`: its variable makes the price.
    expect(operationCost(schema, document, null, { d: 'a', n: 5 })).toBe(20);
    expect(operationCost(schema, document, null, { d: 'a', n: 50 })).toBe(110);
    // It never reads `delegatorAddress`: one price, whatever the address.
    expect(operationCost(schema, byAddress, null, { d: 'a' })).toBe(110);
    expect(operationCost(schema, byAddress, null, { d: 'b' })).toBe(110);
    // A null fed to the non-null argument is refused all the same, with graphql-js's message.
    const refused = operationCost(schema, byAddress, null, { d: null });
    expect(refused).toBeInstanceOf(Error);
    expect((refused as Error).message).toMatch(/delegatorAddress/);
  });

  it('prices the operation that runs, not the first of the document', () => {
    const document = parse(`query A { __typename } ${PAGE}`);
    expect(operationCost(schema, document, 'Page', { n: 5 })).toBe(20);
    expect(operationCost(schema, document, 'A', {})).toBe(1);
  });

  it('is the cost MAX_COMPLEXITY limits (the same figure in its refusal)', async () => {
    const { base } = await gatewayWith({ rateLimitPoints: 100_000 });
    const query =
      '{ searchSuggestions(query: "0x") { addresses { delegations(pageSize: 100) { nodes { shares validator { moniker } } } } } }';
    const sent = await send(base, query);
    const cost = operationCost(schema, parse(query), null, {});
    expect(sent.body.errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', cost });
    expect(devnet.requests).toHaveLength(0);
  });
});

describe('over budget', () => {
  it('a budget of 25 answers two operations of cost 11, not a third: 429, retry-after, RATE_LIMITED, no upstream call', async () => {
    const { base } = await gatewayWith({ rateLimitPoints: 25, rateLimitWindowMs: 60_000 });
    answered(await send(base, BLOCK));
    answered(await send(base, STATS));
    expect(new Set(devnet.requests.map((r) => r.service))).toEqual(new Set(['scan', 'stake']));
    devnet.resetRecords();

    const started = Date.now();
    const sent = await send(base, BLOCK, { headers: { 'x-request-id': 'rate-test' } });
    expect(sent.status).toBe(429);
    const retryAfterMs = sent.body.errors[0].extensions.retryAfterMs;
    expect(retryAfterMs).toBeGreaterThan(60_000 - (Date.now() - started) - 1_000);
    expect(retryAfterMs).toBeLessThanOrEqual(60_000);
    const seconds = Math.ceil(retryAfterMs / 1000);
    expect(sent.headers['retry-after']).toBe(String(seconds));
    expect(sent.headers['x-request-id']).toBe('rate-test');
    expect(sent.headers['cache-control']).toBe('no-store');
    expect(sent.body).toEqual({
      errors: [
        {
          message: `Rate limit reached: this client has spent its query budget for now. Retry in ${seconds} s.`,
          extensions: { code: 'RATE_LIMITED', retryAfterMs },
        },
      ],
    });
    expect(devnet.requests).toHaveLength(0);

    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toMatch(/^rate_limited_requests_total 1$/m);
    expect(metrics).toMatch(/^graphql_errors_total\{code="RATE_LIMITED"\} 1$/m);
  });

  it('charges by cost: pageSize prices the operation, down to the last point', async () => {
    const { base } = await gatewayWith({ rateLimitPoints: 40 });
    answered(await send(base, PAGE, { variables: { n: 5 } })); // 20
    answered(await send(base, PAGE, { variables: { n: 5 } })); // 40: the whole budget
    refused(await send(base, TYPENAME)); // 41
    const small = await gatewayWith({ rateLimitPoints: 40 });
    answered(await send(small.base, PAGE, { variables: { n: 3 } })); // 16
    answered(await send(small.base, PAGE, { variables: { n: 3 } })); // 32
    answered(await send(small.base, TYPENAME)); // 33
    refused(await send(small.base, PAGE, { variables: { n: 3 } })); // 49
  });

  it('a new window gives the budget back', async () => {
    const { base } = await gatewayWith({ rateLimitPoints: 11, rateLimitWindowMs: 1_000 });
    answered(await send(base, BLOCK));
    const sent = await send(base, BLOCK);
    refused(sent);
    expect(sent.headers['retry-after']).toBe('1');
    await new Promise((resolve) => setTimeout(resolve, sent.body.errors[0].extensions.retryAfterMs + 50));
    answered(await send(base, BLOCK));
  });

  it('every transport charges the same budget: the fast path, Yoga behind the listener (GET, odd bodies), Yoga’s own adapter', async () => {
    const { gateway, base } = await gatewayWith({ rateLimitPoints: 44 });
    const adapter = await serve(gateway.yoga as unknown as RequestListener);
    answered(await send(base, BLOCK)); // 11, fast path
    const get = await request(`${base}/graphql?query=${encodeURIComponent(BLOCK)}`, {
      headers: { accept: 'application/json', 'x-graphql-csrf': '1' },
    });
    expect(get.statusCode).toBe(200);
    await get.body.text(); // 22, Yoga via the listener
    const extensions = await request(`${base}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: BLOCK, extensions: {} }),
    });
    expect(extensions.statusCode).toBe(200);
    await extensions.body.text(); // 33, handed to yoga.fetch by the listener
    answered(await send(adapter, BLOCK)); // 44, Yoga's node adapter
    const over = await request(`${base}/graphql?query=${encodeURIComponent(TYPENAME)}`, {
      headers: { accept: 'application/json', 'x-graphql-csrf': '1' },
    });
    expect(over.statusCode).toBe(429);
    expect(over.headers['retry-after']).toMatch(/^\d+$/);
    expect(parseAnswer(await over.body.text()).errors[0].extensions.code).toBe('RATE_LIMITED');
    refused(await send(adapter, TYPENAME));
  });

  it('0 points: no limiter at all', async () => {
    const { gateway, base } = await gatewayWith({ rateLimitPoints: 0 });
    expect(gateway.rateLimit).toBeNull();
    for (let i = 0; i < 5; i++) answered(await send(base, PAGE, { variables: { n: 100 } }));
    expect(await (await fetch(`${base}/metrics`)).text()).toMatch(/^rate_limited_requests_total 0$/m);
  });
});

describe('who the client is', () => {
  it('each socket address has its own budget', async () => {
    const { base } = await gatewayWith({ rateLimitPoints: 11 });
    answered(await send(base, BLOCK));
    refused(await send(base, BLOCK));
    answered(await send(base, BLOCK, { from: otherClient }));
    refused(await send(base, BLOCK, { from: otherClient }));
  });

  it('TRUST_PROXY 0: x-forwarded-for is ignored (the socket is the client)', async () => {
    const { base } = await gatewayWith({ rateLimitPoints: 11, trustProxy: 0 });
    answered(await send(base, BLOCK, { headers: { 'x-forwarded-for': '203.0.113.1' } }));
    refused(await send(base, BLOCK, { headers: { 'x-forwarded-for': '203.0.113.2' } }));
  });

  it('TRUST_PROXY 1: the address the proxy appended, not what the client wrote before it', async () => {
    const { base } = await gatewayWith({ rateLimitPoints: 11, trustProxy: 1 });
    answered(await send(base, BLOCK, { headers: { 'x-forwarded-for': '203.0.113.1' } }));
    answered(await send(base, BLOCK, { headers: { 'x-forwarded-for': '203.0.113.2' } }));
    // The same client through the same proxy, whatever it puts in front.
    refused(await send(base, BLOCK, { headers: { 'x-forwarded-for': '198.51.100.7, 203.0.113.1' } }));
    // No header: the socket's address is the client.
    answered(await send(base, BLOCK));
    refused(await send(base, BLOCK));
  });

  it.each([
    ['10.0.0.9', null, 0, '10.0.0.9'],
    ['::ffff:10.0.0.9', null, 0, '10.0.0.9'],
    ['10.0.0.9', '1.1.1.1, 2.2.2.2', 0, '10.0.0.9'],
    ['10.0.0.9', '1.1.1.1, 2.2.2.2', 1, '2.2.2.2'],
    ['10.0.0.9', '1.1.1.1, 2.2.2.2', 2, '1.1.1.1'],
    ['10.0.0.9', '1.1.1.1,2.2.2.2,  3.3.3.3', 2, '2.2.2.2'],
    // Fewer hops than trusted proxies: the farthest one there is.
    ['10.0.0.9', '1.1.1.1', 3, '1.1.1.1'],
    ['10.0.0.9', '', 1, '10.0.0.9'],
    [undefined, null, 0, 'unknown'],
  ])('socket %s, x-forwarded-for %j, TRUST_PROXY %i: %s', (socket, forwarded, trust, client) => {
    expect(clientAddress(socket, forwarded, { trustProxy: trust, ipv6Prefix: 64 })).toBe(client);
  });
});

describe.runIf(hasRedis)('with REDIS_URL', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.close();
  });

  /** Two gateway instances on one Redis, each on its own socket. */
  async function twoInstances() {
    const scale = { rateLimitPoints: 25, trustProxy: 1, redisUrl: redis.url, redisTimeoutMs: 200 };
    const a = await gatewayWith(scale);
    const b = await gatewayWith(scale);
    await vi.waitFor(() => {
      expect([a.gateway.rateLimit?.store, b.gateway.rateLimit?.store]).toEqual(['redis', 'redis']);
    });
    return { a, b };
  }
  let clients = 0;
  /** A client no other test has charged (Redis keeps counters between tests). */
  const newClient = () => ({ 'x-forwarded-for': `198.51.100.${++clients}` });

  it('two instances share one budget', async () => {
    const { a, b } = await twoInstances();
    const client = newClient();
    answered(await send(a.base, BLOCK, { headers: client })); // 11
    answered(await send(b.base, STATS, { headers: client })); // 22
    devnet.resetRecords();
    refused(await send(a.base, BLOCK, { headers: client })); // 33
    refused(await send(b.base, TYPENAME, { headers: client })); // 34
    expect(devnet.requests).toHaveLength(0);
    // Another client, its own budget on both.
    answered(await send(b.base, BLOCK, { headers: newClient() }));
  });

  it('Redis stopped: every request is answered, within the budget counted per process; Redis back: shared again', async () => {
    const { a, b } = await twoInstances();
    await redis.stop();
    try {
      const client = newClient();
      answered(await send(a.base, BLOCK, { headers: client }));
      answered(await send(a.base, STATS, { headers: client }));
      refused(await send(a.base, BLOCK, { headers: client }));
      // The other instance counts on its own while Redis is away.
      answered(await send(b.base, BLOCK, { headers: client }));
      expect(a.gateway.rateLimit?.store).toBe('insurance');
    } finally {
      await redis.start();
    }
    await vi.waitFor(
      () => {
        expect([a.gateway.rateLimit?.store, b.gateway.rateLimit?.store]).toEqual(['redis', 'redis']);
      },
      { timeout: 10_000, interval: 100 },
    );
    const client = newClient();
    answered(await send(a.base, BLOCK, { headers: client }));
    answered(await send(b.base, BLOCK, { headers: client }));
    refused(await send(a.base, BLOCK, { headers: client }));
  });
});
