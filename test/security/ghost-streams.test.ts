import { connect, type Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { type Devnet, startDevnet } from '../../src/devnet/index.js';
import type { Gateway } from '../../src/gateway.js';
import {
  devnetOptions,
  registering,
  type ServedGateway,
  serveGateway,
  testSettings,
} from '../gateway/helpers.js';
import { hasRedis, startRedis, type TestRedis } from '../support/redis.js';
import { subscribe } from '../support/sse.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { until } from '../support/until.js';

/**
 * Ghost subscribers (issue 35): a client that sends a subscription and hangs up while its
 * subscribe-time work is still running (the token check against the explorer, the rate-limit call
 * to Redis) must leave nothing behind. Before, the member stayed in its group, its
 * MAX_SUBSCRIPTIONS_PER_CLIENT place stayed taken (the client's next subscription got 429 for
 * good) and its source kept being polled for nobody; a stream Yoga wrote gave its place back only
 * at its next ping, 12 s later. However a stream ends, `graphql_subscriptions_active` and
 * `graphql_subscription_groups` come back to the streams still open (here: none) within a second,
 * and the client's next subscription is served.
 */

const FAILED = 'subscription { failedTransactionAdded { hash } }';
const BLOCKS = 'subscription { blockAdded { height } }';
const PER_CLIENT = 20;
const SSE = { accept: 'text/event-stream' };
const TOKENS = Array.from({ length: PER_CLIENT }, (_, i) => `ghost-token-${i}`);

/** Sends one HTTP request on a socket of its own and returns the socket, still open. */
function send(url: string, body: unknown, headers: Record<string, string>): Socket {
  const { hostname, port, pathname } = new URL(url);
  const payload = JSON.stringify(body);
  const socket = connect(Number(port), hostname);
  socket.on('error', () => {});
  const head = Object.entries({
    host: `${hostname}:${port}`,
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(payload)),
    ...headers,
  })
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  socket.write(`POST ${pathname} HTTP/1.1\r\n${head}\r\n${payload}`);
  return socket;
}

/** Sends a GET (as an EventSource does) on a socket of its own and returns the socket, still open. */
function get(url: string, search: Record<string, string>, headers: Record<string, string>): Socket {
  const { hostname, port, pathname } = new URL(url);
  const socket = connect(Number(port), hostname);
  socket.on('error', () => {});
  const head = Object.entries({ host: `${hostname}:${port}`, ...headers })
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  socket.write(`GET ${pathname}?${new URLSearchParams(search)} HTTP/1.1\r\n${head}\r\n`);
  return socket;
}

/** A gauge's one value. */
const gauge = async (metric: { get(): Promise<{ values: { value: number }[] }> }) =>
  (await metric.get()).values[0]?.value ?? 0;

