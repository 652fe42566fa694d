import { createServer, type RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { type Devnet, startDevnet } from '../../src/devnet/index.js';
import { createGateway, type Gateway } from '../../src/gateway.js';
import { devnetOptions, parseAnswer } from './helpers.js';

/**
 * One pipeline, two transports: the node:http fast path (the gateway's listener) and Yoga's own
 * node adapter must answer every request alike, status, every header but `date`, and body, with
 * the production configuration and both caches on. Each request goes to both over a real socket.
 */

const ALLOWED = 'https://explorer.example';

interface Pair {
  gateway: Gateway;
  fast: string;
  yoga: string;
  close(): Promise<void>;
}

async function serve(listener: RequestListener) {
  const server = createServer(listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A production gateway over these upstreams, served by its listener and by Yoga's adapter. Rate
 * limited (both transports go through the limiter) with a budget these tests never reach, unless
 * `rateLimitPoints` says otherwise.
 */
async function pair(urls: Devnet['urls'], rateLimitPoints = '100000000'): Promise<Pair> {
  const config = loadConfig({
    NODE_ENV: 'production',
    CURSOR_SECRET: 'parity-cursor-secret-0123456789',
    SCAN_URL: urls.scan,
    EXPLORER_URL: urls.explorer,
    STAKE_URL: urls.stake,
    CORS_ORIGINS: ALLOWED,
    // Deep enough for every screen of operations/, shallow enough to reach with this schema.
    MAX_DEPTH: '6',
    RATE_LIMIT_POINTS: rateLimitPoints,
    // The block poller not started by a latest answer: a head learned between a pair's two
    // requests would stamp one and not the other (the stamps have tests: chain-height.test.ts).
    CHAIN_HEAD_HOLD_MS: '0',
  });
  const gateway = createGateway({ ...config, upstreamUrls: urls });
  const fast = await serve(gateway.listener);
  const yoga = await serve(gateway.yoga as unknown as RequestListener);
  return {
    gateway,
    fast: fast.url,
    yoga: yoga.url,
    close: async () => {
      await fast.close();
      await yoga.close();
      await gateway.close();
    },
  };
}

let devnet: Devnet;
let up: Pair;
/** The same, with staking down (connections refused). */
let down: Pair;
/** The same, with a budget of 1 point: every operation but `{ __typename }` is over it. */
let limited: Pair;

beforeAll(async () => {
  devnet = await startDevnet(devnetOptions());
  const dead = await serve(() => {});
  await dead.close();
  up = await pair(devnet.urls);
  down = await pair({ ...devnet.urls, stake: dead.url });
  limited = await pair(devnet.urls, '1');
});
afterAll(async () => {
  await up?.close();
  await down?.close();
  await limited?.close();
  await devnet?.close();
});

interface Exchange {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

interface Call {
  method?: 'GET' | 'POST' | 'OPTIONS';
  path?: string;
  headers?: Record<string, string>;
  body?: string;
}

async function exchange(base: string, call: Call): Promise<Exchange> {
  const res = await request(`${base}${call.path ?? '/graphql'}`, {
    method: call.method ?? 'POST',
    headers: { 'x-request-id': 'parity-test', ...call.headers },
    body: call.body,
  });
  const { date, ...headers } = res.headers;
  expect(date).toEqual(expect.any(String));
  // Both transports charge one budget in turn: what is left differs by the first one's charge, and
  // the seconds to the window's end with the clock; the field and its form do not.
  if (headers.ratelimit !== undefined)
    headers.ratelimit = String(headers.ratelimit).replace(
      /remaining=\d+, reset=\d+$/,
      'remaining=…, reset=…',
    );
  return { status: res.statusCode, headers, body: await res.body.text() };
}

/** Sends one call both ways and expects the same answer; returns it. */
async function alike(call: Call, target: Pair = up): Promise<Exchange> {
  const fast = await exchange(target.fast, call);
  const yoga = await exchange(target.yoga, call);
  expect(fast).toEqual(yoga);
  return fast;
}

const JSON_POST = { 'content-type': 'application/json', accept: 'application/json' };
const post = (query: string, variables?: Record<string, unknown>, headers: Record<string, string> = {}) => ({
  headers: { ...JSON_POST, ...headers },
  body: JSON.stringify({ query, variables }),
});
/** Apollo Client 4's (HttpLink) and urql's default Accept for a query: both prefer the GraphQL over HTTP media type. */
const APOLLO_ACCEPT = 'application/graphql-response+json,application/json;q=0.9';
const URQL_ACCEPT =
  'application/graphql-response+json, application/graphql+json, application/json, text/event-stream, multipart/mixed';
/** A call as Apollo Client 4 sends it: its Accept in place of the plain JSON one. */
const asGraphQLResponse = (call: Call): Call =>
  call.headers?.accept === 'application/json'
    ? { ...call, headers: { ...call.headers, accept: APOLLO_ACCEPT } }
    : call;
const codesOf = (answer: Exchange) =>
  (parseAnswer(answer.body).errors ?? []).map((e: { extensions: { code: string } }) => e.extensions.code);

describe('the same answer on both transports', () => {
  const successes = [
    {
      label: 'a query with variables',
      call: post('query($h: Int!) { block(height: $h) { height hash } }', { h: 42 }),
    },
    {
      label: 'a 100-row page',
      call: post('{ validators(pageSize: 100) { nodes { moniker tokens commission { rate } } } }'),
    },
    {
      label: 'a read with the caller’s token',
      call: post(
        '{ failedTransactions(pageSize: 3) { nodes { hash } } }',
        {},
        {
          authorization: `Bearer devnet-token`,
        },
      ),
    },
  ];
  for (const { label, call } of successes) {
    it(`success: ${label}`, async () => {
      const answer = await alike(call);
      expect(answer.status).toBe(200);
      expect(codesOf(answer)).toEqual([]);
      expect(answer.headers['cache-control']).toBe('no-store');
      expect(answer.headers['x-request-id']).toBe('parity-test');
    });
  }

  const aliases = `{ ${Array.from({ length: 16 }, (_, i) => `a${i}: searchSuggestions(query: "${i}") { query }`).join(' ')} }`;
  const errors = [
    { label: 'a syntax error', call: post('{ validators( }'), code: 'BAD_USER_INPUT' },
    { label: 'a validation error', call: post('{ validatorz { moniker } }'), code: 'BAD_USER_INPUT' },
    {
      label: 'a variable that does not coerce',
      call: post('query($h: Int!) { block(height: $h) { hash } }', { h: 'x' }),
      code: 'BAD_USER_INPUT',
    },
    {
      label: 'a missing variable',
      call: post('query($h: Int!) { block(height: $h) { hash } }'),
      code: 'BAD_USER_INPUT',
    },
    {
      label: 'variables nested too deep',
      call: post('query($q: String!) { search(query: $q) { results { kind } } }', {
        q: [[[[[[[[[['x']]]]]]]]]],
      }),
      code: 'BAD_USER_INPUT',
    },
    {
      label: 'an input error in a resolver',
      call: post('{ validators(page: 0) { nodes { moniker } } }'),
      code: 'BAD_USER_INPUT',
    },
    {
      label: 'two anonymous operations',
      call: post('{ __typename } { __typename }'),
      code: 'BAD_USER_INPUT',
    },
    {
      label: 'two named operations and no operationName',
      call: post('query A { __typename } query B { __typename }'),
      code: 'BAD_USER_INPUT',
    },
    {
      label: 'an unknown operationName',
      call: { headers: JSON_POST, body: JSON.stringify({ query: '{ __typename }', operationName: 'Nope' }) },
      code: 'BAD_USER_INPUT',
    },
    { label: 'the alias limit', call: post(aliases), code: 'BAD_USER_INPUT' },
    {
      label: 'the root field limit',
      call: post(`{ ${Array.from({ length: 11 }, (_, i) => `f${i}: __typename`).join(' ')} }`),
      code: 'BAD_USER_INPUT',
    },
    {
      label: 'the directive limit',
      call: post(`{ validatorStatistics ${'@include(if: true) '.repeat(11)} { timestamp } }`),
      code: 'BAD_USER_INPUT',
    },
    {
      label: 'the token limit',
      call: post(`{ validatorStatistics { ${'timestamp '.repeat(1_000)} } }`),
      code: 'BAD_USER_INPUT',
    },
    {
      label: 'the depth limit',
      call: post(
        '{ searchSuggestions(query: "0x") { addresses { delegations { nodes { validator { commission { rate } } } } } } }',
      ),
      code: 'BAD_USER_INPUT',
    },
    {
      label: 'the cost limit',
      call: post(
        '{ searchSuggestions(query: "0x") { addresses { delegations(pageSize: 100) { nodes { shares validator { moniker } } } } } }',
      ),
      code: 'BAD_USER_INPUT',
    },
    {
      label: 'the body limit (413)',
      call: {
        headers: JSON_POST,
        body: JSON.stringify({ query: '{ __typename }', variables: { pad: 'x'.repeat(1_050_000) } }),
      },
      code: 'BAD_USER_INPUT',
    },
    {
      label: 'a batch (batching off)',
      call: { headers: JSON_POST, body: JSON.stringify([{ query: '{ __typename }' }]) },
      code: 'BAD_USER_INPUT',
    },
    { label: 'invalid JSON', call: { headers: JSON_POST, body: '{"query": ' }, code: 'BAD_USER_INPUT' },
    {
      label: 'a body without a query',
      call: { headers: JSON_POST, body: JSON.stringify({ variables: {} }) },
      code: 'BAD_USER_INPUT',
    },
    {
      label: 'an unknown persisted query (the client then registers it)',
      call: {
        headers: JSON_POST,
        body: JSON.stringify({ extensions: { persistedQuery: { version: 1, sha256Hash: 'ab'.repeat(32) } } }),
      },
      code: 'PERSISTED_QUERY_NOT_FOUND',
    },
    {
      label: 'a GET without a CSRF-safe header',
      call: {
        method: 'GET' as const,
        path: '/graphql?query=%7B__typename%7D',
        headers: { accept: 'application/json' },
      },
      code: 'BAD_USER_INPUT',
    },
    {
      label: 'introspection (off in production)',
      call: post('{ __schema { types { name } } }'),
      code: 'BAD_USER_INPUT',
    },
    {
      label: 'a missing token',
      call: post('{ failedTransactions { nodes { hash } } }'),
      code: 'UNAUTHENTICATED',
    },
    {
      label: 'a token the explorer refuses',
      call: post('{ failedTransactions { nodes { hash } } }', {}, { authorization: 'Bearer stolen' }),
      code: 'UNAUTHENTICATED',
    },
  ];
  for (const { label, call, code } of errors) {
    it(`error: ${label}`, async () => {
      const answer = await alike(call);
      expect(codesOf(answer)[0]).toBe(code);
      expect(answer.headers['cache-control']).toBe('no-store');
    });
  }

  // Apollo Client 4's and urql's default Accept take the GraphQL over HTTP media type first: the
  // same refusals, in its content type and with Yoga's status codes for it: 4xx for a request
  // error (400 unless named below), 200 for a field's error beside data.
  const graphQLResponseStatus: Record<string, number> = {
    'the body limit (413)': 413,
    'an unknown persisted query (the client then registers it)': 404,
    'a GET without a CSRF-safe header': 403,
    'an input error in a resolver': 200,
    'a missing token': 200,
    'a token the explorer refuses': 200,
    // Yoga's 200 for refusals that carry no `http` status of their own (variables that do not
    // coerce; the limit plugins' and the pricing's refusals), where only graphql-js's validation
    // errors get its 400: mirrored, not decided here.
    'a variable that does not coerce': 200,
    'a missing variable': 200,
    'variables nested too deep': 200,
    'the alias limit': 200,
    'the directive limit': 200,
    'the depth limit': 200,
    'the cost limit': 200,
  };
  for (const { label, call, code } of errors) {
    it(`error, as application/graphql-response+json: ${label}`, async () => {
      const answer = await alike(asGraphQLResponse(call));
      expect(codesOf(answer)[0]).toBe(code);
      expect(answer.headers['cache-control']).toBe('no-store');
      expect(answer.headers['content-type']).toBe('application/graphql-response+json; charset=utf-8');
      expect(answer.status).toBe(graphQLResponseStatus[label] ?? 400);
    });
  }

  // The adapter's JSON writer answers one result: an operation that answers in a stream is Yoga's,
  // however its text hides it (graphql/pipeline/shape.ts).
  it.each([
    { label: 'a subscription', query: 'subscription { blockAdded { height } }' },
    {
      label: '@defer written around a comment',
      query: 'query { block(height: 1) { hash ... @ # a comment\n defer { height } } }',
    },
  ])('a stream asked for as JSON alone: $label', async ({ query }) => {
    const answer = await alike(post(query));
    expect(answer.status).toBe(406);
  });

  it('an upstream down: partial data and UPSTREAM_UNAVAILABLE for the rest', async () => {
    const answer = await alike(
      post('{ searchSuggestions(query: "12") { query } validatorStatistics { totalValidators } }'),
      down,
    );
    expect(answer.status).toBe(200);
    expect(parseAnswer(answer.body).data).toEqual({
      searchSuggestions: { query: '12' },
      validatorStatistics: null,
    });
    expect(codesOf(answer)).toEqual(['UPSTREAM_UNAVAILABLE']);
  });

  const accepts: { label: string; headers: Record<string, string> }[] = [
    { label: 'no Accept', headers: { 'content-type': 'application/json' } },
    { label: 'Accept: */*', headers: { 'content-type': 'application/json', accept: '*/*' } },
    {
      label: 'the GraphQL over HTTP media type',
      headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json' },
    },
    {
      label: 'a charset on the body',
      headers: { 'content-type': 'application/json; charset=utf-8', accept: 'application/json' },
    },
    { label: 'an Accept nobody serves', headers: { 'content-type': 'application/json', accept: 'text/csv' } },
    {
      label: 'Apollo Client 4’s default',
      headers: { 'content-type': 'application/json', accept: APOLLO_ACCEPT },
    },
    { label: 'urql’s default', headers: { 'content-type': 'application/json', accept: URQL_ACCEPT } },
    {
      label: 'JSON first, the GraphQL over HTTP media type second',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, application/graphql-response+json',
      },
    },
    {
      label: 'a charset Yoga does not serve, then the GraphQL over HTTP media type',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json; charset=latin1, application/graphql-response+json',
      },
    },
  ];
  for (const { label, headers } of accepts) {
    it(`Accept variation: ${label}`, async () => {
      const queries = [
        '{ validatorStatistics { totalValidators } }',
        '{ validatorz }',
        '{ validators( }',
        '{ validators(page: 0) { nodes { moniker } } }',
        '{ failedTransactions { nodes { hash } } }',
      ];
      for (const query of queries) await alike({ headers, body: JSON.stringify({ query }) });
    });
  }

  const origins = [
    { label: 'an allowed origin', origin: ALLOWED, allowed: ALLOWED },
    { label: 'another origin', origin: 'https://evil.example', allowed: undefined },
    {
      label: 'a localhost origin (not allowed outside devnet mode)',
      origin: 'http://localhost:3000',
      allowed: undefined,
    },
    { label: 'no origin', origin: undefined, allowed: undefined },
  ];
  for (const { label, origin, allowed } of origins) {
    it(`Origin variation: ${label}`, async () => {
      const headers: Record<string, string> = origin ? { origin } : {};
      const calls: Call[] = [
        post('{ validatorStatistics { totalValidators } }', {}, headers),
        post('{ validatorz }', {}, headers),
        {
          method: 'GET' as const,
          path: '/graphql?query=%7B__typename%7D',
          headers: { accept: 'application/json', 'x-graphql-csrf': '1', ...headers },
        },
        { method: 'GET' as const, path: '/healthz', headers },
        { method: 'OPTIONS' as const, headers: { ...headers, 'access-control-request-method': 'POST' } },
      ];
      for (const call of calls) {
        const answer = await alike(call);
        expect(answer.headers['access-control-allow-origin']).toBe(allowed);
        expect(answer.headers['access-control-allow-credentials']).toBeUndefined();
        // A public answer (the GET of `__typename`) varies with x-graphql-cost too: a request
        // asking for its cost is never handed the shared copy.
        const shared = String(answer.headers['cache-control']).startsWith('public');
        expect(answer.headers.vary).toBe(shared ? 'origin, accept, x-graphql-cost' : 'origin, accept');
        if (call.method === 'OPTIONS') {
          expect(answer.status).toBe(204);
          expect(
            String(answer.headers['access-control-allow-headers'] ?? '')
              .split(', ')
              .includes('authorization'),
          ).toBe(allowed !== undefined);
          expect(answer.headers['access-control-allow-methods']).toBe(allowed && 'GET, POST, OPTIONS');
        }
        expect(answer.headers['x-request-id'], call.path).toBe('parity-test');
      }
    });
  }

  it('over the rate limit: 429, retry-after, RATE_LIMITED', async () => {
    // The clock stands still while both are asked, so that both say the same retry-after.
    const now = vi.spyOn(Date, 'now').mockReturnValue(Date.now());
    try {
      const answer = await alike(
        post('{ validatorStatistics { totalValidators } }', {}, { origin: ALLOWED }),
        limited,
      );
      expect(answer.status).toBe(429);
      expect(answer.headers['retry-after']).toBe('60');
      expect(answer.headers['access-control-allow-origin']).toBe(ALLOWED);
      expect(answer.headers['cache-control']).toBe('no-store');
      expect(parseAnswer(answer.body).errors).toEqual([
        expect.objectContaining({ extensions: { code: 'RATE_LIMITED', retryAfterMs: 60_000 } }),
      ]);
      const get = await alike(
        {
          method: 'GET',
          path: '/graphql?query=%7BvalidatorStatistics%7BtotalValidators%7D%7D',
          headers: { accept: 'application/json', 'x-graphql-csrf': '1' },
        },
        limited,
      );
      expect(get.status).toBe(429);
      expect(codesOf(get)).toEqual(['RATE_LIMITED']);
    } finally {
      now.mockRestore();
    }
  });

  it('a mutation over GET: 405, BAD_USER_INPUT', async () => {
    const query = encodeURIComponent(
      'mutation { updateBuybackRound(input: { roundId: "round-006" }) { round { roundId } } }',
    );
    const answer = await alike({
      method: 'GET',
      path: `/graphql?query=${query}`,
      headers: { accept: 'application/json', 'x-graphql-csrf': '1' },
    });
    expect(answer.status).toBe(405);
    expect(codesOf(answer)).toEqual(['BAD_USER_INPUT']);
  });

  it('Apollo Client 4’s and urql’s queries are the fast path’s: a hot one runs its prepared request', async () => {
    const prepared = async () =>
      (await up.gateway.metrics.registry.getSingleMetric('graphql_prepared_requests_total')?.get())?.values[0]
        ?.value ?? 0;
    const query = 'query Hot($h: Int!) { block(height: $h) { height } }';
    // Another block each time: none is answered from the response cache.
    let height = 0;
    const sent = (accept: string) =>
      exchange(up.fast, {
        headers: { 'content-type': 'application/json', accept },
        body: JSON.stringify({ query, variables: { h: ++height } }),
      });
    // Past COMPILE_AFTER (10) uses: the operation is hot, and only the fast path runs its prepared request.
    for (let i = 0; i < 12; i++) await sent(APOLLO_ACCEPT);
    const before = await prepared();
    for (const accept of [APOLLO_ACCEPT, URQL_ACCEPT]) {
      const answer = await sent(accept);
      expect(answer.status).toBe(200);
      expect(answer.headers['content-type']).toBe('application/graphql-response+json; charset=utf-8');
    }
    expect(await prepared()).toBe(before + 2);
  });

  it('a new request id on each transport when the caller sends none', async () => {
    const call = post('{ __typename }');
    const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
    for (const base of [up.fast, up.yoga]) {
      const res = await request(`${base}/graphql`, {
        method: 'POST',
        headers: call.headers,
        body: call.body,
      });
      await res.body.text();
      expect(res.headers['x-request-id']).toMatch(uuid);
    }
  });
});
