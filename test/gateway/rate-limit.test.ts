import { createServer, type RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { getVariableValues, type OperationDefinitionNode, parse, type VariableDefinitionNode } from 'graphql';
import { Agent, request } from 'undici';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { loadConfig, type ScaleConfig } from '../../src/config.js';
import { type Devnet, startDevnet } from '../../src/devnet/index.js';
import { createGateway, type Gateway, type GatewayOptions } from '../../src/gateway.js';
import { operationCost } from '../../src/graphql/plugins/cost.js';
import { clientAddress } from '../../src/scale/rate-limit.js';
import { schema } from '../../src/schema/index.js';
import { hasRedis, startRedis, type TestRedis } from '../support/redis.js';
import { subscribe } from '../support/sse.js';
import { until } from '../support/until.js';
import { devnetOptions, parseAnswer, preparedRequests, testSettings } from './helpers.js';

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
/** Over MAX_COMPLEXITY (3,000): refused before any charge. */
const COSTLY =
  '{ searchSuggestions(query: "0x") { addresses { delegations(pageSize: 100) { nodes { shares validator { moniker } } } } } }';

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

/**
 * A gateway on the devnet with this rate limit (and these other settings), served by its listener on
 * 127.0.0.1.
 */
async function gatewayWith(
  scale: Partial<ScaleConfig>,
  settings: Partial<GatewayOptions> = {},
): Promise<{ gateway: Gateway; base: string }> {
  const config = loadConfig({});
  const gateway = createGateway({
    ...testSettings({ scale: { ...config.scale, ...scale }, ...settings }),
    upstreamUrls: devnet.urls,
  });
  cleanup.push(() => gateway.close());
  return { gateway, base: await serve(gateway.listener) };
}

/**
 * The clock held still (until the test ends) where a test reads `reset`: the window's end is then
 * known to the ms, and moves only when the test moves the clock.
 */
function stillClock() {
  const at = Date.now();
  const clock = vi.spyOn(Date, 'now').mockReturnValue(at);
  cleanup.push(async () => void clock.mockRestore());
  return { advance: (ms: number) => clock.mockReturnValue(at + ms) };
}

/** Connections from 127.0.0.2: another client as far as the socket says. */
const otherClient = new Agent({ localAddress: '127.0.0.2' });
afterAll(() => otherClient.close());

interface Sent {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any;
  /** The body as it came, byte for byte. */
  text: string;
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
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, body: parseAnswer(text), text };
}