describe('subscribers that hang up while they subscribe', () => {
  let devnet: Devnet;
  let redis: TestRedis | null = null;
  let proxy: TcpProxy | null = null;
  let served: ServedGateway | null = null;

  beforeAll(async () => {
    devnet = await startDevnet(devnetOptions({ record: true, extraTokens: TOKENS }));
  });
  afterAll(async () => {
    await devnet?.close();
  });
  beforeEach(() => devnet.resetRecords());
  afterEach(async () => {
    await served?.close();
    served = null;
    await proxy?.close();
    proxy = null;
    await redis?.close();
    redis = null;
  });

  /** A gateway on the devnet (and, given, Redis for its rate limit), over a real socket. */
  async function start(redisUrl: string | null = null) {
    served = await serveGateway(
      {
        live: { ...loadConfig({}).live, pollMs: 50, leaseMs: 1_000, maxSubscriptionsPerClient: PER_CLIENT },
        scale: {
          ...testSettings().scale,
          redisUrl,
          // A rate-limit call to a held Redis waits for it, rather than falling back at once.
          redisTimeoutMs: 10_000,
          rateLimitPoints: redisUrl ? 1_000_000 : 0,
        },
      },
      devnet.urls,
    );
    return served;
  }

  /** Nothing left of the streams: no place taken, no group, no source polled. */
  async function nothingLeft(gateway: Gateway) {
    await until(
      async () =>
        (await gauge(gateway.metrics.subscriptions)) === 0 &&
        (await gauge(gateway.metrics.subscriptionGroups)) === 0,
      { within: 1_000, what: 'every subscription place and group given back' },
    );
    await until(() => gateway.live.hub.sources().length === 0, {
      within: 1_000,
      what: 'every source given up',
    });
  }

  /** The client's next subscription is served: 200, a stream. */
  async function nextServed(url: string, gateway: Gateway) {
    const next = await subscribe(url, BLOCKS);
    // A refusal for capacity is a 200 too (a stream an EventSource survives): the place taken tells.
    expect(next.status).toBe(200);
    expect(await gauge(gateway.metrics.subscriptions)).toBe(1);
    next.close();
  }

  it.each([
    { writer: 'the adapter', body: { query: FAILED } },
    // A request registering its document (APQ) is answered by Yoga's own SSE writer, not the adapter's.
    { writer: 'Yoga', body: { query: FAILED, extensions: registering(FAILED) } },
  ])(
    'leaves nothing of 20 streams ($writer writes) whose clients left during the explorer’s token check',
    async ({ body }) => {
      const { gateway, url } = await start();
      const release = devnet.hold('explorer');
      const sockets = TOKENS.map((token) => send(url, body, { ...SSE, authorization: `Bearer ${token}` }));
      // Each subscriber's token is being checked: the explorer holds 20 checks, one per token.
      await until(() => devnet.requests.filter((r) => r.service === 'explorer').length === PER_CLIENT, {
        what: `the explorer holding ${PER_CLIENT} token checks`,
      });
      for (const socket of sockets) socket.destroy();
      await until(async () => (await gauge(gateway.metrics.inFlight)) === 0, {
        what: 'no request counted in flight once the clients left',
      });
      release();
      await nothingLeft(gateway);
      await nextServed(url, gateway);
    },
  );

  it.each([
    {
      transport: 'a POST Yoga reads',
      open: (url: string) => send(url, { query: BLOCKS, extensions: registering(BLOCKS) }, SSE),
    },
    {
      transport: 'a GET Yoga serves on node:http',
      open: (url: string) =>
        get(url, { query: BLOCKS, extensions: JSON.stringify(registering(BLOCKS)) }, SSE),
    },
  ])(
    'gives a stream Yoga writes ($transport) its place back once its client leaves, not at the next ping',
    async ({ open }) => {
      const { gateway, url } = await start();
      const socket = open(url);
      await new Promise<void>((resolve) => socket.once('data', () => resolve()));
      expect(await gauge(gateway.metrics.subscriptions)).toBe(1);
      socket.destroy();
      await nothingLeft(gateway);
    },
  );

  it.runIf(hasRedis)(
    'leaves nothing of 16 streams whose clients left during the rate-limit call to Redis',
    async () => {
      redis = await startRedis();
      proxy = await startTcpProxy(redis.port);
      const { gateway, url } = await start(`redis://127.0.0.1:${proxy.port}`);
      // Redis is connected and answering before the hold: the rate limit's counters live there.
      await until(() => gateway.rateLimit?.store === 'redis', { what: "the rate limit's counters in Redis" });
      await nextServed(url, gateway);
      await nothingLeft(gateway);
      const held = proxy.hold();
      const sockets = Array.from({ length: 16 }, () =>
        send(url, { query: BLOCKS }, { accept: 'text/event-stream' }),
      );
      // Each subscriber's charge is on its way to Redis: one rate-limit key per charge.
      await until(() => held.sent().split('rate-limit:v1:').length - 1 === 16, {
        what: "the 16 subscribers' charges held on their way to Redis",
      });
      for (const socket of sockets) socket.destroy();
      await until(async () => (await gauge(gateway.metrics.inFlight)) === 0, {
        what: 'no request counted in flight once the clients left',
      });
      held.release();
      await nothingLeft(gateway);
      await nextServed(url, gateway);
    },
  );
});
