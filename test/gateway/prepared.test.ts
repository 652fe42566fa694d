import { createHash } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { parse } from 'graphql';
import { pino } from 'pino';
import { Client, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadConfig, loadPersistedOperations } from '../../src/config.js';
import { exampleVariables } from '../../src/devnet/examples.js';
import { type Devnet, startDevnet } from '../../src/devnet/index.js';
import { createGateway, type Gateway, type GatewayOptions } from '../../src/gateway.js';
import { until } from '../support/until.js';
import { devnetOptions, listen, parseAnswer, preparedRequests, testSettings } from './helpers.js';

/**
 * Two paths, one pipeline. A hot operation's repeated request runs its prepared request (the parts
 * of the pipeline's plugins, then its compiled plan); any other request runs envelop's hooks. Twin
 * gateways get the same requests over real sockets: one whose operations are prepared from their
 * first use, one whose operations never are. The prepared one must answer (status, headers, bytes),
 * log and count exactly as the other, for successes and for every kind of refusal and failure, in
 * every dialect project.
 */

const ORIGIN = 'https://explorer.example';
const MANIFEST = new URL('../../operations/generated/persisted-documents.json', import.meta.url).pathname;
const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

/** The request counters both paths keep (durations aside, which differ by nature). */
const COUNTERS =
  /^(graphql_requests_total|graphql_errors_total|upstream_requests_total|cache_requests_total|rate_limited_requests_total)\{/;

interface Side {
  gateway: Gateway;
  url: string;
  lines: Record<string, unknown>[];
  logged: EventEmitter;
  close(): Promise<void>;
}

interface Twin {
  prepared: Side;
  first: Side;
  close(): Promise<void>;
}

let devnet: Devnet;

async function side(overrides: Partial<GatewayOptions>, compileAfter: number): Promise<Side> {
  const lines: Record<string, unknown>[] = [];
  const logged = new EventEmitter();
  const sink = new Writable({
    write(chunk, _encoding, done) {
      const line = JSON.parse(chunk.toString());
      lines.push(line);
      logged.emit('line', line);
      done();
    },
  });
  const settings = testSettings(overrides);
  const gateway = createGateway({
    ...settings,
    cors: { ...settings.cors, origins: [ORIGIN] },
    // Every document kept from its first use; compiled (and prepared) on its first execution, or never.
    documents: { ...settings.documents, keepAfter: 1, compileAfter },
    upstreamUrls: devnet.urls,
    logger: pino({ level: 'info' }, sink),
  });
  const http = await listen(gateway);
  return {
    gateway,
    url: http.url,
    lines,
    logged,
    close: async () => {
      await http.close();
      await gateway.close();
    },
  };
}

/** Twin gateways with the same settings (a rate limit with a budget these tests never reach unless given). */
async function twin(overrides: Partial<GatewayOptions> = {}): Promise<Twin> {
  const config = loadConfig({});
  const settings = { scale: { ...config.scale, rateLimitPoints: 100_000_000 }, ...overrides };
  const [prepared, first] = await Promise.all([side(settings, 1), side(settings, 0)]);
  return { prepared, first, close: async () => void (await Promise.all([prepared.close(), first.close()])) };
}

interface Call {
  /** The document as text; absent when the request names it by id. */
  query?: string;
  variables?: Record<string, unknown>;
  operationName?: string;
  extensions?: Record<string, unknown>;
  documentId?: string;
  token?: string;
  /** GET: the parameters in the URL, as a CDN forwards a browser's query. */
  method?: 'GET';
  headers?: Record<string, string>;
}

interface Exchange {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** What the gateway logged for it, times aside: its request line last. */
  log: Record<string, unknown>[];
}

const counters = async (s: Side) =>
  (await (await fetch(s.url.replace('/graphql', '/metrics'))).text())
    .split('\n')
    .filter((line) => COUNTERS.test(line))
    .sort();

/** The gateway's log lines up to the request line of `requestId`, from `from` on, times removed. */
function logUntil(s: Side, from: number, requestId: string): Promise<Record<string, unknown>[]> {
  const strip = (lines: Record<string, unknown>[]) =>
    lines.map(({ time: _time, durationMs: _duration, ...rest }) => rest);
  const end = () => s.lines.findIndex((line, i) => i >= from && line.requestId === requestId);
  return new Promise((resolve) => {
    if (end() >= 0) return resolve(strip(s.lines.slice(from, end() + 1)));
    const check = () => {
      if (end() < 0) return;
      s.logged.off('line', check);
      resolve(strip(s.lines.slice(from, end() + 1)));
    };
    s.logged.on('line', check);
  });
}

/** GraphQL parameters as a GET's query string: objects as JSON, absent ones left out. */
const getQuery = (params: Record<string, unknown>) =>
  new URLSearchParams(
    Object.entries(params)
      .filter(([, value]) => value !== undefined)
      .map(([name, value]) => [name, typeof value === 'string' ? value : JSON.stringify(value)]),
  ).toString();

let sequence = 0;
async function send(s: Side, call: Call, requestId = `prepared-${++sequence}`): Promise<Exchange> {
  const from = s.lines.length;
  const sent = {
    accept: 'application/json',
    origin: ORIGIN,
    'x-request-id': requestId,
    traceparent: TRACEPARENT,
    ...(call.token ? { authorization: `Bearer ${call.token}` } : {}),
    ...call.headers,
  };
  const params = {
    query: call.query,
    variables: call.variables,
    operationName: call.operationName,
    extensions: call.extensions,
    documentId: call.documentId,
  };
  const res =
    call.method === 'GET'
      ? await request(`${s.url}?${getQuery(params)}`, { method: 'GET', headers: sent })
      : await request(s.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...sent },
          body: JSON.stringify(params),
        });
  const { date, ...headers } = res.headers;
  expect(date).toEqual(expect.any(String));
  // The twins' windows start a few ms apart: the seconds to their ends may round apart.
  if (headers.ratelimit !== undefined)
    headers.ratelimit = String(headers.ratelimit).replace(/reset=\d+$/, 'reset=…');
  // A buyback round written by one twin and then the other is stamped a few ms apart.
  const body = (await res.body.text()).replace(/"updatedAt":"[^"]+"/g, '"updatedAt":"…"');
  return { status: res.statusCode, headers, body, log: await logUntil(s, from, requestId) };
}

