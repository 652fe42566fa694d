import { Agent, request } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { type Devnet, startDevnet } from '../../src/devnet/index.js';
import { createGateway, type Gateway } from '../../src/gateway.js';
import { devnetOptions, listen, parseAnswer, preparedRequests, testSettings } from '../gateway/helpers.js';

/**
 * Shared answers are nobody's (contract.md §9). A public GET answer (`cache-control: public`) is
 * kept by CDNs and handed to everyone: it carries no `RateLimit` fields, and a request that asks for
 * its cost (`x-graphql-cost: true`) is answered privately, never stored in the response cache nor
 * served from it. Both paths are attacked over a real socket: a cold GET, which Yoga's path answers,
 * and the same GET once its query is hot, which the adapter's prepared request answers. Two clients
 * are two loopback addresses (127.0.0.1 and 127.0.0.2), each with its own budget.
 */

const POINTS = 100_000;
const ASK = { 'x-graphql-cost': 'true' };
/** What a public answer varies with: a CDN must not hand it to a request that asks for its cost. */
const VARY = 'origin, accept, x-graphql-cost';

let devnet: Devnet;
let gateway: Gateway;
let url: string;
let close: () => Promise<void>;
/** Connections from another loopback address: another client, with a budget of its own. */
const clients = [2, 3, 4].map((n) => new Agent({ localAddress: `127.0.0.${n}` }));
const [second, third, fourth] = clients as [Agent, Agent, Agent];

beforeAll(async () => {
  devnet = await startDevnet(devnetOptions({ record: true }));
  const config = loadConfig({});
  gateway = createGateway({
    ...testSettings({
      scale: { ...config.scale, rateLimitPoints: POINTS, rateLimitWindowMs: 60_000 },
      responseCacheTtlMs: 60_000,
      // Every response-cache miss reads staking: what reached it tells a miss from a hit.
      validatorCacheTtlMs: 0,
      // A document is hot (its GET runs the prepared request) from its second request on.
      documents: { ...config.documents, keepAfter: 1, compileAfter: 1 },
    }),
    upstreamUrls: devnet.urls,
  });
  const served = await listen(gateway);
  url = served.url;
  close = served.close;
});
afterAll(async () => {
  await close?.();
  await gateway?.close();
  await Promise.all(clients.map((client) => client.close()));
  await devnet?.close();
});
beforeEach(() => devnet.resetRecords());

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any;
  text: string;
}

/** A GET of `query` (with the header a form cannot set), from 127.0.0.1 or `from`. */
async function get(query: string, headers: Record<string, string> = {}, from?: Agent): Promise<Answer> {
  const res = await request(`${url}?query=${encodeURIComponent(query)}`, {
    headers: { accept: 'application/json', 'x-graphql-csrf': '1', ...headers },
    ...(from ? { dispatcher: from } : {}),
  });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, body: text ? parseAnswer(text) : null, text };
}

async function post(query: string, headers: Record<string, string> = {}, from?: Agent): Promise<Answer> {
  const res = await request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
    body: JSON.stringify({ query }),
    ...(from ? { dispatcher: from } : {}),
  });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, body: parseAnswer(text), text };
}

/** The gateway's requests that read staking (by the request id each forwards): one per response-cache miss. */
const listReads = () =>
  new Set(devnet.requests.filter((r) => r.service === 'stake').map((r) => r.headers['x-request-id'])).size;

/** The response cache's lookups so far, as /metrics counts them. */
async function lookups() {
  const text = await (await fetch(url.replace('/graphql', '/metrics'))).text();
  const count = (result: string) =>
    Number(
      new RegExp(`^cache_requests_total\\{cache="responses",result="${result}"\\} (\\d+)$`, 'm').exec(
        text,
      )?.[1] ?? 0,
    );
  return { hit: count('hit'), miss: count('miss') };
}

/** What a CDN keeps of an answer: nothing of the caller who asked first. */
function expectShared(answer: Answer) {
  expect(answer.headers['cache-control']).toBe('public, max-age=60');
  expect(answer.headers.ratelimit).toBeUndefined();
  expect(answer.headers['ratelimit-policy']).toBeUndefined();
  expect(answer.headers.vary).toBe(VARY);
  if (answer.status === 200) expect(answer.body.extensions).toBeUndefined();
}

