import type { AddressInfo } from 'node:net';
import { EventSource } from 'eventsource';
import { createClient as createSseClient } from 'graphql-sse';
import { createClient as createWsClient } from 'graphql-ws';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { loadConfig } from '../../src/config.js';
import { createGatewayServer } from '../../src/http/node-server.js';
import { until } from '../support/until.js';
import { liveTestSettings, parseAnswer, useGatewayOnDevnet } from './helpers.js';

/**
 * MAX_STREAM_AGE_MS (issue 49): each stream is ended at an age drawn in [0.8 × max, max], in the
 * way its client comes back by itself, so that streams spread again over the pods after a rollout.
 * An SSE stream ends as a drain ends it but without `event: complete` (a `retry:` in [1 s, 10 s]):
 * a spec-following EventSource and graphql-sse's client reconnect, the EventSource with its
 * Last-Event-ID (and gets the blocks of the gap). A WebSocket is closed 1001, which graphql-ws's
 * client retries. Apollo's multipart clients do not come back: their streams are not aged.
 */

const AGE = 2_000;
const live = { ...liveTestSettings(), maxStreamAgeMs: AGE };
const env = useGatewayOnDevnet({ gateway: { live } });
env.serveOverHttp();

const BLOCKS = 'subscription { blockAdded { height } }';

const metric = async (name: string, labels: Record<string, string> = {}) => {
  const found = (await env.gateway.metrics.registry.getMetricsAsJSON()).find((m) => m.name === name);
  return (found?.values ?? [])
    .filter((v) => Object.entries(labels).every(([k, value]) => v.labels[k] === value))
    .reduce((sum, v) => sum + Number(v.value), 0);
};
const active = () => metric('graphql_subscriptions_active');
const aged = (transport: string) => metric('graphql_streams_aged_total', { transport });
const afterPoll = () => env.gateway.live.hub.afterPoll('blocks');

afterEach(async () => {
  await until(async () => (await active()) === 0, { what: "every test's streams closed" });
});

describe('an SSE stream at its age', () => {
  it('ends with a retry: in [1 s, 10 s] and no complete event', async () => {
    const opened = Date.now();
    const res = await fetch(env.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ query: BLOCKS }),
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    const lived = Date.now() - opened;
    // The age is drawn in [1.6 s, 2 s]; the check runs every twentieth of the age (100 ms).
    expect(lived).toBeGreaterThanOrEqual(0.8 * AGE);
    expect(lived).toBeLessThan(AGE + 1_000);
    const tail = /\n\nretry: (\d+)\n\n$/.exec(text);
    if (!tail) throw new Error(`no retry: at the end: ${JSON.stringify(text)}`);
    expect(Number(tail[1])).toBeGreaterThanOrEqual(1_000);
    expect(Number(tail[1])).toBeLessThanOrEqual(10_000);
    expect(text).not.toContain('event: complete');
  });

  it('is resumed by a spec-following EventSource from its Last-Event-ID: no block skipped or repeated', {
    timeout: 40_000,
  }, async () => {
    const before = await aged('sse');
    const source = new EventSource(`${env.url}?query=${encodeURIComponent(BLOCKS)}`);
    const heights: number[] = [];
    let opens = 0;
    let completes = 0;
    source.addEventListener('open', () => opens++);
    source.addEventListener('next', (event) => heights.push(parseAnswer(event.data).data.blockAdded.height));
    source.addEventListener('complete', () => completes++);
    try {
      await until(async () => opens === 1 && (await active()) === 1, { what: 'the EventSource open' });
      await afterPoll();
      const first = env.devnet.advance(1).heights;
      await until(() => heights.length === 1, { what: 'a first block' });
      await until(async () => (await aged('sse')) === before + 1 && source.readyState === source.CONNECTING, {
        what: 'the stream ended at its age, the EventSource waiting to reconnect',
      });
      // The chain moves while the client is away: its Last-Event-ID brings these back.
      const gap = env.devnet.advance(2).heights;
      await until(() => opens === 2, { what: 'the EventSource back by itself', within: 12_000 });
      await until(() => heights.length === 3, { what: 'the blocks of the gap' });
      await afterPoll();
      const next = env.devnet.advance(1).heights;
      await until(() => heights.length === 4, { what: 'the next live block' });
      expect(heights).toEqual([...first, ...gap, ...next]);
      expect(completes).toBe(0);
    } finally {
      source.close();
    }
  });

  it("is reconnected by graphql-sse's client at its defaults, which gets the next blocks", {
    timeout: 30_000,
  }, async () => {
    const before = await aged('sse');
    const client = createSseClient({ url: env.url });
    const heights: number[] = [];
    const outcomes: string[] = [];
    let reconnects = 0;
    const dispose = client.subscribe<{ blockAdded: { height: number } }>(
      { query: BLOCKS },
      {
        next: (result) => heights.push(result.data?.blockAdded.height as number),
        complete: () => outcomes.push('complete'),
        error: (error) => outcomes.push(String(error)),
      },
      { connected: (reconnected) => void (reconnected && reconnects++) },
    );
    try {
      await until(async () => (await active()) === 1, { what: "graphql-sse's stream open" });
      await afterPoll();
      const first = env.devnet.advance(1).heights;
      await until(() => heights.length === 1, { what: 'a first block' });
      await until(async () => (await aged('sse')) === before + 1, { what: 'the stream ended at its age' });
      // graphql-sse's client sends no Last-Event-ID of its own: the next block comes once it is back.
      await until(async () => reconnects === 1 && (await active()) === 1, {
        what: "graphql-sse's client back by itself",
      });
      await afterPoll();
      const next = env.devnet.advance(1).heights;
      await until(() => heights.length === 2, { what: 'the next block' });
      expect(heights).toEqual([...first, ...next]);
      expect(outcomes).toEqual([]);
    } finally {
      dispose();
      client.dispose();
    }
  });

  it("is resumed by graphql-sse's client given its last height as Last-Event-ID: the gap's blocks too", {
    timeout: 30_000,
  }, async () => {
    const before = await aged('sse');
    const heights: number[] = [];
    // The one line a client adds to resume as an EventSource does (docs/live.md).
    const client = createSseClient({
      url: env.url,
      headers: (): Record<string, string> =>
        heights.length > 0 ? { 'last-event-id': String(heights.at(-1)) } : {},
    });
    const dispose = client.subscribe<{ blockAdded: { height: number } }>(
      { query: BLOCKS },
      {
        next: (result) => heights.push(result.data?.blockAdded.height as number),
        complete: () => {},
        error: () => {},
      },
    );
    try {
      await until(async () => (await active()) === 1, { what: "graphql-sse's stream open" });
      await afterPoll();
      const first = env.devnet.advance(1).heights;
      await until(() => heights.length === 1, { what: 'a first block' });
      await until(async () => (await aged('sse')) === before + 1, { what: 'the stream ended at its age' });
      const gap = env.devnet.advance(2).heights;
      await until(() => heights.length === 3, { what: 'the blocks of the gap, once the client is back' });
      await afterPoll();
      const next = env.devnet.advance(1).heights;
      await until(() => heights.length === 4, { what: 'the next live block' });
      expect(heights).toEqual([...first, ...gap, ...next]);
    } finally {
      dispose();
      client.dispose();
    }
  });
});