/** A GET through the listener, which hands it to Yoga (with the CSRF-safe header a GET needs). */
async function get(base: string, query: string, headers: Record<string, string> = {}): Promise<Sent> {
  const res = await request(`${base}/graphql?query=${encodeURIComponent(query)}`, {
    headers: { accept: 'application/json', 'x-graphql-csrf': '1', ...headers },
  });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, body: parseAnswer(text), text };
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
  const prices = [
    { query: BLOCK, variables: {}, cost: 11 },
    { query: STATS, variables: {}, cost: 11 },
    { query: PAGE, variables: { n: 5 }, cost: 20 },
    { query: PAGE, variables: { n: 3 }, cost: 16 },
    { query: TYPENAME, variables: {}, cost: 1 },
  ];
  for (const { query, variables, cost } of prices) {
    it(`${query} with ${JSON.stringify(variables)} costs ${cost}`, () => {
      expect(operationCost(schema, parse(query), null, variables)).toBe(cost);
    });
  }

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

  it('refuses exactly the variables graphql-js refuses, with its message, whatever shortcut a fixed price takes', () => {
    // A fixed price (no cost reads `$v`): whether the variables coerce is all that is asked of them.
    const types = [
      'String',
      'String!',
      'String! = "x"',
      'Int',
      'Int!',
      'Float!',
      'Boolean',
      'ID!',
      'Amount!',
    ];
    const values: unknown[] = [
      'x',
      '',
      '12',
      0,
      -1,
      1.5,
      2 ** 31 - 1,
      2 ** 31,
      -(2 ** 31),
      -(2 ** 31) - 1,
      Number.MAX_SAFE_INTEGER,
      true,
      null,
      [],
      ['x'],
      { a: 1 },
    ];
    for (const type of types) {
      const verdicts = new Set<string>();
      const document = parse(`query Q($v: ${type}) { validatorStatistics { totalValidators } }`);
      const [definition] = (document.definitions[0] as OperationDefinitionNode).variableDefinitions ?? [];
      for (const given of [...values.map((v) => ({ v })), {}]) {
        const expected = getVariableValues(schema, [definition as VariableDefinitionNode], given);
        const price = operationCost(schema, document, null, given);
        const seen = `${type} with ${JSON.stringify(given)}`;
        verdicts.add(expected.errors ? 'refused' : 'priced');
        if (expected.errors) {
          expect(price, seen).toBeInstanceOf(Error);
          expect((price as Error).message, seen).toBe(expected.errors.map((e) => e.message).join(' '));
        } else {
          expect(price, seen).toBe(11);
        }
      }
      // Both verdicts were tried for every type.
      expect(verdicts, type).toEqual(new Set(['refused', 'priced']));
    }
  });

  it('prices the operation that runs, not the first of the document', () => {
    const document = parse(`query A { __typename } ${PAGE}`);
    expect(operationCost(schema, document, 'Page', { n: 5 })).toBe(20);
    expect(operationCost(schema, document, 'A', {})).toBe(1);
  });

  it('is the cost MAX_COMPLEXITY limits (the same figure in its refusal)', async () => {
    const { base } = await gatewayWith({ rateLimitPoints: 100_000 });
    const sent = await send(base, COSTLY);
    const cost = operationCost(schema, parse(COSTLY), null, {});
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
    // A body of no declared length (chunked) is read on Yoga's path.
    const chunked = await request(`${base}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: Readable.from([JSON.stringify({ query: BLOCK })]),
    });
    expect(chunked.statusCode).toBe(200);
    await chunked.body.text(); // 33, handed to yoga.fetch by the listener
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

describe('rate limits are visible (draft-ietf-httpapi-ratelimit-headers-07)', () => {
  const fields = (sent: Sent) => [sent.headers['ratelimit-policy'], sent.headers.ratelimit];

  it('each priced answer says the policy and what is left, falling as points are spent, on every transport', async () => {
    const clock = stillClock();
    const { gateway, base } = await gatewayWith({ rateLimitPoints: 40, rateLimitWindowMs: 60_000 });
    const adapter = await serve(gateway.yoga as unknown as RequestListener);
    const fast = await send(base, BLOCK); // 11: the fast path
    answered(fast);
    expect(fields(fast)).toEqual(['40;w=60', 'limit=40, remaining=29, reset=60']);
    clock.advance(15_500);
    const yoga = await send(adapter, BLOCK); // 22: Yoga's node adapter
    answered(yoga);
    expect(fields(yoga)).toEqual(['40;w=60', 'limit=40, remaining=18, reset=45']);
    clock.advance(30_000);
    const viaListener = await get(base, BLOCK); // 33: Yoga behind the listener
    answered(viaListener);
    expect(fields(viaListener)).toEqual(['40;w=60', 'limit=40, remaining=7, reset=30']);
    // Over: nothing left, and reset says what retry-after says.
    const over = await send(base, BLOCK);
    refused(over);
    expect(fields(over)).toEqual(['40;w=60', 'limit=40, remaining=0, reset=30']);
    expect(over.headers['retry-after']).toBe('30');
    const overOnYoga = await send(adapter, TYPENAME);
    refused(overOnYoga);
    expect(fields(overOnYoga)).toEqual(['40;w=60', 'limit=40, remaining=0, reset=30']);
    expect(overOnYoga.headers['retry-after']).toBe('30');
  });

  it('a hot query’s prepared request says the same as its first request did', async () => {
    stillClock();
    const { base } = await gatewayWith(
      { rateLimitPoints: 40, rateLimitWindowMs: 10_000 },
      { documents: { ...loadConfig({}).documents, keepAfter: 1, compileAfter: 1 } },
    );
    expect(fields(await send(base, BLOCK))).toEqual(['40;w=10', 'limit=40, remaining=29, reset=10']);
    expect(await preparedRequests(`${base}/graphql`)).toBe(0);
    expect(fields(await send(base, BLOCK))).toEqual(['40;w=10', 'limit=40, remaining=18, reset=10']);
    expect(await preparedRequests(`${base}/graphql`)).toBe(1);
  });

  it('a subscription’s stream says what its start cost', async () => {
    stillClock();
    const { base } = await gatewayWith({ rateLimitPoints: 1_000 });
    const document = 'subscription { blockAdded { height } }';
    const cost = operationCost(schema, parse(document), null, {}) as number;
    const stream = await subscribe(`${base}/graphql`, document);
    try {
      expect(stream.status).toBe(200);
      expect(stream.headers.get('content-type')).toBe('text/event-stream');
      expect(stream.headers.get('ratelimit-policy')).toBe('1000;w=60');
      expect(stream.headers.get('ratelimit')).toBe(`limit=1000, remaining=${1_000 - cost}, reset=60`);
    } finally {
      stream.close();
    }
  });

  it('only answers the rate limit counted carry them: none for a request refused before its price, none with the limit off', async () => {
    const { base } = await gatewayWith({ rateLimitPoints: 40 });
    const invalid = await send(base, '{ validatorz }');
    expect(invalid.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    expect(fields(invalid)).toEqual([undefined, undefined]);
    // Priced and refused over MAX_COMPLEXITY: not charged, so not counted.
    const costly = await send(base, COSTLY);
    expect(costly.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    expect(fields(costly)).toEqual([undefined, undefined]);
    const off = await gatewayWith({ rateLimitPoints: 0 });
    const free = await send(off.base, BLOCK);
    answered(free);
    expect(fields(free)).toEqual([undefined, undefined]);
  });

  it('a browser on an allowed origin may read them', async () => {
    const { base } = await gatewayWith(
      { rateLimitPoints: 40 },
      { cors: { origins: ['https://explorer.example'], localhost: false } },
    );
    const sent = await send(base, BLOCK, { headers: { origin: 'https://explorer.example' } });
    expect(String(sent.headers['access-control-expose-headers']).split(', ')).toEqual(
      expect.arrayContaining(['ratelimit', 'ratelimit-policy', 'retry-after']),
    );
  });
});

describe('the cost of an answer, on request (x-graphql-cost: true)', () => {
  const ASK = { 'x-graphql-cost': 'true' };

  it('is in the answer’s extensions on every transport: its price, MAX_COMPLEXITY and the budget left', async () => {
    stillClock();
    const { gateway, base } = await gatewayWith({ rateLimitPoints: 40 });
    const adapter = await serve(gateway.yoga as unknown as RequestListener);
    const fast = await send(base, BLOCK, { headers: ASK });
    answered(fast);
    expect(fast.body).toEqual({
      data: { block: { height: 1 } },
      extensions: { cost: { requested: 11, limit: 3_000, budget: { limit: 40, remaining: 29, reset: 60 } } },
    });
    const yoga = await send(adapter, BLOCK, { headers: ASK });
    expect(yoga.body.extensions.cost).toEqual({
      requested: 11,
      limit: 3_000,
      budget: { limit: 40, remaining: 18, reset: 60 },
    });
    expect((await get(base, BLOCK, ASK)).body.extensions.cost.budget.remaining).toBe(7);
    // A refusal says what it would have cost, and that nothing is left.
    const over = await send(base, BLOCK, { headers: ASK });
    refused(over);
    expect(over.body.extensions).toEqual({
      cost: { requested: 11, limit: 3_000, budget: { limit: 40, remaining: 0, reset: 60 } },
    });
  });

  it('never without the header: the same bytes as before, on every transport', async () => {
    const { gateway, base } = await gatewayWith({ rateLimitPoints: 1_000 });
    const adapter = await serve(gateway.yoga as unknown as RequestListener);
    const bytes = '{"data":{"block":{"height":1}}}';
    expect((await send(base, BLOCK)).text).toBe(bytes);
    expect((await send(adapter, BLOCK)).text).toBe(bytes);
    expect((await get(base, BLOCK)).text).toBe(bytes);
    expect((await send(base, BLOCK, { headers: { 'x-graphql-cost': 'false' } })).text).toBe(bytes);
  });

  it('without a rate limit: the price and MAX_COMPLEXITY; over MAX_COMPLEXITY: the price it was refused at', async () => {
    const { base } = await gatewayWith({ rateLimitPoints: 0 });
    expect((await send(base, PAGE, { variables: { n: 5 }, headers: ASK })).body.extensions).toEqual({
      cost: { requested: 20, limit: 3_000 },
    });
    const price = operationCost(schema, parse(COSTLY), null, {});
    const costly = await send(base, COSTLY, { headers: ASK });
    expect(costly.body.errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', cost: price });
    expect(costly.body.extensions).toEqual({ cost: { requested: price, limit: 3_000 } });
  });

  it('an answer asked with its cost is never shared; a cached answer carries no cost, on either path', async () => {
    const { base } = await gatewayWith(
      { rateLimitPoints: 0 },
      {
        responseCacheTtlMs: 60_000,
        validatorCacheTtlMs: 60_000,
        documents: { ...loadConfig({}).documents, keepAfter: 1, compileAfter: 1 },
      },
    );
    const hits = async () =>
      Number(
        /^cache_requests_total\{cache="responses",result="hit"\} (\d+)$/m.exec(
          await (await fetch(`${base}/metrics`)).text(),
        )?.[1] ?? 0,
      );
    const query = '{ validators(pageSize: 2) { nodes { moniker } } }';
    const asked = await send(base, query, { headers: ASK }); // answered privately: kept for nobody
    expect(asked.body.extensions).toEqual({ cost: { requested: 14, limit: 3_000 } });
    const plain = await send(base, query); // a miss, which fills the cache
    expect(await hits()).toBe(0);
    expect(plain.text).toBe(JSON.stringify({ data: asked.body.data }));
    expect((await send(base, query)).text).toBe(plain.text); // a hit, on the prepared request
    expect(await hits()).toBe(1);
    const again = await send(base, query, { headers: ASK }); // asked again: run, not a hit
    expect(await hits()).toBe(1);
    expect(again.body).toEqual(asked.body);
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

  const hops: { socket: string | undefined; forwarded: string | null; trust: number; client: string }[] = [
    { socket: '10.0.0.9', forwarded: null, trust: 0, client: '10.0.0.9' },
    { socket: '::ffff:10.0.0.9', forwarded: null, trust: 0, client: '10.0.0.9' },
    { socket: '10.0.0.9', forwarded: '1.1.1.1, 2.2.2.2', trust: 0, client: '10.0.0.9' },
    { socket: '10.0.0.9', forwarded: '1.1.1.1, 2.2.2.2', trust: 1, client: '2.2.2.2' },
    { socket: '10.0.0.9', forwarded: '1.1.1.1, 2.2.2.2', trust: 2, client: '1.1.1.1' },
    { socket: '10.0.0.9', forwarded: '1.1.1.1,2.2.2.2,  3.3.3.3', trust: 2, client: '2.2.2.2' },
    // Fewer hops than trusted proxies: the farthest one there is.
    { socket: '10.0.0.9', forwarded: '1.1.1.1', trust: 3, client: '1.1.1.1' },
    { socket: '10.0.0.9', forwarded: '', trust: 1, client: '10.0.0.9' },
    { socket: undefined, forwarded: null, trust: 0, client: 'unknown' },
  ];
  for (const { socket, forwarded, trust, client } of hops) {
    it(`socket ${socket}, x-forwarded-for ${JSON.stringify(forwarded)}, TRUST_PROXY ${trust}: ${client}`, () => {
      expect(clientAddress(socket, forwarded, { trustProxy: trust, ipv6Prefix: 64 })).toBe(client);
    });
  }
});

describe.runIf(hasRedis)('with REDIS_URL', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.close();
  });

  type Instance = Awaited<ReturnType<typeof gatewayWith>>;
  /** Where each instance counts: Redis, or its in-process insurance. */
  const stores = (...instances: Instance[]) => instances.map((i) => i.gateway.rateLimit?.store);

  /** Two gateway instances on one Redis, each on its own socket. */
  async function twoInstances() {
    const scale = { rateLimitPoints: 25, trustProxy: 1, redisUrl: redis.url, redisTimeoutMs: 200 };
    const a = await gatewayWith(scale);
    const b = await gatewayWith(scale);
    await until(() => stores(a, b).every((store) => store === 'redis'), {
      within: 1_000,
      what: 'both instances counting in Redis',
    });
    expect(stores(a, b)).toEqual(['redis', 'redis']);
    return { a, b };
  }
  let clients = 0;
  /** A client no other test has charged (Redis keeps counters between tests). */
  const newClient = () => ({ 'x-forwarded-for': `198.51.100.${++clients}` });

  it('two instances share one budget', async () => {
    const { a, b } = await twoInstances();
    const client = newClient();
    const first = await send(a.base, BLOCK, { headers: client }); // 11
    answered(first);
    const second = await send(b.base, STATS, { headers: client }); // 22
    answered(second);
    // What is left is the deployment's, whichever instance says it.
    expect(first.headers.ratelimit).toMatch(/^limit=25, remaining=14, reset=(59|60)$/);
    expect(second.headers.ratelimit).toMatch(/^limit=25, remaining=3, reset=(59|60)$/);
    devnet.resetRecords();
    const over = await send(a.base, BLOCK, { headers: client }); // 33
    refused(over);
    expect(over.headers.ratelimit).toBe(`limit=25, remaining=0, reset=${over.headers['retry-after']}`);
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
    await until(() => stores(a, b).every((store) => store === 'redis'), {
      within: 10_000,
      what: 'both instances counting in Redis again',
    });
    expect(stores(a, b)).toEqual(['redis', 'redis']);
    const client = newClient();
    answered(await send(a.base, BLOCK, { headers: client }));
    answered(await send(b.base, BLOCK, { headers: client }));
    refused(await send(a.base, BLOCK, { headers: client }));
  });
});
