import type { AddressInfo } from 'node:net';
import { createClient } from 'graphql-ws';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { loadConfig } from '../../src/config.js';
import { createGateway, type Gateway, type GatewayOptions } from '../../src/gateway.js';
import { createGatewayServer } from '../../src/http/node-server.js';
import { hasRedis } from '../support/redis.js';
import { subscribe } from '../support/sse.js';
import { until } from '../support/until.js';
import { listen, parseAnswer, testSettings, useDevnetAndRedis } from './helpers.js';

/**
 * The chain in answers (contract.md §9, issue 51): every answer says the height it reflects, final
 * history is immutable, a public latest-state answer is kept until the next block and renewed once
 * for the deployment, and Min-Chain-Height waits for the head or refuses. Over real sockets, on a
 * devnet whose chain moves only when the test advances it, and a real Redis.
 */

const STATISTICS = '{ validatorStatistics { activeValidators consensusValidators } }';
const DEFERRED = '{ validatorStatistics { totalValidators } ... @defer { block(height: 1) { height } } }';

/** What Apollo Client 4's HttpLink sends for a subscription. */
const APOLLO_ACCEPT =
  'multipart/mixed;boundary=graphql;subscriptionSpec=1.0,application/graphql-response+json,application/json;q=0.9';

/** The JSON parts of a multipart/mixed body, in order. */
const partsOf = (body: string): any[] =>
  body
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