describe('a WebSocket at its age', () => {
  let ws: string;
  let close: () => Promise<void>;
  beforeAll(async () => {
    const server = createGatewayServer(env.gateway, loadConfig({}));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    ws = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`;
    close = () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
  });
  afterAll(() => close?.());

  it("is closed 1001, and graphql-ws's client at its defaults reconnects and gets the next blocks", {
    timeout: 30_000,
  }, async () => {
    const before = await aged('websocket');
    const codes: number[] = [];
    let connects = 0;
    const client = createWsClient({
      url: ws,
      webSocketImpl: WebSocket,
      on: {
        connected: () => connects++,
        closed: (event) => codes.push((event as { code: number }).code),
      },
    });
    const heights: number[] = [];
    const outcomes: string[] = [];
    const dispose = client.subscribe<{ blockAdded: { height: number } }>(
      { query: BLOCKS },
      {
        next: (result) => heights.push(result.data?.blockAdded.height as number),
        complete: () => outcomes.push('complete'),
        error: (error) => outcomes.push(String(error)),
      },
    );
    try {
      await until(async () => (await active()) === 1, { what: 'the WebSocket subscription open' });
      await afterPoll();
      const first = env.devnet.advance(1).heights;
      await until(() => heights.length === 1, { what: 'a first block' });
      await until(async () => (await aged('websocket')) === before + 1 && codes.length === 1, {
        what: 'the socket closed at its age',
      });
      expect(codes).toEqual([1001]);
      await until(async () => connects === 2 && (await active()) === 1, {
        what: "graphql-ws's client back by itself, subscribed again",
      });
      await afterPoll();
      const next = env.devnet.advance(1).heights;
      await until(() => heights.length === 2, { what: 'the next block' });
      expect(heights).toEqual([...first, ...next]);
      expect(outcomes).toEqual([]);
    } finally {
      dispose();
      await client.dispose();
    }
  });
});

describe('an Apollo multipart stream (its clients do not come back by themselves)', () => {
  it('is not ended by the age', { timeout: 30_000 }, async () => {
    const abort = new AbortController();
    const res = await fetch(env.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'multipart/mixed;subscriptionSpec="1.0"' },
      body: JSON.stringify({ query: BLOCKS }),
      signal: abort.signal,
    });
    expect(res.status).toBe(200);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = '';
    let ended = false;
    void (async () => {
      for (let read = await reader.read(); !read.done; read = await reader.read())
        text += decoder.decode(read.value, { stream: true });
      ended = true;
    })().catch(() => {});
    try {
      const before = await aged('sse');
      // Two SSE streams in turn, each opened after the multipart one, each ended at its age: by
      // then the multipart stream is older than twice 0.8 × MAX_STREAM_AGE_MS, past any age it
      // could have drawn.
      for (let i = 1; i <= 2; i++) {
        const sse = await fetch(env.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
          body: JSON.stringify({ query: BLOCKS }),
        });
        expect(await sse.text()).toMatch(/\n\nretry: \d+\n\n$/);
        await until(async () => (await aged('sse')) === before + i, { what: `SSE stream ${i} aged` });
      }
      expect(ended).toBe(false);
      expect(await active()).toBe(1);
      await afterPoll();
      const [height] = env.devnet.advance(1).heights;
      await until(() => text.includes(`{"payload":{"data":{"blockAdded":{"height":${height}}}}}`), {
        what: 'the next block on the multipart stream',
      });
      expect(ended).toBe(false);
    } finally {
      abort.abort();
    }
  });
});
