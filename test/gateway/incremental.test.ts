import { createHash } from 'node:crypto';
import { parse } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateway, type Gateway } from '../../src/gateway.js';
import { operationCost } from '../../src/graphql/plugins/cost.js';
import { schema } from '../../src/schema/index.js';
import { hasRedis, startRedis, type TestRedis } from '../support/redis.js';
import { until } from '../support/until.js';
import { readAnswer, testSettings, useGatewayOnDevnet } from './helpers.js';

/**
 * What client caches and their links ask of a gateway beyond plain queries (contract.md §6):
 * `@defer` and `@stream` (multipart/mixed, interpreted, never cached, priced as without them) and
 * Apollo's automatic persisted queries (POST and GET, hash checked, bounded, shared through Redis).
 */

const env = useGatewayOnDevnet({ gateway: { responseCacheTtlMs: 60_000 } });
env.serveOverHttp();

const DEFERRED = `query Deferred { validatorStatistics { totalValidators } ... @defer { validators(pageSize: 2) { nodes { moniker } } } }`;
const PLAIN = `query Deferred { validatorStatistics { totalValidators } ... { validators(pageSize: 2) { nodes { moniker } } } }`;

/** The JSON parts of a multipart/mixed body, in order. */
function parts(body: string): any[] {
  return body
    .split(/\r?\n---/)
    .map((part) =>
      part
        .split(/\r?\n\r?\n/)
        .slice(1)
        .join('\n\n')
        .trim(),
    )
    .filter((json) => json.startsWith('{'))
    .map((json) => JSON.parse(json));
}

/**
 * A deferred answer's parts: the first has the rest and not the deferred field (`toEqual` names
 * every key), the second, last, brings that field alone.
 */
function expectDeferred(body: string): void {
  expect(parts(body)).toEqual([
    { data: { validatorStatistics: { totalValidators: expect.any(String) } }, hasNext: true },
    {
      incremental: [
        {
          data: { validators: { nodes: [{ moniker: expect.any(String) }, { moniker: expect.any(String) }] } },
          path: [],
        },
      ],
      hasNext: false,
    },
  ]);
}

const metric = async (gateway: Gateway, name: string) =>
  (await gateway.metrics.registry.getSingleMetric(name)?.get())?.values[0]?.value ?? 0;

describe('@defer and @stream', () => {
  it('answers multipart/mixed on a POST and on a GET: the first part, then the deferred one', async () => {
    const requests: { method: string; url?: string; body?: string; headers: Record<string, string> }[] = [
      {
        method: 'POST',
        body: JSON.stringify({ query: DEFERRED }),
        headers: { 'content-type': 'application/json' },
      },
      { method: 'GET', url: `?query=${encodeURIComponent(DEFERRED)}`, headers: { 'x-graphql-csrf': '1' } },
    ];
    for (const init of requests) {
      const res = await fetch(`${env.url}${init.url ?? ''}`, {
        method: init.method,
        headers: { ...init.headers, accept: 'multipart/mixed' },
        ...(init.body ? { body: init.body } : {}),
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^multipart\/mixed/);
      expectDeferred(await res.text());
    }
  });

  it('is handed to Yoga by the fast path, and streamed back', async () => {
    // A JSON POST accepting anything is the fast path's; a deferred document goes on to Yoga.
    const res = await fetch(env.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: '*/*' },
      body: JSON.stringify({ query: DEFERRED }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^multipart\/mixed/);
    expectDeferred(await res.text());
  });

  it('is never compiled, never kept by the response cache, and priced as without the directive', async () => {
    const compiledBefore = await metric(env.gateway, 'graphql_compilations_total');
    for (let i = 0; i < 12; i++) {
      const res = await fetch(env.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'multipart/mixed' },
        body: JSON.stringify({ query: DEFERRED }),
      });
      expectDeferred(await res.text());
    }
    expect(await metric(env.gateway, 'graphql_compilations_total')).toBe(compiledBefore);
    // Every one read the validator list again: nothing was answered from the response cache.
    expect(await metric(env.gateway, 'graphql_response_cache_entries')).toBe(0);
    expect(operationCost(schema, parse(DEFERRED), null, {})).toBe(
      operationCost(schema, parse(PLAIN), null, {}),
    );
  });
});

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const persisted = (hash: string) => ({ persistedQuery: { version: 1, sha256Hash: hash } });