/** An answer for its caller alone: its cost, its budget, stored by no cache. */
function expectPrivate(answer: Answer, cost: number, remaining: number) {
  expect(answer.status).toBe(200);
  expect(answer.headers['cache-control']).toBe('no-store');
  expect(answer.headers.etag).toBeUndefined();
  expect(answer.headers.vary).toBe(VARY);
  expect(answer.body.extensions).toEqual({
    cost: { requested: cost, limit: 3_000, budget: { limit: POINTS, remaining, reset: 60 } },
  });
  expect(answer.headers.ratelimit).toMatch(
    new RegExp(`^limit=${POINTS}, remaining=${remaining}, reset=\\d+$`),
  );
}

describe('a public answer carries nothing of one client', () => {
  it('no RateLimit fields: cold through Yoga, hot through the prepared request, and in its 304', async () => {
    // 10 + 3 × 2 (pricing.test.ts): charged on every request, whoever answers it.
    const query = '{ validators(pageSize: 3) { nodes { moniker } } }';
    const prepared = await preparedRequests(url);
    const cold = await get(query);
    expect(cold.status).toBe(200);
    expectShared(cold);
    expect(await preparedRequests(url)).toBe(prepared);

    // Another client, the query hot now: the prepared request answers from the cache entry.
    const hot = await get(query, {}, second);
    expect(hot.status).toBe(200);
    expectShared(hot);
    expect(await preparedRequests(url)).toBe(prepared + 1);
    expect(hot.text).toBe(cold.text);
    expect(hot.headers.etag).toBe(cold.headers.etag);

    const unchanged = await get(query, { 'if-none-match': String(cold.headers.etag) });
    expect(unchanged.status).toBe(304);
    expectShared(unchanged);
    expect(await preparedRequests(url)).toBe(prepared + 2);
    expect(listReads()).toBe(1);

    // The budget was charged all the same: a private answer tells it (three requests of 16).
    const own = await post(query);
    expect(own.headers['cache-control']).toBe('no-store');
    expect(own.headers.ratelimit).toMatch(
      new RegExp(`^limit=${POINTS}, remaining=${POINTS - 3 * 16}, reset=`),
    );
    expect(own.headers['ratelimit-policy']).toBe(`${POINTS};w=60`);
  });
});

describe('an answer asked with x-graphql-cost: true is never shared', () => {
  it('private on both paths: its own cost and budget, never stored, never served from the cache', async () => {
    const query = '{ validators(pageSize: 4) { nodes { moniker } } }'; // 10 + 4 × 2
    const prepared = await preparedRequests(url);
    const before = await lookups();

    // Cold, through Yoga: its answer is not kept, so the next public GET still reads staking.
    const asked = await get(query, ASK, third);
    expectPrivate(asked, 18, POINTS - 18);
    expect(await preparedRequests(url)).toBe(prepared);
    expect(listReads()).toBe(1);
    const shared = await get(query, {}, third);
    expectShared(shared);
    expect(listReads()).toBe(2);
    expect(await lookups()).toEqual({ hit: before.hit, miss: before.miss + 1 });

    // Hot, through the prepared request, from another client: the entry is there, and not used.
    const hot = await get(query, ASK, fourth);
    expectPrivate(hot, 18, POINTS - 18);
    expect(await preparedRequests(url)).toBe(prepared + 2);
    expect(listReads()).toBe(3);
    // Nor is a caller that holds the shared answer's tag told 304.
    const tagged = await get(query, { ...ASK, 'if-none-match': String(shared.headers.etag) }, fourth);
    expectPrivate(tagged, 18, POINTS - 36);
    expect(listReads()).toBe(4);
    expect(await lookups()).toEqual({ hit: before.hit, miss: before.miss + 1 });

    // The entry the public GET filled still answers the public: one hit, staking not read.
    expectShared(await get(query, {}, fourth));
    expect(listReads()).toBe(4);
    expect(await lookups()).toEqual({ hit: before.hit + 1, miss: before.miss + 1 });
  });

  it('a POST asking for its cost is not answered from the cache either', async () => {
    const query = '{ validators(pageSize: 5) { nodes { moniker } } }'; // 10 + 5 × 2
    expectShared(await get(query));
    expect(listReads()).toBe(1);
    const asked = await post(query, ASK);
    expect(asked.status).toBe(200);
    expect(asked.headers['cache-control']).toBe('no-store');
    expect(asked.headers.vary).toBe(VARY);
    expect(asked.body.extensions.cost.requested).toBe(20);
    expect(listReads()).toBe(2);
  });
});