describe.runIf(hasRedis)('answers that follow the chain', () => {
  const env = useDevnetAndRedis();
  let served: { gateway: Gateway; url: string; close(): Promise<void> }[] = [];

  afterEach(async () => {
    await Promise.all(served.map((s) => s.close()));
    served = [];
  });

  async function start(overrides: Partial<GatewayOptions> = {}) {
    const base = testSettings();
    const settings = testSettings({
      responseCacheTtlMs: 60_000,
      validatorCacheTtlMs: 0,
      scale: { ...base.scale, redisUrl: env.redis.url, redisTimeoutMs: 1_000, rateLimitPoints: 0 },
      ...overrides,
    });
    // With the default CHAIN_HEAD_HOLD_MS, which testSettings turns off for every other test.
    const live = {
      ...loadConfig({}).live,
      pollMs: 30,
      leaseMs: 1_000,
      minChainHeightWaitMs: 5_000,
      ...overrides.live,
    };
    const gateway = createGateway({ ...settings, live, upstreamUrls: env.devnet.urls });
    const http = await listen(gateway);
    const one = {
      gateway,
      url: http.url,
      close: async () => {
        await http.close();
        await gateway.close();
      },
    };
    served.push(one);
    return one;
  }

  const post = async (url: string, query: string, headers: Record<string, string> = {}) => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
      body: JSON.stringify({ query }),
    });
    return { res, body: parseAnswer(await res.text()) };
  };
  const get = async (url: string, query: string) => {
    const res = await fetch(`${url}?query=${encodeURIComponent(query)}`, {
      headers: { accept: 'application/json', 'x-graphql-csrf': '1' },
    });
    return { res, body: parseAnswer(await res.text()) };
  };

  /** The head a gateway's answers say, once it knows one at least `min`. */
  async function headOf(url: string, min = 1): Promise<number> {
    let height = 0;
    await until(
      async () => {
        const { res } = await post(url, STATISTICS);
        height = Number(res.headers.get('chain-height') ?? 0);
        return height >= min;
      },
      { what: `a chain-height of at least ${min}` },
    );
    return height;
  }

  const validatorReads = () => env.devnet.requests.filter((r) => r.path === '/stake/validators').length;

  it('answers a final block immutable, stamped with its own height, in header and body', async () => {
    const { url } = await start();
    const head = await headOf(url);
    const query = `{ block(height: ${head - 5}) { height actionCountComplete } }`;
    const { res, body } = await get(url, query);
    expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(res.headers.get('chain-height')).toBe(String(head - 5));
    expect(body.extensions).toEqual({ chainHeight: head - 5 });
    // The head's own block may still receive actions: latest state, not immutable.
    const latest = await get(url, `{ block(height: ${head}) { height } }`);
    expect(latest.res.headers.get('cache-control')).not.toContain('immutable');
    expect(latest.res.headers.get('chain-height')).toBe(String(head));
  });

  it('keeps statistics until the next block and renews them once for two gateways on one Redis', async () => {
    const a = await start();
    const b = await start();
    const head = await headOf(a.url);
    await headOf(b.url, head);
    const before = validatorReads();
    const first = await post(a.url, STATISTICS);
    const second = await post(b.url, STATISTICS);
    expect(first.body.extensions).toEqual({ chainHeight: head });
    expect(second.body).toEqual(first.body);
    expect(validatorReads()).toBe(before);
    env.devnet.advance(1);
    await headOf(a.url, head + 1);
    await headOf(b.url, head + 1);
    const reads = validatorReads();
    // Renewed at the new height, read from the upstream by one instance for both.
    const renewedA = await post(a.url, STATISTICS);
    const renewedB = await post(b.url, STATISTICS);
    expect(renewedA.body.extensions).toEqual({ chainHeight: head + 1 });
    expect(renewedB.body.extensions).toEqual({ chainHeight: head + 1 });
    expect(validatorReads()).toBe(reads);
  });

  it('stamps the POST fast path, a GET and an SSE stream with the head', async () => {
    const { url } = await start();
    const head = await headOf(url);
    const posted = await post(url, '{ block(height: 1) { height } } ');
    expect(posted.res.headers.get('chain-height')).toBe('1');
    const got = await get(url, STATISTICS);
    expect(got.res.headers.get('chain-height')).toBe(String(head));
    expect(got.res.headers.get('access-control-expose-headers') ?? 'chain-height').toContain('chain-height');
    const stream = await subscribe(url, 'subscription { blockAdded { height } }');
    try {
      expect(stream.headers.get('chain-height')).toBe(String(head));
      env.devnet.advance(1);
      // Each event's id is its block's height already (hub.ts); its data says the same.
      const event = await stream.next();
      expect(event.data.blockAdded.height).toBe(head + 1);
    } finally {
      stream.close();
    }
  });

  it('waits for a Min-Chain-Height that comes, and refuses one that does not, coded', async () => {
    const { url } = await start({
      live: { ...loadConfig({}).live, pollMs: 30, leaseMs: 1_000, minChainHeightWaitMs: 300 },
    });
    const head = await headOf(url);
    const refused = await post(url, STATISTICS, { 'min-chain-height': String(head + 1000) });
    expect(refused.body.errors.map((e: any) => e.extensions)).toEqual([
      { code: 'UPSTREAM_TIMEOUT', chainHeight: head },
    ]);
    const malformedReads = env.devnet.requests.length;
    const malformed = await post(url, STATISTICS, { 'min-chain-height': 'soon' });
    expect(malformed.body.errors.map((e: any) => e.extensions.code)).toEqual(['BAD_USER_INPUT']);
    expect(env.devnet.requests.filter((r) => r.path === '/stake/validators')).toHaveLength(
      env.devnet.requests.slice(0, malformedReads).filter((r) => r.path === '/stake/validators').length,
    );
    const { url: patient } = await start();
    const now = await headOf(patient);
    const waiting = post(patient, STATISTICS, { 'min-chain-height': String(now + 1) });
    env.devnet.advance(1);
    const answered = await waiting;
    expect(answered.body.errors).toBeUndefined();
    expect(answered.body.extensions).toEqual({ chainHeight: now + 1 });
    expect(answered.res.headers.get('chain-height')).toBe(String(now + 1));
  });
  it('stamps a multipart answer in its header: a deferred query and a subscription', async () => {
    const { url } = await start();
    const head = await headOf(url);
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'multipart/mixed' },
      body: JSON.stringify({ query: DEFERRED }),
    });
    expect(res.headers.get('content-type')).toMatch(/^multipart\/mixed/);
    expect(res.headers.get('chain-height')).toBe(String(head));
    const [, rest] = partsOf(await res.text());
    expect(rest.incremental).toEqual([{ data: { block: { height: 1 } }, path: [] }]);
    // Apollo Client's multipart subscriptions (http/sse.ts writes them).
    const abort = new AbortController();
    const stream = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: APOLLO_ACCEPT },
      body: JSON.stringify({ query: 'subscription { blockAdded { height } }' }),
      signal: abort.signal,
    });
    try {
      expect(stream.headers.get('content-type')).toMatch(/^multipart\/mixed/);
      expect(stream.headers.get('chain-height')).toBe(String(head));
    } finally {
      abort.abort();
    }
  });

  it('stamps an answer over WebSocket in its extensions', async () => {
    const { gateway, url } = await start();
    const head = await headOf(url);
    const config = loadConfig({});
    const server = createGatewayServer(gateway, config);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const client = createClient({
      url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`,
      webSocketImpl: WebSocket,
      retryAttempts: 0,
    });
    try {
      const results: any[] = [];
      await new Promise<void>((resolve, reject) =>
        client.subscribe(
          { query: STATISTICS },
          { next: (r) => results.push(r), error: reject, complete: resolve },
        ),
      );
      expect(results.map((r) => r.extensions)).toEqual([{ chainHeight: head }]);
    } finally {
      await client.dispose();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