/**
 * `warm` to both (it makes the operation hot on the prepared twin), then `call` to both under one
 * request id: the prepared twin answers it from its prepared request, the other through envelop's
 * hooks, and both must answer, log and count alike. Returns the answer.
 */
async function alike(t: Twin, warm: Call, call: Call): Promise<Exchange> {
  await send(t.prepared, warm);
  await send(t.first, warm);
  const before = await preparedRequests(t.prepared.url);
  const requestId = `compared-${++sequence}`;
  const prepared = await send(t.prepared, call, requestId);
  const first = await send(t.first, call, requestId);
  expect(await preparedRequests(t.prepared.url)).toBe(before + 1);
  expect(await preparedRequests(t.first.url)).toBe(0);
  expect(prepared).toEqual(first);
  expect(await counters(t.prepared)).toEqual(await counters(t.first));
  return prepared;
}

const codes = (answer: Exchange): string[] =>
  (parseAnswer(answer.body).errors ?? []).map((e: { extensions: { code: string } }) => e.extensions.code);

const DIR = new URL('../../operations/', import.meta.url);
const queries = readdirSync(DIR)
  .filter((file) => file.endsWith('.graphql'))
  .map((file) => readFileSync(new URL(file, DIR), 'utf8'))
  .map((text) => {
    const [definition] = parse(text).definitions;
    return definition?.kind === 'OperationDefinition' ? { text, definition } : null;
  })
  // Every operation that answers once: the queries and the mutation (subscriptions stream).
  .filter((op) => op !== null && op.definition.operation !== 'subscription')
  .map((op) => ({ name: op?.definition.name?.value as string, text: op?.text as string }));

let base: Twin;
beforeAll(async () => {
  devnet = await startDevnet(devnetOptions({ record: true }));
  base = await twin();
});
afterAll(async () => {
  await base?.close();
  await devnet?.close();
});

