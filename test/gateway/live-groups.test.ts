import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, request, type Server } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { until } from '../support/until.js';
import { liveTestSettings, useGatewayOnDevnet } from './helpers.js';

/**
 * Subscribers in groups (issue 29), over real sockets against the devnet in every dialect: alike
 * subscribers share one execution per event and get the same bytes; a different selection,
 * variables or token is a group of its own; a stalled member is cut alone; and the stream the
 * node:http adapter writes is byte for byte what Yoga writes.
 */

const live = liveTestSettings();
const env = useGatewayOnDevnet({ gateway: { live }, devnet: { extraTokens: ['second-caller'] } });
env.serveOverHttp();

/** Yoga's own node adapter over the same gateway: the reference for the parity test. */
let yogaServer: Server;
let yogaUrl: string;
beforeAll(async () => {
  yogaServer = createServer(env.gateway.yoga as never);
  await new Promise<void>((resolve) => yogaServer.listen(0, '127.0.0.1', resolve));
  yogaUrl = `http://127.0.0.1:${(yogaServer.address() as AddressInfo).port}/graphql`;
});
afterAll(async () => {
  yogaServer.closeAllConnections();
  await new Promise<void>((resolve) => yogaServer.close(() => resolve()));
});
afterEach(async () => {
  await until(() => env.gateway.live.hub.sources().length === 0, {
    what: "every live source given up after the test's streams closed",
  });
});

const metric = async (name: string, labels: Record<string, string> = {}) => {
  const found = (await env.gateway.metrics.registry.getMetricsAsJSON()).find((m) => m.name === name);
  return (found?.values ?? [])
    .filter((v) =>
      Object.entries(labels).every(([k, value]) => (v.labels as Record<string, unknown>)[k] === value),
    )
    .reduce((sum, v) => sum + Number(v.value), 0);
};

interface RawStream {
  status: number;
  headers: IncomingHttpHeaders;
  /**
   * Everything received so far, as sent but for the `retry:` the adapter's stream starts with: each
   * stream draws its own (eventsource-refusal.test.ts), and Yoga's writer sends none.
   */
  text(): string;
  /** The `event: next` frames received so far. */
  frames(): string[];
  closed: Promise<void>;
  pause(): void;
  close(): void;
}

/** A subscriber reading the raw bytes of its stream on a connection of its own. */
function open(url: string, query: string, headers: Record<string, string> = {}): Promise<RawStream> {
  return new Promise((resolve, reject) => {
    let body = '';
    const req = request(url, {
      method: 'POST',
      agent: false,
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...headers },
    });
    req.on('response', (res) => {
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      const closed = new Promise<void>((done) => res.once('close', () => done()));
      resolve({
        status: res.statusCode as number,
        headers: res.headers,
        text: () => body.replace(/^:\n\nretry: \d+\n\n/, ':\n\n'),
        frames: () => body.split('\n\n').filter((f) => f.includes('event: next\n')),
        closed,
        pause: () => res.pause(),
        close: () => req.destroy(),
      });
    });
    req.on('error', reject);
    req.end(JSON.stringify({ query }));
  });
}

const BLOCKS = 'subscription Blocks { blockAdded { height hash proposer proposerValidator { moniker } } }';
const FAILED = 'subscription Failed { failedTransactionAdded { hash blockHeight error } }';
const afterPoll = (label: string) => env.gateway.live.hub.afterPoll(label);

