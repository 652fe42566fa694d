import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { type Client, createClient, type SubscribePayload } from 'graphql-ws';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { loadConfig, type ServerLimits } from '../../src/config.js';
import type { Gateway } from '../../src/gateway.js';
import { createGatewayServer } from '../../src/http/node-server.js';
import { startServerProcess } from '../support/server-process.js';
import { subscribe } from '../support/sse.js';
import { until } from '../support/until.js';
import { liveTestSettings, notPolls, parseAnswer, useGatewayOnDevnet } from './helpers.js';

/**
 * GraphQL over WebSocket (graphql-ws, subprotocol `graphql-transport-ws`) on /graphql, with the
 * `graphql-ws` client as its documentation starts, over real sockets against the devnet: the same
 * pipeline as HTTP (limits, pricing and the rate limit, authorization, the subscription caps, the
 * live groups), the upgrade's Origin checked against CORS, and the socket's own bounds.
 */

const live = liveTestSettings();
const env = useGatewayOnDevnet({ gateway: { live } });

const PROTOCOL = 'graphql-transport-ws';
const BLOCKS = 'subscription Blocks { blockAdded { height hash proposerValidator { moniker } } }';
const FAILED_TXS = 'query Failed { failedTransactions(pageSize: 2) { nodes { hash error } } }';
const BLOCK = '{ block(height: 1) { height } }'; // 10 + 1

/** A gateway served over HTTP with its WebSocket upgrade, as main.ts serves it. */
interface Served {
  /** ws://…/graphql */
  ws: string;
  /** http://…/graphql */
  http: string;
  close(): Promise<void>;
}

const servers: Served[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

async function serve(gateway: Gateway, limits: Partial<ServerLimits> = {}): Promise<Served> {
  const config = loadConfig({});
  const server = createGatewayServer(gateway, { ...config, server: { ...config.server, ...limits } });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const served = {
    ws: `ws://127.0.0.1:${port}/graphql`,
    http: `http://127.0.0.1:${port}/graphql`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  servers.push(served);
  return served;
}

let main: Served;
const url = () => main.ws;
beforeAll(async () => {
  main = await serve(env.gateway);
});

const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.dispose()));
  await until(() => env.gateway.live.hub.sources().length === 0, {
    what: "every live source given up after the test's sockets closed",
  });
});

/** The graphql-ws client as its documentation starts it, on `ws` (Node has no WebSocket of its own here). */
function client(options: { url?: string; authorization?: string; webSocketImpl?: unknown } = {}) {
  const made = createClient({
    url: options.url ?? url(),
    webSocketImpl: options.webSocketImpl ?? WebSocket,
    retryAttempts: 0,
    ...(options.authorization ? { connectionParams: { authorization: options.authorization } } : {}),
  });
  clients.push(made);
  return made;
}

/** Every result of one operation, until it completes or errs (an `error` message: its errors). */
function execute(c: Client, payload: SubscribePayload): Promise<{ results: any[]; errors?: any }> {
  return new Promise((resolve) => {
    const results: any[] = [];
    c.subscribe(payload, {
      next: (result) => results.push(parseAnswer(JSON.stringify(result))),
      error: (errors) => resolve({ results, errors }),
      complete: () => resolve({ results }),
    });
  });
}

const metric = async (gateway: Gateway, name: string) => {
  const found = (await gateway.metrics.registry.getMetricsAsJSON()).find((m) => m.name === name);
  return (found?.values ?? []).reduce((sum, v) => sum + Number(v.value), 0);
};

/** The same operation over HTTP, for comparison. */
const overHttp = (query: string, headers: Record<string, string> = {}) =>
  env.gql(query, { headers }).then(({ status: _status, ...answer }) => answer);