describe('a prepared request answers, logs and counts as the first path does', () => {
  for (const { name, text } of queries) {
    it(`the frontends’ ${name}`, async () => {
      const call = { query: text, variables: exampleVariables(devnet.data)[name], token: devnet.token };
      const answer = await alike(base, call, call);
      expect(answer.status).toBe(200);
      expect(codes(answer)).toEqual([]);
      expect(answer.log.at(-1)).toMatchObject({ operation: name, outcome: 'ok', status: 200 });
    });
  }

  const block = 'query Block($h: Int!) { block(height: $h) { height hash } }';
  const deep = 'query Deep($q: String!) { search(query: $q) { results { kind } } }';
  const paged = 'query Paged($p: Int!) { validators(page: $p) { nodes { moniker } } }';
  const costly =
    'query Costly($n: Int!) { searchSuggestions(query: "0x") { addresses { delegations(pageSize: $n) { nodes { shares validator { moniker } } } } } }';
  // Issue 28's attacks, on an operation made hot first: a null fed to a non-null argument, and a
  // price that its variables make (100 undecodable ids, 550 points each).
  const nullable =
    'query Nullable($a: String = "x") { delegations(delegatorAddress: $a) { nodes { shares } } validatorStatistics { totalValidators } }';
  const nodes = 'query Nodes($ids: [ID!]!) { nodes(ids: $ids) { id } }';
  const buyback =
    'mutation Buyback($input: UpdateBuybackRoundInput!) { updateBuybackRound(input: $input) { round { roundId totalSlots } } }';
  const refusals: { label: string; warm: Call; call: Call; code: string; outcome: string }[] = [
    {
      label: 'a null fed to a non-null argument',
      warm: { query: nullable },
      call: { query: nullable, variables: { a: null } },
      code: 'BAD_USER_INPUT',
      outcome: 'invalid',
    },
    {
      label: 'a price its variables make over MAX_COMPLEXITY',
      warm: { query: nodes, variables: { ids: ['x'] } },
      call: { query: nodes, variables: { ids: Array.from({ length: 100 }, (_, i) => `x${i}`) } },
      code: 'BAD_USER_INPUT',
      outcome: 'invalid',
    },
    {
      label: 'a variable that does not coerce',
      warm: { query: block, variables: { h: 42 } },
      call: { query: block, variables: { h: 'x' } },
      code: 'BAD_USER_INPUT',
      outcome: 'invalid',
    },
    {
      label: 'a missing variable',
      warm: { query: block, variables: { h: 42 } },
      call: { query: block },
      code: 'BAD_USER_INPUT',
      outcome: 'invalid',
    },
    {
      label: 'variables nested too deep',
      warm: { query: deep, variables: { q: 'x' } },
      call: { query: deep, variables: { q: [[[[[[[[[['x']]]]]]]]]] } },
      code: 'BAD_USER_INPUT',
      outcome: 'invalid',
    },
    {
      label: 'an argument its field refuses',
      warm: { query: paged, variables: { p: 1 } },
      call: { query: paged, variables: { p: 0 } },
      code: 'BAD_USER_INPUT',
      outcome: 'invalid',
    },
    {
      label: 'a price over MAX_COMPLEXITY',
      warm: { query: costly, variables: { n: 1 } },
      call: { query: costly, variables: { n: 100 } },
      code: 'BAD_USER_INPUT',
      outcome: 'invalid',
    },
    {
      label: 'a missing token',
      warm: { query: '{ failedTransactions(pageSize: 2) { nodes { hash } } }' },
      call: { query: '{ failedTransactions(pageSize: 2) { nodes { hash } } }' },
      code: 'UNAUTHENTICATED',
      outcome: 'invalid',
    },
    // The mutation's refusals: each not applied, and (but the unknown round's) sent nowhere.
    {
      label: 'the mutation without a token',
      warm: { query: buyback, variables: { input: { roundId: 'round-006' } } },
      call: { query: buyback, variables: { input: { roundId: 'round-006' } } },
      code: 'UNAUTHENTICATED',
      outcome: 'invalid',
    },
    {
      label: 'the mutation with an argument its field refuses',
      warm: { query: buyback, variables: { input: { roundId: 'round-006' } } },
      call: { query: buyback, variables: { input: { roundId: 'round-006', totalSlots: 0 } }, token: 'x' },
      code: 'BAD_USER_INPUT',
      outcome: 'invalid',
    },
    {
      label: 'the mutation with a variable that does not coerce',
      warm: { query: buyback, variables: { input: { roundId: 'round-006' } } },
      call: { query: buyback, variables: { input: { roundId: 'round-006', minAmount: '-1' } }, token: 'x' },
      code: 'BAD_USER_INPUT',
      outcome: 'invalid',
    },
    {
      label: 'the mutation of a round the upstream does not know',
      warm: { query: buyback, variables: { input: { roundId: 'round-006' } } },
      call: { query: buyback, variables: { input: { roundId: 'round-404' } }, token: 'devnet' },
      code: 'BAD_USER_INPUT',
      outcome: 'invalid',
    },
  ];
  for (const { label, warm, call, code, outcome } of refusals) {
    it(label, async () => {
      // 'devnet' stands for the devnet's own token, which is known once it runs.
      const sent = call.token === 'devnet' ? { ...call, token: devnet.token } : call;
      const answer = await alike(base, { ...warm, token: devnet.token }, sent);
      expect(codes(answer)).toEqual([code]);
      expect(answer.log.at(-1)).toMatchObject({ outcome, errorCodes: [code] });
    });
  }

  it('an upstream failing: partial data and a coded error', async () => {
    // No cache to answer from while staking fails.
    const uncached = await twin({ responseCacheTtlMs: 0, validatorCacheTtlMs: 0 });
    const query =
      'query Two { searchSuggestions(query: "12") { query } validatorStatistics { totalValidators } }';
    try {
      expect(codes(await alike(uncached, { query }, { query }))).toEqual([]);
      devnet.setFailing('stake');
      const answer = await alike(uncached, { query }, { query });
      expect(parseAnswer(answer.body).data).toEqual({
        searchSuggestions: { query: '12' },
        validatorStatistics: null,
      });
      expect(codes(answer)).toEqual(['UPSTREAM_ERROR']);
      expect(answer.log.at(-1)).toMatchObject({ outcome: 'partial', errorCodes: ['UPSTREAM_ERROR'] });
    } finally {
      devnet.setFailing(null);
      await uncached.close();
    }
  });

  it('the response cache answers a public query on both paths', async () => {
    const cached = await twin({ responseCacheTtlMs: 60_000, validatorCacheTtlMs: 60_000 });
    try {
      const query = '{ validators(pageSize: 100) { nodes { moniker tokens commission { rate } } } }';
      const answer = await alike(cached, { query }, { query });
      expect(codes(answer)).toEqual([]);
      expect(answer.log.at(-1)).toMatchObject({ upstreamCalls: 0 });
    } finally {
      await cached.close();
    }
  });

  it('over the rate limit: 429 with the same retry-after', async () => {
    const query = '{ validatorStatistics { totalValidators } }';
    // A budget of one such query a window: the warm-up spends it.
    const limited = await twin({ scale: { ...loadConfig({}).scale, rateLimitPoints: 11 } });
    const now = vi.spyOn(Date, 'now').mockReturnValue(Date.now());
    try {
      const answer = await alike(limited, { query }, { query });
      expect(answer.status).toBe(429);
      expect(answer.headers['retry-after']).toBe('60');
      expect(codes(answer)).toEqual(['RATE_LIMITED']);
    } finally {
      now.mockRestore();
      await limited.close();
    }
  });
});

