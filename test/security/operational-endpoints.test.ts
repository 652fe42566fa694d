import { once } from 'node:events';
import { request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import { hostname } from 'node:os';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { type Devnet, startDevnet } from '../../src/devnet/index.js';
import { createGateway, type Gateway } from '../../src/gateway.js';
import { METRICS_CONNECTIONS_PER_CLIENT } from '../../src/http/node-server.js';
import { devnetOptions, listen, testSettings } from '../gateway/helpers.js';
import { type FaultUpstream, startFaultUpstream } from '../support/fault-upstream.js';
import { hasRedis, startRedis, type TestRedis } from '../support/redis.js';
import { type Started, startServerProcess } from '../support/server-process.js';
import { subscribe } from '../support/sse.js';
import { until } from '../support/until.js';

/**
 * Operational endpoints are not amplifiers (contract.md §7): however many `/readyz` arrive at
 * once, a process makes one set of upstream checks at a time and reuses its answer for one second
 * (a probe never waits for it, contract.md §8); and what
 * `/readyz` and `/healthz` say names no host and no process. (`/metrics` under WORKERS, which
 * coalesces every worker's collection the same way, is attacked in test/scale/cluster.test.ts.) The
 * metrics port cannot be blinded: one address holds at most a few of its connections, each only
 * briefly without a request, so a scrape from another address always gets through.
 */

let devnet: Devnet;
/** Staking behind a fault upstream, which can hold the readiness check's request. */
let stake: FaultUpstream;
const gateways: Gateway[] = [];
const closers: Array<() => Promise<void>> = [];

beforeAll(async () => {
  devnet = await startDevnet(devnetOptions({ record: true }));
  stake = await startFaultUpstream(devnet.urls.stake);
});
afterAll(async () => {
  await stake?.close();
  await devnet?.close();
});
beforeEach(() => {
  devnet.resetRecords();
  stake.requests.length = 0;
});
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
  await Promise.all(gateways.splice(0).map((gateway) => gateway.close()));
});

/** A gateway with `overrides`, served over a real socket; resolves to its base URL. */
async function serve(overrides: Parameters<typeof testSettings>[0] = {}) {
  const gateway = createGateway({
    ...testSettings(overrides),
    upstreamUrls: { ...devnet.urls, stake: stake.url },
  });
  gateways.push(gateway);
  const server = await listen(gateway);
  closers.push(server.close);
  return { gateway, base: new URL('/', server.url) };
}

/** What reached each upstream but live polls (their request ids start `live-`), as `service path`. */
const reached = () =>
  devnet.requests
    .filter((r) => !String(r.headers['x-request-id']).startsWith('live-'))
    .map((r) => `${r.service} ${r.path}`)
    .sort();
const ONE_CHECK = [
  'explorer /api/v1/transaction/failed-24h',
  'scan /api/v1/search',
  'stake /stake/validators',
];

/** HTTP requests the gateway is answering now (its own gauge, counted as each one arrives). */
const inFlight = async (gateway: Gateway) => (await gateway.metrics.inFlight.get()).values[0]?.value ?? 0;

/** Twenty requests at once, each answer read. */
const burst = (url: URL) =>
  Promise.all(
    Array.from({ length: 20 }, async () => {
      const res = await fetch(url);
      return { status: res.status, headers: [...res.headers].flat(), text: await res.text() };
    }),
  );

/** `word` standing alone in a text (not inside a longer run of letters and digits). */
const alone = (word: string) =>
  new RegExp(`(^|[^A-Za-z0-9])${word.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}($|[^A-Za-z0-9])`);

/** Fails when `text` names this machine or this process (every gateway of the test runs in it). */
function expectAnonymous(text: string) {
  expect(text).not.toMatch(alone(hostname()));
  expect(text).not.toMatch(alone(String(process.pid)));
}

/** `/readyz`'s body, once it says what `upstream` was found to be. */
async function readyOnce(base: URL, upstream: string, state: boolean) {
  let body: any;
  await until(
    async () => {
      body = await (await fetch(new URL('/readyz', base))).json();
      return body.upstreams[upstream] === state;
    },
    { what: `a /readyz check that found ${upstream} ${state ? 'up' : 'down'}` },
  );
  return body;
}

describe('/readyz', () => {
  it('answers twenty concurrent requests at once with one check of each upstream under way, and the next twenty with none', async () => {
    const { gateway, base } = await serve();
    stake.set('/stake/validators', 'held');
    try {
      const arrived = stake.nextRequest();
      const first = await burst(new URL('/readyz', base));
      expect((await arrived).url).toMatch(/^\/stake\/validators\?/);
      // A probe never waits for the upstreams: ready, with nothing known of them yet.
      for (const answer of first) {
        expect(answer.status).toBe(200);
        expect(JSON.parse(answer.text)).toEqual({
          status: 'ready',
          upstreams: { scan: null, explorer: null, stake: null },
        });
        expectAnonymous(answer.text);
        expectAnonymous(answer.headers.join('\n'));
      }
      expect(await inFlight(gateway)).toBe(0);
      stake.release();
      expect(await readyOnce(base, 'stake', true)).toEqual({
        status: 'ready',
        upstreams: { scan: true, explorer: true, stake: true },
      });
      expect(stake.requests).toHaveLength(1);
      expect(reached()).toEqual(ONE_CHECK);

      const second = await burst(new URL('/readyz', base));
      expect(second.map((answer) => answer.status)).toEqual(Array(20).fill(200));
      expect(new Set(second.map((answer) => answer.text)).size).toBe(1);
      expect(stake.requests).toHaveLength(1);
      expect(reached()).toEqual(ONE_CHECK);
    } finally {
      stake.set('/stake/validators', 'proxy');
      stake.release();
    }
  });

  it('stays ready while an upstream fails, saying so, with one check of it for a burst, not one per request', async () => {
    const { base } = await serve();
    stake.set('/stake/validators', 'stacktrace500');
    try {
      await readyOnce(base, 'stake', false);
      for (const answer of await burst(new URL('/readyz', base))) {
        expect(answer.status).toBe(200);
        expect(JSON.parse(answer.text)).toEqual({
          status: 'ready',
          upstreams: { scan: true, explorer: true, stake: false },
        });
      }
      // A failing upstream is the one a flood of checks would hurt most.
      expect(stake.requests).toHaveLength(1);
      expect(reached()).toEqual(ONE_CHECK.filter((line) => !line.startsWith('stake')));
    } finally {
      stake.set('/stake/validators', 'proxy');
    }
  });
});

