import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Devnet, startDevnet } from '../../src/devnet/index.js';
import { createGateway } from '../../src/gateway.js';
import { devnetOptions, listen, liveTestSettings, registering, testSettings } from '../gateway/helpers.js';

/**
 * Streams at the edge (contract.md §8): every SSE response says `X-Accel-Buffering: no`, so that
 * nginx-style proxies pass events on as they come; and at a drain each stream ends with a `retry:`
 * of its own, at random within 1 to 10 s, so that the clients of a draining instance come back
 * over nine seconds instead of all within one.
 */

const BLOCKS = 'subscription { blockAdded { height } }';

describe('event streams at the edge', () => {
  let devnet: Devnet;
  beforeAll(async () => {
    devnet = await startDevnet(devnetOptions());
  });
  afterAll(async () => {
    await devnet?.close();
  });

  it('are unbuffered by proxies, and end at a drain with retry hints spread over 1 to 10 s', async () => {
    const gateway = createGateway({
      ...testSettings({ live: liveTestSettings() }),
      upstreamUrls: devnet.urls,
    });
    const http = await listen(gateway);
    try {
      const open = (headers: Record<string, string>, body: unknown) =>
        fetch(http.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...headers },
          body: JSON.stringify(body),
        });
      // The adapter's streams, and one Yoga writes (a request registering its document: APQ).
      const streams = await Promise.all([
        ...Array.from({ length: 30 }, () => open({}, { query: BLOCKS })),
        open({}, { query: BLOCKS, extensions: registering(BLOCKS) }),
      ]);
      for (const res of streams) {
        expect(res.status).toBe(200);
        expect(res.headers.get('x-accel-buffering')).toBe('no');
      }
      const texts = Promise.all(streams.slice(0, 30).map((res) => res.text()));
      await gateway.drain();
      // Each stream starts with a `retry:` of its own (eventsource-refusal.test.ts) and ends with the drain's.
      const hints = (await texts).map((text) =>
        [...text.matchAll(/^retry: (\d+)$/gm)].map((m) => Number(m[1])),
      );
      for (const hint of hints) expect(hint).toHaveLength(2);
      // And no `complete`, which would end graphql-sse's client for good instead of bringing it back.
      for (const text of await texts) expect(text).not.toContain('event: complete');
      const retries = hints.map((hint) => hint[1] as number);
      for (const retry of retries) {
        expect(retry).toBeGreaterThanOrEqual(1_000);
        expect(retry).toBeLessThanOrEqual(10_000);
      }
      // At random: thirty streams draw more than a handful of different hints.
      expect(new Set(retries).size).toBeGreaterThan(20);
      await streams[30]?.body?.cancel();
    } finally {
      await http.close();
      await gateway.close();
    }
  });
});