describe('GraphQL over WebSocket', () => {
  it('is served on /graphql (the upgrade no longer refused by CSRF prevention)', async () => {
    const socket = new WebSocket(url(), PROTOCOL);
    await once(socket, 'open');
    expect(socket.protocol).toBe(PROTOCOL);
    socket.close();
    await once(socket, 'close');
  });

  it('delivers blockAdded events in order, in the same live group as an SSE subscriber', async () => {
    const c = client();
    const blocks = c.iterate<{ blockAdded: { height: number; hash: string } }>({ query: BLOCKS });
    const first = blocks.next();
    const sse = await subscribe(main.http, BLOCKS);
    await until(async () => (await metric(env.gateway, 'graphql_subscriptions_active')) === 2, {
      what: 'both subscriptions counted active',
    });
    await env.gateway.live.hub.afterPoll('blocks');
    const executed = await metric(env.gateway, 'live_executions_total');
    const { heights } = env.devnet.advance(2);
    const events = [await first, await blocks.next()];
    expect(events.map((e) => e.value?.data?.blockAdded.height)).toEqual(heights);
    expect(events[0]?.value?.data?.blockAdded.hash).toBe(
      env.devnet.data.blocks.hash[(heights[0] as number) - 1],
    );
    // The same bytes as the SSE stream's, from one execution per block for both.
    const overSse = await sse.take(2);
    expect(events.map((e) => e.value)).toEqual(overSse);
    expect(await metric(env.gateway, 'graphql_subscription_groups')).toBe(1);
    expect((await metric(env.gateway, 'live_executions_total')) - executed).toBe(2);
    sse.close();
    await blocks.return?.();
  });

  it('answers a query and the mutation, priced and charged like HTTP', async () => {
    const c = client({ authorization: `Bearer ${env.devnet.token}` });
    const query = '{ validators(pageSize: 3) { nodes { moniker } } }';
    const { results } = await execute(c, { query });
    expect(results).toEqual([await overHttp(query)]);

    const { results: mutated } = await execute(c, {
      query:
        'mutation M($input: UpdateBuybackRoundInput!) { updateBuybackRound(input: $input) { round { roundId totalSlots } } }',
      variables: { input: { roundId: 'round-006', totalSlots: 151 } },
    });
    expect(mutated).toEqual([
      { data: { updateBuybackRound: { round: { roundId: 'round-006', totalSlots: 151 } } } },
    ]);
    const put = env.devnet.requests.find((r) => r.method === 'PUT');
    expect(put?.headers.authorization).toBe(`Bearer ${env.devnet.token}`);
  });

  it('reads a private field with connectionParams.authorization, and answers UNAUTHENTICATED without it', async () => {
    const withToken = client({ authorization: `Bearer ${env.devnet.token}` });
    const without = client();
    const [allowed, refused] = await Promise.all([
      execute(withToken, { query: FAILED_TXS }),
      execute(without, { query: FAILED_TXS }),
    ]);
    expect(allowed.results[0].data.failedTransactions.nodes).toHaveLength(2);
    expect(refused.results).toHaveLength(1);
    expect(refused.results[0].errors.map((e: any) => e.extensions.code)).toEqual(['UNAUTHENTICATED']);
    // The token went to the explorer with the first socket's request only.
    const explorer = env.devnet.requests.filter((r) => r.service === 'explorer');
    expect(explorer.map((r) => r.headers.authorization ?? null)).toEqual([`Bearer ${env.devnet.token}`]);
    // The same answers as over HTTP.
    expect(allowed.results).toEqual([
      await overHttp(FAILED_TXS, { authorization: `Bearer ${env.devnet.token}` }),
    ]);
    expect(refused.results).toEqual([await overHttp(FAILED_TXS)]);
  });

  it("takes a non-browser client's token from the upgrade request's Authorization header", async () => {
    const token = env.devnet.token;
    class WithHeader extends WebSocket {
      constructor(address: string, protocols?: string | string[]) {
        super(address, protocols, { headers: { authorization: `Bearer ${token}` } });
      }
    }
    const { results } = await execute(client({ webSocketImpl: WithHeader }), { query: FAILED_TXS });
    expect(results[0].errors).toBeUndefined();
    expect(results[0].data.failedTransactions.nodes).toHaveLength(2);
  });

  it('refuses an upgrade whose Origin CORS does not allow with 403 before the handshake; allows a CORS origin and none', async () => {
    const evil = new WebSocket(url(), PROTOCOL, { origin: 'https://evil.example' });
    const opened = () => {
      throw new Error('a refused origin got a socket');
    };
    evil.on('open', opened);
    const [, res] = (await once(evil, 'unexpected-response')) as [
      unknown,
      import('node:http').IncomingMessage,
    ];
    expect(res.statusCode).toBe(403);
    expect(res.headers.connection).toBe('close');
    let body = '';
    for await (const chunk of res) body += chunk;
    expect(JSON.parse(body).errors[0].extensions.code).toBe('BAD_USER_INPUT');
    evil.off('open', opened);

    // The devnet's CORS allows any localhost origin (CORS_ORIGINS unset).
    const page = new WebSocket(url(), PROTOCOL, { origin: 'http://localhost:5173' });
    await once(page, 'open');
    page.close();
    await once(page, 'close');
  });

  it('counts each subscription of a socket against MAX_SUBSCRIPTIONS_PER_CLIENT: one over is RATE_LIMITED', async () => {
    const capped = env.coldGateway({ live: { ...live, maxSubscriptionsPerClient: 2 } });
    const served = await serve(capped);
    const c = client({ url: served.ws });
    const a = c.iterate({ query: BLOCKS });
    const b = c.iterate({ query: 'subscription { blockAdded { height } }' });
    void a.next();
    void b.next();
    await until(async () => (await metric(capped, 'graphql_subscriptions_active')) === 2, {
      what: 'two subscriptions counted active',
    });
    const { results } = await execute(c, { query: 'subscription Third { blockAdded { hash } }' });
    expect(results).toHaveLength(1);
    expect(results[0].errors[0].extensions.code).toBe('RATE_LIMITED');
    expect(await metric(capped, 'graphql_subscriptions_active')).toBe(2);
    await c.dispose();
    await until(async () => (await metric(capped, 'graphql_subscriptions_active')) === 0, {
      what: "graphql_subscriptions_active back to 0 once the client's socket closed",
    });
    await until(() => capped.live.hub.sources().length === 0, {
      what: "the capped gateway's source given up",
    });
  });

  it('refuses a document over the limits, or priced over MAX_COMPLEXITY, exactly as HTTP does', async () => {
    const c = client();
    const aliases = `{ ${Array.from({ length: 16 }, (_, i) => `a${i}: searchSuggestions(query: "${i}") { query }`).join(' ')} }`;
    const costly =
      '{ searchSuggestions(query: "0x") { addresses { delegations(pageSize: 100) { nodes { shares validator { moniker } } } } } }';
    const overLimits = await overHttp(aliases);
    expect(overLimits.errors?.[0]?.extensions.code).toBe('BAD_USER_INPUT');
    // Refused at validation: graphql-ws's `error` message, with HTTP's errors.
    expect(await execute(c, { query: aliases })).toEqual({ results: [], errors: overLimits.errors });
    const overPrice = await overHttp(costly);
    expect(overPrice.errors?.[0]?.extensions.code).toBe('BAD_USER_INPUT');
    // Refused as it starts to execute: a result, HTTP's.
    expect(await execute(c, { query: costly })).toEqual({ results: [overPrice] });
    // A poll of an earlier test's stream may still be answered (its requests are `live-…`); these made none.
    expect(notPolls(env.devnet.requests)).toEqual([]);
  });

  it('refuses what only HTTP serves (APQ extensions, @defer) and an operation it cannot pick, as HTTP words it', async () => {
    const c = client();
    const apq = await execute(c, {
      query: '{ __typename }',
      extensions: { persistedQuery: { version: 1, sha256Hash: 'a'.repeat(64) } },
    });
    expect(apq.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    expect(apq.errors[0].message).toMatch(/^Not served over WebSocket: APQ/);
    const deferred = await execute(c, { query: '{ ... @defer { __typename } }' });
    expect(deferred.errors[0].message).toMatch(/^Not served over WebSocket: incremental delivery/);
    const two = 'query A { __typename } query B { __typename }';
    const unnamed = await execute(c, { query: two });
    expect(unnamed.errors).toEqual((await overHttp(two)).errors);
    // Apollo's GraphQLWsLink sends `extensions: {}` with every operation.
    expect((await execute(c, { query: '{ __typename }', extensions: {} })).results).toEqual([
      { data: { __typename: 'Query' } },
    ]);
  });

  it('charges the rate limit: a budget of 25 answers two operations of cost 11, not a third', async () => {
    const limited = env.coldGateway({ scale: { ...loadConfig({}).scale, rateLimitPoints: 25 } });
    const c = client({ url: (await serve(limited)).ws });
    for (let i = 0; i < 2; i++)
      expect((await execute(c, { query: BLOCK })).results[0].errors).toBeUndefined();
    const { results } = await execute(c, { query: BLOCK });
    expect(results[0].errors[0].extensions.code).toBe('RATE_LIMITED');
  });

  it('closes a socket that sends no connection_init within 3 s with 4408', async () => {
    const socket = new WebSocket(url(), PROTOCOL);
    await once(socket, 'open');
    const [code] = await once(socket, 'close');
    expect(code).toBe(4408);
  });

  it('closes a socket whose message is over MAX_REQUEST_BYTES (1009), before reading it', async () => {
    const socket = new WebSocket(url(), PROTOCOL);
    await once(socket, 'open');
    socket.send(JSON.stringify({ type: 'connection_init' }));
    await once(socket, 'message');
    const query = `{ __typename ${' '.repeat(loadConfig({}).limits.requestBytes)} }`;
    socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query } }));
    const [code] = await once(socket, 'close');
    expect(code).toBe(1009);
  });

  it('counts a WebSocket as a connection of its client (MAX_CONNECTIONS_PER_CLIENT)', async () => {
    const one = await serve(env.gateway, { maxConnectionsPerClient: 1 });
    const socket = new WebSocket(one.ws, PROTOCOL);
    await once(socket, 'open');
    const refused = await fetch(one.http, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ __typename }' }),
    });
    expect(refused.status).toBe(429);
    socket.close();
    await once(socket, 'close');
    await until(
      async () =>
        (
          await fetch(one.http, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ query: '{ __typename }' }),
          })
        ).status === 200,
      { what: "the client's connection given back once its WebSocket closed" },
    );
  });

  it("refuses a WebSocket opened beyond its client's connections (429), on a socket or behind a proxy", async () => {
    const one = await serve(env.gateway, { maxConnectionsPerClient: 1 });
    const held = new WebSocket(one.ws, PROTOCOL);
    await once(held, 'open');
    const beyond = new WebSocket(one.ws, PROTOCOL);
    const [, refused] = await once(beyond, 'unexpected-response');
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('1');
    held.close();
    await once(held, 'close');
    // Behind a proxy every socket is the proxy's: the client the hops name is counted per upgrade.
    const config = loadConfig({ TRUST_PROXY: '1' });
    const proxied = createGatewayServer(env.gateway, {
      ...config,
      server: { ...config.server, maxConnectionsPerClient: 1 },
    });
    await new Promise<void>((resolve) => proxied.listen(0, '127.0.0.1', resolve));
    try {
      const ws = `ws://127.0.0.1:${(proxied.address() as AddressInfo).port}/graphql`;
      const headers = { 'x-forwarded-for': '203.0.113.7' };
      const first = new WebSocket(ws, PROTOCOL, { headers });
      await once(first, 'open');
      const second = new WebSocket(ws, PROTOCOL, { headers });
      const [, response] = await once(second, 'unexpected-response');
      expect(response.statusCode).toBe(429);
      // Another client behind the same proxy is not held back.
      const other = new WebSocket(ws, PROTOCOL, { headers: { 'x-forwarded-for': '203.0.113.8' } });
      await once(other, 'open');
      first.close();
      other.close();
      await Promise.all([once(first, 'close'), once(other, 'close')]);
    } finally {
      proxied.closeAllConnections();
      await new Promise<void>((resolve) => proxied.close(() => resolve()));
    }
  });

  it('writes one request log line per operation, as the other transports do', async () => {
    const lines: Record<string, unknown>[] = [];
    const logger = pino(
      { level: 'info' },
      new Writable({
        write(chunk, _encoding, done) {
          lines.push(JSON.parse(chunk.toString()));
          done();
        },
      }),
    );
    const logged = env.coldGateway({ logger });
    const c = client({ url: (await serve(logged)).ws });
    await execute(c, { query: 'query Named { __typename }' });
    await execute(c, { query: '{ nope }' });
    const requests = () => lines.filter((l) => l.msg === 'graphql request');
    await until(() => requests().length === 2, { what: 'two request lines' });
    expect(requests()[0]).toMatchObject({ operation: 'Named', outcome: 'ok', status: 200 });
    expect(requests()[1]).toMatchObject({ outcome: 'invalid', errorCodes: ['BAD_USER_INPUT'] });
    expect(requests()[0]?.requestId).not.toBe(requests()[1]?.requestId);
  });

  it('closes every socket with 1001 Going Away when the gateway drains', async () => {
    const draining = env.coldGateway();
    const served = await serve(draining);
    const socket = new WebSocket(served.ws, PROTOCOL);
    await once(socket, 'open');
    socket.send(JSON.stringify({ type: 'connection_init' }));
    await once(socket, 'message');
    socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: BLOCKS } }));
    await until(async () => (await metric(draining, 'graphql_subscriptions_active')) === 1, {
      what: 'the subscription counted active',
    });
    void draining.drain();
    const [code, reason] = await once(socket, 'close');
    expect(code).toBe(1001);
    expect(String(reason)).toMatch(/shutting down/i);
    await until(async () => (await metric(draining, 'graphql_subscriptions_active')) === 0, {
      what: 'no subscription left active after the drain',
    });
  });

  it('at SIGTERM, the gateway process closes its sockets with 1001 and its drain ends (exit 0)', async () => {
    const { scan, explorer, stake } = env.devnet.urls;
    const started = startServerProcess({
      SCAN_URL: scan,
      EXPLORER_URL: explorer,
      STAKE_URL: stake,
      SHUTDOWN_DELAY_MS: '0',
    });
    try {
      await started.listening;
      const socket = new WebSocket(started.url.replace(/^http/, 'ws'), PROTOCOL);
      await once(socket, 'open');
      socket.send(JSON.stringify({ type: 'connection_init' }));
      await once(socket, 'message');
      socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: BLOCKS } }));
      const exited = once(started.child, 'exit');
      const closed = once(socket, 'close');
      // The server has read the subscribe message once it answers the ping sent after it.
      socket.send(JSON.stringify({ type: 'ping' }));
      await once(socket, 'message');
      started.child.kill('SIGTERM');
      const [code] = await closed;
      expect(code).toBe(1001);
      expect((await exited)[0]).toBe(0);
    } finally {
      if (started.child.exitCode === null) started.child.kill('SIGKILL');
    }
  });
});