describe('Apollo Client 4’s and urql’s Accept (the GraphQL over HTTP media type first)', () => {
  const headers = { accept: 'application/graphql-response+json,application/json;q=0.9' };
  const block = 'query BlockAsGraphQLResponse($h: Int!) { block(height: $h) { height hash } }';

  it('a success and a refusal, in that media type, from the prepared request as from the first path', async () => {
    const warm = { query: block, variables: { h: 1 }, headers };
    const answer = await alike(base, warm, { ...warm, variables: { h: 2 } });
    expect(answer.status).toBe(200);
    expect(answer.headers['content-type']).toBe('application/graphql-response+json; charset=utf-8');
    const refused = await alike(base, warm, { ...warm, variables: { h: 'x' } });
    expect(codes(refused)).toEqual(['BAD_USER_INPUT']);
    expect(refused.headers['content-type']).toBe('application/graphql-response+json; charset=utf-8');
  });
});

describe('a document named by id is prepared too', () => {
  const search = 'query Named($q: String!) { searchSuggestions(query: $q) { query blocks { height } } }';
  const hashOf = (text: string) => createHash('sha256').update(text).digest('hex');

  it('an APQ hash alone, once the document is registered', async () => {
    const persistedQuery = { version: 1, sha256Hash: hashOf(search) };
    // The client registers the document with its hash (the first path), then sends the hash alone.
    const answer = await alike(
      base,
      { query: search, variables: { q: '7' }, extensions: { persistedQuery } },
      { variables: { q: '8' }, extensions: { persistedQuery } },
    );
    expect(parseAnswer(answer.body).data.searchSuggestions.query).toBe('8');
  });

  it('a documentId without a manifest goes to the first path, hot or not, and is refused alike', async () => {
    const persistedQuery = { version: 1, sha256Hash: hashOf(search) };
    await send(base.prepared, { query: search, variables: { q: '7' }, extensions: { persistedQuery } });
    await send(base.prepared, { variables: { q: '7' }, extensions: { persistedQuery } });
    const before = await preparedRequests(base.prepared.url);
    const call = { documentId: 'x', variables: { q: '8' }, extensions: { persistedQuery } };
    const hot = await send(base.prepared, call, 'document-id');
    const cold = await send(base.first, call, 'document-id');
    expect(await preparedRequests(base.prepared.url)).toBe(before);
    expect(hot.status).toBe(400);
    expect(codes(hot)).toEqual(['BAD_USER_INPUT']);
    expect(hot).toEqual(cold);
  });

  it('an APQ hash nobody registered: PERSISTED_QUERY_NOT_FOUND from the first path', async () => {
    const persistedQuery = { version: 1, sha256Hash: hashOf(`${search} # never registered`) };
    const before = await preparedRequests(base.prepared.url);
    const answer = await send(base.prepared, { variables: { q: '8' }, extensions: { persistedQuery } });
    expect(codes(answer)).toEqual(['PERSISTED_QUERY_NOT_FOUND']);
    expect(await preparedRequests(base.prepared.url)).toBe(before);
  });

  it('a persisted-operations manifest entry, by documentId and by hash; nothing else runs', async () => {
    const manifest = loadPersistedOperations(MANIFEST);
    const persisted = await twin({ persistedOperations: manifest });
    try {
      const id = Object.keys(manifest).find((key) => manifest[key]?.includes('query SearchBox')) as string;
      const variables = { query: '123' };
      const byId = await alike(persisted, { documentId: id, variables }, { documentId: id, variables });
      expect(codes(byId)).toEqual([]);
      const byHash = { variables, extensions: { persistedQuery: { version: 1, sha256Hash: id.slice(7) } } };
      expect(await alike(persisted, byHash, byHash)).toMatchObject({ status: 200, body: byId.body });
      // The manifest's own text, sent as text, is refused on both paths, and never prepared.
      const before = await preparedRequests(persisted.prepared.url);
      const text = await send(persisted.prepared, { query: manifest[id], variables });
      expect(codes(text)).toEqual(['BAD_USER_INPUT']);
      expect(await preparedRequests(persisted.prepared.url)).toBe(before);
    } finally {
      await persisted.close();
    }
  });
});