describe.runIf(hasRedis)('/readyz and /healthz on a deployment sharing Redis', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.close();
  });

  const BLOCKS = 'subscription { blockAdded { height } }';

  it('names the instance polling a source by an opaque id, never its host name or process id', async () => {
    const base = testSettings();
    const settings = {
      scale: { ...base.scale, redisUrl: redis.url },
      live: { ...loadConfig({}).live, pollMs: 50, leaseMs: 60_000 },
    };
    const a = await serve(settings);
    const b = await serve(settings);
    // A takes the blocks lease and polls; B, with a subscriber of its own, finds the lease held.
    const polled = a.gateway.live.hub.afterPoll('blocks');
    const onA = await subscribe(new URL('/graphql', a.base).href, BLOCKS);
    await polled;
    const onB = await subscribe(new URL('/graphql', b.base).href, BLOCKS);
    try {
      await until(() => b.gateway.live.hub.sources().length === 1, { what: "B's blocks source started" });
      devnet.resetRecords();
      // B's first twenty answers start one check, which the next twenty read.
      await burst(new URL('/readyz', b.base));
      await readyOnce(b.base, 'stake', true);
      const answers = await burst(new URL('/readyz', b.base));
      const body = JSON.parse(answers[0]?.text ?? '');
      expect(body).toMatchObject({ status: 'ready', redis: 'up', live: { blocks: expect.any(String) } });
      expect(body.live.blocks).not.toBe('this instance');
      for (const answer of answers) {
        expect(answer.text).toBe(answers[0]?.text);
        expectAnonymous(answer.text);
        expectAnonymous(answer.headers.join('\n'));
      }
      const health = await fetch(new URL('/healthz', b.base));
      const healthText = await health.text();
      expect(JSON.parse(healthText)).toEqual({ status: 'ok' });
      expectAnonymous(healthText);
      expectAnonymous([...health.headers].flat().join('\n'));
      // B's forty answers cost one check of each upstream.
      expect(reached()).toEqual(ONE_CHECK);
    } finally {
      onA.close();
      onB.close();
    }
  });
});

describe('METRICS_PORT', () => {
  const sockets: Socket[] = [];
  let started: Started | undefined;
  afterEach(() => {
    for (const socket of sockets.splice(0)) socket.destroy();
    started?.child.kill('SIGKILL');
    started = undefined;
  });

  /** A socket from `from` that sends nothing, and how long after it connected it was closed. */
  async function idle(port: number, from: string) {
    const socket = connect({ port, host: '127.0.0.1', localAddress: from });
    socket.on('error', () => {});
    sockets.push(socket);
    const held = { closedAfterMs: null as number | null };
    let connected = Number.NaN;
    socket.once('close', () => {
      held.closedAfterMs = Date.now() - connected;
    });
    await once(socket, 'connect');
    connected = Date.now();
    return held;
  }

  /** A scrape on a connection of its own from `from`: its status and text, or the error that ended it. */
  const scrape = (url: string, from: string) =>
    new Promise<{ status: number; text: string } | string>((resolve) => {
      const req = httpRequest(url, { localAddress: from, agent: false }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode as number, text }));
      });
      req.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
      req.end();
    });

  // A process to start: more than the default 20 s when the suite runs files side by side.
  it('64 idle sockets from one address: all but four closed at once, those four 2 s later, and a scrape from another address answered', {
    timeout: 60_000,
  }, async () => {
    const gateway = startServerProcess({ METRICS_PORT: '0' });
    started = gateway;
    await gateway.listening;
    const [, metrics = ''] = await gateway.printed(/metrics on (http:\/\/\S+\/metrics)/);
    const port = Number(new URL(metrics).port);
    const flood = await Promise.all(Array.from({ length: 64 }, () => idle(port, '127.0.0.1')));

    const scraped = await scrape(metrics, '127.0.0.2');
    expect(scraped).toEqual({
      status: 200,
      text: expect.stringMatching(/^# TYPE http_requests_in_flight gauge$/m),
    });
    await until(() => flood.every((socket) => socket.closedAfterMs !== null), {
      what: 'every idle socket closed',
      within: 5_000,
    });
    const closedAfter = flood.map((socket) => socket.closedAfterMs as number);
    // The address's cap: the sockets beyond it closed on arrival, never held until a timeout; the
    // four it may hold, having sent no request, 2 s after they opened (node-server.ts).
    expect(METRICS_CONNECTIONS_PER_CLIENT).toBe(4);
    expect(closedAfter.filter((ms) => ms < 1_000)).toHaveLength(60);
    expect(closedAfter.filter((ms) => ms >= 2_000 && ms < 4_000)).toHaveLength(4);
    expect(await scrape(metrics, '127.0.0.1')).toMatchObject({ status: 200 });
  });
});
