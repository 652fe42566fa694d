import type { AddressInfo } from 'node:net';
import { type Client, createClient, type SubscribePayload } from 'graphql-ws';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { loadConfig } from '../../src/config.js';
import type { Gateway } from '../../src/gateway.js';
import { createGatewayServer } from '../../src/http/node-server.js';
import { liveTestSettings, parseAnswer, useGatewayOnDevnet } from '../gateway/helpers.js';
import { until } from '../support/until.js';

/**
 * One WebSocket multiplexes what a client would otherwise send over many connections: its
 * queries and mutations in flight are bounded per socket (MAX_OPERATIONS_PER_SOCKET), as its
 * subscriptions are by MAX_SUBSCRIPTIONS_PER_CLIENT. The graphql-ws client on a real socket sends
 * more than the bound while the upstream holds the first ones: the extra one is refused on its own
 * (RATE_LIMITED), the socket and the others go on.
 */

const env = useGatewayOnDevnet({ gateway: { live: liveTestSettings() } });

const closers: (() => Promise<void>)[] = [];
const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.dispose()));
});
afterAll(async () => {
  await Promise.all(closers.map((close) => close()));
});

/**
 * A gateway bounded to `operations` in flight per socket, configured by `vars` over the defaults,
 * served as main.ts serves it; its ws:// URL.
 */