describe('a GET of a hot query (a CDN’s miss) runs its prepared request, answered as Yoga answers it', () => {
  let cached: Twin;
  beforeAll(async () => {
    cached = await twin({ responseCacheTtlMs: 60_000, validatorCacheTtlMs: 60_000 });
  });
  afterAll(async () => {
    await cached?.close();
  });
  /** A GET with the header a form cannot set (CSRF prevention), as a frontend's client sends it. */
  const get = (call: Call): Call => ({
    ...call,
    method: 'GET',
    headers: { 'x-graphql-csrf': '1', ...call.headers },
  });
  const puts = () => devnet.requests.filter((r) => r.method === 'PUT').length;

  for (const { name, text } of queries.filter((q) => !/^\s*mutation\b/m.test(q.text))) {
    it(`the frontends’ ${name}`, async () => {
      const call = get({ query: text, variables: exampleVariables(devnet.data)[name], token: devnet.token });
      const answer = await alike(cached, call, call);
      expect(answer.status).toBe(200);
      expect(codes(answer)).toEqual([]);
    });
  }

  it('a public answer: public max-age and an entity tag, then a 304 for a caller that has it', async () => {
    const call = get({
      query: '{ validators(pageSize: 100) { nodes { moniker tokens commission { rate } } } }',
    });
    const answer = await alike(cached, call, call);
    expect(answer.status).toBe(200);
    expect(answer.headers['cache-control']).toBe('public, max-age=60');
    const etag = answer.headers.etag as string;
    expect(etag).toMatch(/^"[\w-]{27}"$/);
    const again = await alike(cached, call, get({ ...call, headers: { 'if-none-match': etag } }));
    expect(again.status).toBe(304);
    expect(again.body).toBe('');
    expect(again.headers.etag).toBe(etag);
    expect(again.headers['content-type']).toBeUndefined();
  });

  it('a private answer stays no-store, with no entity tag', async () => {
    const call = get({
      query: 'query P($d: String!) { delegations(delegatorAddress: $d) { nodes { shares } } }',
      variables: { d: exampleVariables(devnet.data).DelegatorPortfolio?.delegator },
    });
    const answer = await alike(cached, call, call);
    expect(answer.status).toBe(200);
    expect(answer.headers['cache-control']).toBe('no-store');
    expect(answer.headers.etag).toBeUndefined();
  });

  it('variables that do not coerce: the same refusal, never shared', async () => {
    const query = 'query B($h: Int!) { block(height: $h) { hash } }';
    const answer = await alike(
      cached,
      get({ query, variables: { h: 1 } }),
      get({ query, variables: { h: 'x' } }),
    );
    expect(codes(answer)).toEqual(['BAD_USER_INPUT']);
    expect(answer.headers['cache-control']).toBe('no-store');
    expect(answer.headers.etag).toBeUndefined();
  });

  it('a hot mutation sent as GET does not run: 405 on both, nothing sent to staking', async () => {
    const query =
      'mutation Buyback($input: UpdateBuybackRoundInput!) { updateBuybackRound(input: $input) { round { roundId } } }';
    const warm = { query, variables: exampleVariables(devnet.data).UpdateBuybackRound, token: devnet.token };
    // Hot on the prepared twin: sent once by POST, as the frontends send it.
    await send(cached.prepared, warm);
    const before = await preparedRequests(cached.prepared.url);
    const sentBefore = puts();
    const prepared = await send(cached.prepared, get(warm), 'get-mutation');
    const first = await send(cached.first, get(warm), 'get-mutation');
    expect(prepared.status).toBe(405);
    expect(prepared.headers.allow).toBe('POST');
    expect(prepared).toEqual(first);
    expect(await preparedRequests(cached.prepared.url)).toBe(before);
    expect(puts()).toBe(sentBefore);
  });

  it('a GET without a header a form cannot set is refused on both, and never runs prepared', async () => {
    const query = '{ validatorStatistics { totalValidators } }';
    await send(cached.prepared, get({ query }));
    const before = await preparedRequests(cached.prepared.url);
    const call: Call = { query, method: 'GET' };
    const prepared = await send(cached.prepared, call, 'no-csrf');
    const first = await send(cached.first, call, 'no-csrf');
    expect(prepared.status).toBe(403);
    expect(prepared).toEqual(first);
    expect(await preparedRequests(cached.prepared.url)).toBe(before);
  });
});

