import { EventSource } from 'eventsource';
import { createClient } from 'graphql-sse';
import { afterEach, describe, expect, it } from 'vitest';
import { subscribe } from '../support/sse.js';
import { until } from '../support/until.js';
import { liveTestSettings, parseAnswer, registering, useGatewayOnDevnet } from './helpers.js';

/**
 * Refusals a browser survives (contract.md §9, Browsers). A stream refused for capacity
 * (MAX_SUBSCRIPTIONS_PER_CLIENT: an office or a carrier NAT) used to be a 429, which the WHATWG
 * EventSource treats as fatal: the live view stayed dead until the page reloaded. It is now an event
 * stream carrying the RATE_LIMITED error and a jittered `retry:`, then its end: a spec-following
 * EventSource (the `eventsource` package) reconnects by itself and is served once a slot frees, and
 * graphql-sse's client reads RATE_LIMITED. Every stream also starts with a `retry:` of its own in
 * [1 s, 10 s], so that the clients of an instance that crashed do not all come back at once.
 */

const PER_CLIENT = 2;
const env = useGatewayOnDevnet({
  gateway: { live: { ...liveTestSettings(), maxSubscriptionsPerClient: PER_CLIENT } },
});
env.serveOverHttp();

const BLOCKS = 'subscription { blockAdded { height } }';
const eventSourceUrl = () => `${env.url}?query=${encodeURIComponent(BLOCKS)}`;

const active = async () => (await env.gateway.metrics.subscriptions.get()).values[0]?.value ?? 0;

afterEach(async () => {
  await until(async () => (await active()) === 0, { what: "every test's streams closed" });
});

/** The client at its cap: two streams held open. */
async function atCap() {
  const held = [await subscribe(env.url, BLOCKS), await subscribe(env.url, BLOCKS)];
  await until(async () => (await active()) === PER_CLIENT, { what: 'the client at its cap' });
  return held;
}

describe('a stream refused for capacity', () => {
  it.each([
    { writer: 'the adapter', search: '' },
    // A GET with extensions (as a persisted document's would be) is answered on Yoga's path.
    { writer: 'Yoga', search: '&extensions=%7B%7D' },
  ])(
    'is an event stream ($writer writes): the RATE_LIMITED error, a retry: between retry-after and five times it, its end',
    async ({ search }) => {
      const held = await atCap();
      const refused = await fetch(`${eventSourceUrl()}${search}`, {
        headers: { accept: 'text/event-stream' },
      });
      expect(refused.status).toBe(200);
      expect(refused.headers.get('content-type')).toBe('text/event-stream');
      expect(refused.headers.get('x-accel-buffering')).toBe('no');
      const text = await refused.text();
      const frame = /^:\n\nretry: (\d+)\n\nevent: next\ndata: (.*)\n\nevent: complete\ndata:\n\n$/.exec(text);
      if (!frame) throw new Error(`not a refusal frame: ${JSON.stringify(text)}`);
      const answer = parseAnswer(frame[2] as string);
      expect(answer.errors).toEqual([
        {
          message:
            'Too many subscriptions for this client: close one before opening another, or retry in 1 s.',
          extensions: { code: 'RATE_LIMITED', retryAfterMs: 1_000 },
        },
      ]);
      const retry = Number(frame[1]);
      expect(retry).toBeGreaterThanOrEqual(1_000);
      expect(retry).toBeLessThanOrEqual(5_000);
      expect(await active()).toBe(PER_CLIENT);
      for (const s of held) s.close();
    },
  );

  it('is survived by a spec-following EventSource: it reconnects by itself, and is served once a slot frees', async () => {
    const held = await atCap();
    const source = new EventSource(eventSourceUrl());
    const refusals: string[] = [];
    const heights: number[] = [];
    source.addEventListener('next', (event) => {
      const answer = parseAnswer(event.data);
      if (answer.errors) refusals.push(answer.errors[0].extensions.code);
      else heights.push(answer.data.blockAdded.height);
    });
    try {
      // Refused, and not given up: the EventSource waits to reconnect (a 429 would have closed it).
      await until(() => refusals.length > 0 && source.readyState === source.CONNECTING, {
        what: 'the EventSource refused, and reconnecting',
      });
      expect(refusals[0]).toBe('RATE_LIMITED');
      (held[0] as { close(): void }).close();
      await until(async () => (await active()) === PER_CLIENT - 1, { what: 'a slot given back' });
      await until(async () => (await active()) === PER_CLIENT && source.readyState === source.OPEN, {
        what: 'the EventSource back by itself, in the slot the closed stream gave back',
      });
      await env.gateway.live.hub.afterPoll('blocks');
      const [height] = env.devnet.advance(1).heights;
      await until(() => heights.length === 1, { what: 'a block on the reconnected EventSource' });
      expect(heights).toEqual([height]);
      expect(refusals.every((code) => code === 'RATE_LIMITED')).toBe(true);
    } finally {
      source.close();
      for (const s of held) s.close();
    }
  });

  it("is RATE_LIMITED to graphql-sse's client (distinct connections), then complete", async () => {
    const held = await atCap();
    const client = createClient({ url: env.url, singleConnection: false, retryAttempts: 0 });
    const results: unknown[] = [];
    const outcome = await new Promise<string>((resolve) => {
      client.subscribe(
        { query: BLOCKS },
        {
          next: (result) => results.push(result),
          complete: () => resolve('complete'),
          error: (e) => resolve(String(e)),
        },
      );
    });
    expect(outcome).toBe('complete');
    expect(results).toEqual([
      {
        errors: [
          {
            message:
              'Too many subscriptions for this client: close one before opening another, or retry in 1 s.',
            extensions: { code: 'RATE_LIMITED', retryAfterMs: 1_000 },
          },
        ],
      },
    ]);
    client.dispose();
    for (const s of held) s.close();
  });
});

describe('every stream', () => {
  it('starts with a retry: of its own in [1 s, 10 s]: an EventSource’s GET, a POST, and a stream Yoga writes', async () => {
    const kinds = [
      { url: eventSourceUrl(), init: {} },
      { url: env.url, init: { method: 'POST', body: JSON.stringify({ query: BLOCKS }) } },
      // A request registering its document (APQ) is streamed by Yoga's SSE writer.
      {
        url: env.url,
        init: { method: 'POST', body: JSON.stringify({ query: BLOCKS, extensions: registering(BLOCKS) }) },
      },
    ];
    const retries: number[] = [];
    for (let i = 0; i < 12; i++) {
      const abort = new AbortController();
      const { url, init } = kinds[i % kinds.length] as (typeof kinds)[number];
      const res = await fetch(url, {
        ...init,
        headers: { accept: 'text/event-stream', 'content-type': 'application/json' },
        signal: abort.signal,
      });
      expect(res.status).toBe(200);
      const reader = (res.body as ReadableStream<Uint8Array>).getReader();
      const decoder = new TextDecoder();
      let text = '';
      while (!/^:\n\nretry: \d+\n\n/.test(text))
        text += decoder.decode((await reader.read()).value, { stream: true });
      retries.push(Number(/^:\n\nretry: (\d+)\n\n/.exec(text)?.[1]));
      abort.abort();
      await until(async () => (await active()) === 0, { what: 'the stream closed' });
    }
    for (const retry of retries) {
      expect(retry).toBeGreaterThanOrEqual(1_000);
      expect(retry).toBeLessThanOrEqual(10_000);
    }
    // Each its own: twelve streams draw (nearly) twelve different hints.
    expect(new Set(retries).size).toBeGreaterThan(9);
  });
});