async function post(gateway: Gateway, body: object) {
  const res = await gateway.yoga.fetch('http://gateway.test/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await readAnswer(res) };
}

describe('automatic persisted queries', () => {
  const QUERY = '{ validatorStatistics { totalValidators } }';

  it('asks for an unknown hash, keeps the document sent with it, and then runs it by hash alone', async () => {
    const hash = sha256(QUERY);
    const unknown = await post(env.gateway, { extensions: persisted(hash) });
    expect(unknown.body.errors).toEqual([
      { message: 'PersistedQueryNotFound', extensions: { code: 'PERSISTED_QUERY_NOT_FOUND' } },
    ]);
    env.devnet.resetRecords();
    const registered = await post(env.gateway, { query: QUERY, extensions: persisted(hash) });
    expect(registered.body.errors).toBeUndefined();
    const byHash = await post(env.gateway, { extensions: persisted(hash) });
    expect(byHash.status).toBe(200);
    expect(byHash.body).toEqual(registered.body);
  });

  it('refuses a document whose hash does not match with BAD_USER_INPUT, before any upstream call', async () => {
    env.devnet.resetRecords();
    const res = await post(env.gateway, { query: QUERY, extensions: persisted(sha256('something else')) });
    expect(res.status).toBe(400);
    expect(res.body.errors[0].extensions).toEqual({ code: 'BAD_USER_INPUT' });
    expect(env.devnet.requests).toHaveLength(0);
  });

  it('keeps only a document that could run: not one refused by validation or by its price', async () => {
    const invalid = '{ validatorStatistics { noSuchField } }';
    const overpriced =
      '{ searchSuggestions(query: "0x") { addresses { delegations(pageSize: 100) { nodes { shares validator { moniker } } } } } }';
    for (const query of [invalid, overpriced]) {
      const sent = await post(env.gateway, { query, extensions: persisted(sha256(query)) });
      expect(sent.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
      const byHash = await post(env.gateway, { extensions: persisted(sha256(query)) });
      expect(byHash.body.errors[0].extensions).toEqual({ code: 'PERSISTED_QUERY_NOT_FOUND' });
    }
  });

  it('answers a GET by hash of a public query as any public GET: CDN-cacheable', async () => {
    const query = '{ validatorStatistics { activeValidators } }';
    const hash = sha256(query);
    await post(env.gateway, { query, extensions: persisted(hash) });
    const url = `${env.url}?extensions=${encodeURIComponent(JSON.stringify(persisted(hash)))}`;
    const res = await fetch(url, { headers: { accept: 'application/json', 'x-graphql-csrf': '1' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('public, max-age=60');
    expect(res.headers.get('etag')).toMatch(/^"/);
    expect((await readAnswer(res)).data.validatorStatistics.activeValidators).toEqual(expect.any(String));
  });

  it('keeps at most APQ_ENTRIES documents', async () => {
    const gateway = env.coldGateway({ apq: { maxEntries: 2, maxBytes: 1_000_000, redisBytes: 1_000_000 } });
    const queries = ['{ a: __typename }', '{ b: __typename }', '{ c: __typename }'];
    for (const query of queries) await post(gateway, { query, extensions: persisted(sha256(query)) });
    const byHash = await Promise.all(queries.map((q) => post(gateway, { extensions: persisted(sha256(q)) })));
    expect(byHash.map((r) => r.body.errors?.[0]?.extensions.code ?? 'ok')).toEqual([
      'PERSISTED_QUERY_NOT_FOUND',
      'ok',
      'ok',
    ]);
  });

  it('is off with a persisted-operations manifest, which alone says what runs', async () => {
    const gateway = env.coldGateway({ persistedOperations: { [`sha256:${sha256(QUERY)}`]: QUERY } });
    const other = '{ validatorStatistics { consensusValidators } }';
    const res = await post(gateway, { query: other, extensions: persisted(sha256(other)) });
    expect(res.body.errors[0]).toEqual({
      message: 'Only persisted operations are accepted.',
      extensions: { code: 'BAD_USER_INPUT' },
    });
    const unknown = await post(gateway, { extensions: persisted(sha256(other)) });
    expect(unknown.body.errors[0]).toEqual({
      message: 'Unknown persisted operation.',
      extensions: { code: 'BAD_USER_INPUT' },
    });
    expect((await post(gateway, { extensions: persisted(sha256(QUERY)) })).body.errors).toBeUndefined();
  });
});

describe.runIf(hasRedis)('automatic persisted queries through Redis', () => {
  let redis: TestRedis;
  let gateways: Gateway[] = [];
  beforeAll(async () => {
    redis = await startRedis();
    const settings = testSettings();
    gateways = [0, 1].map(() =>
      createGateway({
        ...settings,
        scale: { ...settings.scale, redisUrl: redis.url, redisTimeoutMs: 1_000 },
        upstreamUrls: env.devnet.urls,
      }),
    );
  });
  afterAll(async () => {
    await Promise.all(gateways.map((g) => g.close()));
    await redis?.close();
  });

  it('runs on one instance a document another registered', async () => {
    const [a, b] = gateways as [Gateway, Gateway];
    const query = '{ validatorStatistics { rewards24h } }';
    const hash = sha256(query);
    expect((await post(a, { query, extensions: persisted(hash) })).body.errors).toBeUndefined();
    // The registration reaches Redis after A's answer: B asks until it is there (each miss is an
    // ordinary PersistedQueryNotFound), then runs the document by its hash alone.
    let data: any;
    await until(
      async () => {
        ({ data } = (await post(b, { extensions: persisted(hash) })).body);
        return data !== undefined;
      },
      { what: "A's registration of the document read by B from Redis" },
    );
    expect(data.validatorStatistics.rewards24h).toEqual(expect.any(String));
  });
});