describe('what still holds on the prepared path', () => {
  it('a client that hangs up cancels its upstream call, and is logged 499', async () => {
    const query = 'query Slow($q: String!) { searchSuggestions(query: $q) { query } }';
    await send(base.prepared, { query, variables: { q: '1' } });
    const before = await preparedRequests(base.prepared.url);
    devnet.resetRecords();
    devnet.setLatency(5_000);
    const origin = new URL(base.prepared.url);
    const client = new Client(origin.origin);
    try {
      const from = base.prepared.lines.length;
      const controller = new AbortController();
      const answered = client
        .request({
          path: origin.pathname,
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-request-id': 'hangs-up' },
          body: JSON.stringify({ query, variables: { q: '2' } }),
          signal: controller.signal,
        })
        .catch((error: Error) => error.name);
      // Hung up once the upstream call is under way.
      await until(() => devnet.requests.length === 1, { within: 5_000, what: 'the upstream call under way' });
      expect(devnet.requests.length).toBe(1);
      controller.abort();
      expect(await answered).toBe('AbortError');
      const log = await logUntil(base.prepared, from, 'hangs-up');
      expect(log.at(-1)).toMatchObject({ status: 499, operation: 'Slow' });
      expect(await preparedRequests(base.prepared.url)).toBe(before + 1);
    } finally {
      devnet.setLatency(0);
      await client.close();
    }
  });
});