describe('a group of alike subscribers', () => {
  it('executes each event once for all its members, and writes them the same bytes', async () => {
    const executions = await metric('live_executions_total', { source: 'blocks' });
    const streams = await Promise.all(Array.from({ length: 5 }, () => open(env.url, BLOCKS)));
    expect(streams.map((s) => s.status)).toEqual([200, 200, 200, 200, 200]);
    expect(await metric('graphql_subscription_groups')).toBe(1);
    await afterPoll('blocks');
    const { heights } = env.devnet.advance(3);
    await until(() => streams.every((s) => s.frames().length === 3), {
      what: 'the three blocks on each of the five streams',
    });
    const [first, ...others] = streams.map((s) => s.text());
    for (const other of others) expect(other).toBe(first);
    expect(
      streams[0]?.frames().map((f) => JSON.parse(f.slice(f.indexOf('data: ') + 6)).data.blockAdded.height),
    ).toEqual(heights);
    expect((await metric('live_executions_total', { source: 'blocks' })) - executions).toBe(3);
    for (const s of streams) s.close();
    await until(async () => (await metric('graphql_subscription_groups')) === 0, {
      what: 'the group gone once its members closed',
    });
  });

  it('gives a different selection, or other variables, a group of its own', async () => {
    const a = await open(env.url, BLOCKS);
    const b = await open(env.url, 'subscription Blocks { blockAdded { height } }');
    const c = await open(
      env.url,
      'subscription V($a: String) { validatorUpdated(operatorAddress: $a) { moniker } }',
    );
    expect(await metric('graphql_subscription_groups')).toBe(3);
    await afterPoll('blocks');
    const [height] = env.devnet.advance(1).heights;
    await until(() => a.frames().length === 1 && b.frames().length === 1, {
      what: 'the block on both selections',
    });
    expect(b.frames()[0]).toBe(
      `id: ${height}\nevent: next\ndata: {"data":{"blockAdded":{"height":${height}}}}`,
    );
    expect(a.frames()[0]).not.toBe(b.frames()[0]);
    for (const s of [a, b, c]) s.close();
  });

  it('never puts two callers with different tokens in one group, and each gets its own events', async () => {
    const mine = await open(env.url, FAILED, { authorization: `Bearer ${env.devnet.token}` });
    const alsoMine = await open(env.url, FAILED, { authorization: `Bearer ${env.devnet.token}` });
    const theirs = await open(env.url, FAILED, { authorization: 'Bearer second-caller' });
    expect([mine.status, alsoMine.status, theirs.status]).toEqual([200, 200, 200]);
    expect(await metric('graphql_subscription_groups')).toBe(2);
    await until(() => env.gateway.live.hub.sources().filter((s) => s.startsWith('failed:')).length === 2, {
      what: 'a failed-transactions source for each token',
    });
    await afterPoll('failed');
    await afterPoll('failed');
    const added: string[] = [];
    while (added.length < 1) added.push(...env.devnet.advance(1).failedTxs);
    await until(() => [mine, alsoMine, theirs].every((s) => s.frames().length === added.length), {
      what: 'the new failure on each of the three streams',
    });
    expect(mine.text()).toBe(alsoMine.text());
    // Each token's events were read with that token: two explorer credentials, two polls.
    const tokens = new Set(
      env.devnet.requests.filter((r) => r.service === 'explorer').map((r) => r.headers.authorization),
    );
    expect(tokens).toEqual(new Set([`Bearer ${env.devnet.token}`, 'Bearer second-caller']));
    for (const s of [mine, alsoMine, theirs]) s.close();
  });

  it('cuts a member that stops reading without holding up the others of its group', async () => {
    const limits = { ...loadConfig({}).limits, aliases: 100, tokens: 10_000, complexity: 1_000_000 };
    const gateway = env.coldGateway({ live: { ...live, backlog: 50 }, limits });
    const { url, close } = await env.listenOn(gateway);
    const cutCount = async () =>
      (await gateway.metrics.registry.getSingleMetric('live_subscribers_cut_total')?.get())?.values[0]?.value;
    // Fat events (each names its proposer 60 times over) fill a paused reader's socket quickly.
    const fat = `subscription Fat { blockAdded { height ${Array.from({ length: 60 }, (_, i) => `p${i}: proposer`).join(' ')} } }`;
    // The stalled member never reads: its socket's buffers fill, then its backlog of shared frames.
    const body = JSON.stringify({ query: fat });
    const { port } = new URL(url);
    const stalled = connect(Number(port), '127.0.0.1');
    await new Promise((resolve) => stalled.once('connect', resolve));
    stalled.write(
      `POST /graphql HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\naccept: text/event-stream\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    stalled.pause();
    const reading = await open(url, fat);
    await until(async () => (await cutCount()) === 0 && gateway.live.hub.sources().length === 1, {
      what: "the blocks' source started, no member cut yet",
    });
    await gateway.live.hub.afterPoll('blocks');
    // The chain moves 50 blocks a poll until the stalled member is cut.
    let advanced = 0;
    await until(
      async () => {
        if ((await cutCount()) !== 0) return true;
        env.devnet.advance(50);
        advanced += 50;
        await gateway.live.hub.afterPoll('blocks');
        return false;
      },
      { what: 'the stalled member cut' },
    );
    // The reader kept up with every block while its group's other member was cut.
    await until(() => reading.frames().length === advanced, {
      what: 'every block on the reading member',
    });
    const heights = reading.frames().map((f) => Number(/"height":(\d+)/.exec(f)?.[1]));
    expect(heights).toEqual([...heights].sort((x, y) => x - y));
    expect(new Set(heights).size).toBe(advanced);
    const cuts = (await gateway.metrics.registry.getSingleMetric('live_subscribers_cut_total')?.get())
      ?.values[0]?.value;
    expect(cuts).toBe(1);
    reading.close();
    await close();
  });
});

describe('a subscriber that reconnects', () => {
  it('gets the blocks it missed after its Last-Event-ID, then the live ones, each once', async () => {
    const first = await open(env.url, BLOCKS);
    await afterPoll('blocks');
    const [seen] = env.devnet.advance(1).heights as [number];
    await until(() => first.frames().length === 1, { what: 'the first block on the first stream' });
    expect(first.frames()[0]?.startsWith(`id: ${seen}\n`)).toBe(true);
    first.close();
    await until(() => env.gateway.live.hub.sources().length === 0, {
      what: "the blocks' source given up once the client left",
    });
    // Blocks come while the client is away.
    const missed = env.devnet.advance(3).heights;
    const again = await open(env.url, BLOCKS, { 'last-event-id': String(seen) });
    await until(() => again.frames().length === 3, { what: 'the three missed blocks replayed' });
    await afterPoll('blocks');
    const fresh = env.devnet.advance(1).heights;
    await until(() => again.frames().length === 4, { what: 'the live block after the replay' });
    const ids = again.frames().map((f) => Number(/^id: (\d+)/.exec(f)?.[1]));
    expect(ids).toEqual([...missed, ...fresh]);
    again.close();
  });

  it('gives a later subscriber resuming after the same block the blocks it missed too', async () => {
    const first = await open(env.url, BLOCKS);
    await afterPoll('blocks');
    const [seen] = env.devnet.advance(1).heights as [number];
    await until(() => first.frames().length === 1, { what: 'the first block on the first stream' });
    first.close();
    await until(() => env.gateway.live.hub.sources().length === 0, {
      what: "the blocks' source given up once the client left",
    });
    const missed = env.devnet.advance(2).heights;
    const early = await open(env.url, BLOCKS, { 'last-event-id': String(seen) });
    await until(() => early.frames().length === 2, {
      what: 'the two missed blocks replayed to the earlier client',
    });
    // Another client that lost the same block comes back after the first one's replay was sent.
    const late = await open(env.url, BLOCKS, { 'last-event-id': String(seen) });
    await until(() => late.frames().length === 2, {
      what: 'the two missed blocks replayed to the later client',
    });
    const ids = (s: RawStream) => s.frames().map((f) => Number(/^id: (\d+)/.exec(f)?.[1]));
    expect(ids(early)).toEqual(missed);
    expect(ids(late)).toEqual(missed);
    early.close();
    late.close();
  });

  it('ignores a Last-Event-ID it did not give out', async () => {
    const stream = await open(env.url, BLOCKS, { 'last-event-id': 'x; drop table' });
    await afterPoll('blocks');
    const [height] = env.devnet.advance(1).heights;
    await until(() => stream.frames().length === 1, {
      what: 'the next block, as if no Last-Event-ID was sent',
    });
    expect(stream.frames()[0]?.startsWith(`id: ${height}\n`)).toBe(true);
    stream.close();
  });
});

describe('what the adapter hands to Yoga', () => {
  it('answers a query asked for as an event stream with an event stream', async () => {
    const stream = await open(env.url, '{ validatorStatistics { totalValidators } }');
    await stream.closed;
    expect(stream.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(stream.frames()).toHaveLength(1);
    expect(stream.text()).toContain('event: complete');
  });

  it('survives a GET whose path cannot be read as a URL, and goes on answering', async () => {
    const { port } = new URL(env.url);
    const socket = connect(Number(port), '127.0.0.1');
    await once(socket, 'connect');
    socket.write(
      'GET //%zz?query=subscription HTTP/1.1\r\nhost: x\r\naccept: text/event-stream\r\nconnection: close\r\n\r\n',
    );
    let answer = '';
    socket.on('data', (chunk: Buffer) => {
      answer += chunk.toString();
    });
    await once(socket, 'close');
    // Not the GraphQL endpoint's path: Yoga's 404, and the connection closed as asked.
    expect(answer).toMatch(/^HTTP\/1\.1 404 /);
    const after = await fetch(env.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ __typename }' }),
    });
    expect(await after.json()).toEqual({ data: { __typename: 'Query' } });
  });
});

describe('the node:http adapter writes what Yoga writes', () => {
  const SAME = (headers: IncomingHttpHeaders) => {
    const { date: _date, 'x-request-id': id, ...rest } = headers;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    return rest;
  };

  it('streams the same headers and frames as Yoga’s own adapter', async () => {
    const origin = { origin: 'http://localhost:3000' };
    const ours = await open(env.url, BLOCKS, origin);
    const yogas = await open(yogaUrl, BLOCKS, origin);
    expect(ours.status).toBe(yogas.status);
    expect(SAME(ours.headers)).toEqual(SAME(yogas.headers));
    await afterPoll('blocks');
    const { heights } = env.devnet.advance(2);
    await until(() => ours.frames().length === 2 && yogas.frames().length === 2, {
      what: "the two blocks on our adapter's stream and on Yoga's",
    });
    // The same bytes, but for the `id:` line the adapter writes before each block (its height, for
    // EventSource's Last-Event-ID), which Yoga's writer has no notion of.
    expect(ours.frames().map((f) => f.split('\n')[0])).toEqual(heights.map((h) => `id: ${h}`));
    expect(ours.text().replace(/^id: \d+\n/gm, '')).toBe(yogas.text());
    ours.close();
    yogas.close();
  });

  it('answers a refusal with the same status, headers and bytes', async () => {
    for (const query of [FAILED, 'subscription { blockAdded { nope } }', 'subscription {']) {
      const ours = await open(env.url, query);
      const yogas = await open(yogaUrl, query);
      await Promise.all([ours.closed, yogas.closed]);
      expect(ours.status).toBe(yogas.status);
      expect(SAME(ours.headers)).toEqual(SAME(yogas.headers));
      expect(ours.text()).toBe(yogas.text());
    }
  });
});