async function served(
  operations: number,
  vars: Record<string, string> = {},
): Promise<{ gateway: Gateway; url: string }> {
  const base = loadConfig(vars);
  const gateway = env.coldGateway({ limits: { ...base.limits, operationsPerSocket: operations } });
  const server = createGatewayServer(gateway, base);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { gateway, url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}/graphql` };
}

/** A graphql-ws client; `from`: the loopback address its socket comes from (another client). */
function client(url: string, from = '127.0.0.1'): Client {
  class From extends WebSocket {
    constructor(address: string, protocols?: string | string[]) {
      super(address, protocols, { localAddress: from });
    }
  }
  const made = createClient({ url, webSocketImpl: From, retryAttempts: 0, lazy: false });
  clients.push(made);
  return made;
}

interface Outcome {
  results: any[];
  errors?: any[];
}

/** One operation's results until it completes or errs, and whether it has ended yet. */
function start(c: Client, payload: SubscribePayload) {
  const outcome: Outcome & { ended: boolean } = { results: [], ended: false };
  const done = new Promise<Outcome>((resolve) => {
    c.subscribe(payload, {
      next: (result) => outcome.results.push(parseAnswer(JSON.stringify(result))),
      error: (errors) => {
        outcome.errors = errors as any[];
        outcome.ended = true;
        resolve(outcome);
      },
      complete: () => {
        outcome.ended = true;
        resolve(outcome);
      },
    });
  });
  return { outcome, done };
}

const blockQuery = (height: number) => ({ query: `{ block(height: ${height}) { height } }` });
/** The search service's lookups of these queries' heights (1 to 5), whatever else polls it. */
const scanCalls = () =>
  env.devnet.requests.filter(
    (r) => r.service === 'scan' && /^[1-5]$/.test(new URLSearchParams(r.query).get('q') ?? ''),
  ).length;

describe('operations in flight on one WebSocket', () => {
  it('refuses the one past MAX_OPERATIONS_PER_SOCKET with RATE_LIMITED, on that operation only', async () => {
    const { gateway, url } = await served(3);
    const c = client(url);
    // A subscription is not one of them: it counts against MAX_SUBSCRIPTIONS_PER_CLIENT.
    const stream = start(c, { query: 'subscription { validatorStatisticsUpdated { totalValidators } }' });
    await until(
      async () =>
        (await gateway.metrics.registry.getSingleMetric('graphql_subscriptions_active')?.get())?.values[0]
          ?.value === 1,
      { what: 'the subscription open' },
    );
    const release = env.devnet.hold('scan');
    const before = scanCalls();
    const held = [1, 2, 3].map((height) => start(c, blockQuery(height)));
    await until(() => scanCalls() === before + 3, { what: 'three queries waiting on the search service' });
    const over = await start(c, blockQuery(4)).done;
    expect(over.results).toEqual([]);
    expect(over.errors?.map((e) => e.extensions.code)).toEqual(['RATE_LIMITED']);
    expect(over.errors?.[0].message).toBe(
      'Too many operations in flight on this WebSocket: at most 3 at once; wait for an answer before sending more.',
    );
    // Nothing of the refused one reached an upstream, and the three held are still under way.
    expect(scanCalls()).toBe(before + 3);
    expect(held.map((h) => h.outcome.ended)).toEqual([false, false, false]);
    release();
    const answered = await Promise.all(held.map((h) => h.done));
    expect(answered.map((a) => a.results.map((r) => r.data.block.height))).toEqual([[1], [2], [3]]);
    // The socket stays open, and a place is free again.
    const after = await start(c, blockQuery(5)).done;
    expect(after.results).toEqual([{ data: { block: { height: 5 } } }]);
    expect(stream.outcome.ended).toBe(false);
  });
});

describe("operations' bytes on WebSockets (MAX_INFLIGHT_BODY_BYTES_PER_CLIENT)", () => {
  it("count against the client's share of the body budget until answered: the one past it is refused, another client is not", async () => {
    // A cap of 10,000 bytes: each client's share is 40,000, four operations of about 9,000.
    const { gateway, url } = await served(100, { MAX_REQUEST_BYTES: '10000' });
    const bodyBytes = async () =>
      (await gateway.metrics.registry.getSingleMetric('http_request_body_bytes_in_flight')?.get())?.values[0]
        ?.value ?? 0;
    const padded = (height: number) => ({
      query: `{ block(height: ${height}) { height } }`.padEnd(9_000, ' '),
    });
    // What each operation's message weighs on the wire (graphql-ws's `subscribe` message).
    const weight = (id: string, height: number) =>
      Buffer.byteLength(JSON.stringify({ id, type: 'subscribe', payload: padded(height) }));
    const c = client(url);
    const release = env.devnet.hold('scan');
    const before = scanCalls();
    const held = [1, 2, 3, 4].map((height) => start(c, padded(height)));
    await until(() => scanCalls() === before + 4, { what: 'four operations waiting on the search service' });
    // graphql-ws's client names its operations by UUID: each message weighs the same.
    const each = weight('00000000-0000-4000-8000-000000000000', 1);
    expect(await bodyBytes()).toBe(4 * each);
    const over = await start(c, padded(5)).done;
    expect(over.results).toEqual([]);
    expect(over.errors?.map((e) => e.extensions)).toEqual([{ code: 'RATE_LIMITED', retryAfterMs: 1_000 }]);
    expect(over.errors?.[0].message).toBe(
      'This client is sending too many request bodies at once: at most 40000 bytes.',
    );
    // Nothing of the refused one reached an upstream; another client (another address) holds a
    // share of its own: its operation is admitted, and waits on the search service too.
    expect(scanCalls()).toBe(before + 4);
    const other = start(client(url, '127.0.0.2'), padded(5));
    await until(() => scanCalls() === before + 5, { what: "the other client's operation under way" });
    expect(held.map((h) => h.outcome.ended)).toEqual([false, false, false, false]);
    release();
    const answered = await Promise.all([...held, other].map((h) => h.done));
    expect(answered.map((a) => a.results.map((r) => r.data.block.height))).toEqual([[1], [2], [3], [4], [5]]);
    expect(await bodyBytes()).toBe(0);
    const refused = await gateway.metrics.registry.getSingleMetric('http_requests_refused_total')?.get();
    expect(refused?.values.find((v) => v.labels.reason === 'client_body_budget')?.value).toBe(1);
  });
});
