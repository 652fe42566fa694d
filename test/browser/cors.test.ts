import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { type Devnet, startDevnet } from '../../src/devnet/index.js';
import { createGateway, type Gateway } from '../../src/gateway.js';
import { listen } from '../gateway/helpers.js';
import { hasChromium, launchChromium } from './chromium.js';

/**
 * Cross-origin frontends, as a browser enforces CORS: a page served from an origin of
 * CORS_ORIGINS posts a query with an Authorization header (so the browser sends a preflight
 * first) and reads its data and request id, with the headers frontends' libraries add (Apollo
 * Client's name and version, Sentry's trace) and one CORS_ALLOW_HEADERS adds; a page from any other
 * origin cannot read the answer, and its POST never leaves the browser.
 */

let devnet: Devnet;
let gateway: Gateway;
let http: Awaited<ReturnType<typeof listen>>;
let browser: Browser;
const sites: Server[] = [];

/** A site on its own origin (another port of 127.0.0.1), serving one empty page. */
async function site(): Promise<string> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>frontend</title>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  sites.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

let allowed: string;
let other: string;

beforeAll(async () => {
  devnet = await startDevnet({ seed: 'cors', record: true });
  allowed = await site();
  other = await site();
  const { scan, explorer, stake } = devnet.urls;
  const config = loadConfig({
    SCAN_URL: scan,
    EXPLORER_URL: explorer,
    STAKE_URL: stake,
    CORS_ORIGINS: `https://explorer.example,${allowed}`,
    CORS_ALLOW_HEADERS: 'X-App-Build',
    LIVE_POLL_MS: '50',
  });
  gateway = createGateway({ ...config, upstreamUrls: devnet.urls });
  http = await listen(gateway);
  if (hasChromium) browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await http?.close();
  await gateway?.close();
  await devnet?.close();
  for (const server of sites) server.close();
});

interface Outcome {
  data?: unknown;
  requestId?: string | null;
  failure?: string;
}

/** From a page of `origin`, what a frontend's fetch of the gateway (with `headers` besides) gets. */
async function callFrom(origin: string, headers: Record<string, string> = {}): Promise<Outcome> {
  const page: Page = await browser.newPage();
  try {
    await page.goto(origin);
    return await page.evaluate(
      async ({ url, token, headers }) => {
        try {
          const res = await fetch(url, {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, ...headers },
            body: JSON.stringify({ query: '{ failedTransactions(pageSize: 2) { nodes { hash } } }' }),
          });
          return { data: (await res.json()).data, requestId: res.headers.get('x-request-id') };
        } catch (error) {
          return { failure: String(error) };
        }
      },
      { url: http.url, token: devnet.token, headers },
    );
  } finally {
    await page.close();
  }
}

describe.runIf(hasChromium)('CORS in Chromium', () => {
  it('lets a page of an allowed origin send its token and read the answer', { timeout: 60_000 }, async () => {
    devnet.resetRecords();
    const outcome = await callFrom(allowed);
    expect(outcome.failure).toBeUndefined();
    expect(outcome.data).toEqual({
      failedTransactions: { nodes: [{ hash: expect.any(String) }, { hash: expect.any(String) }] },
    });
    expect(outcome.requestId).toMatch(/^[0-9a-f-]{36}$/);
    const explorerCalls = devnet.requests.filter((r) => r.service === 'explorer');
    expect(explorerCalls).toHaveLength(1);
    expect(explorerCalls[0]?.headers.authorization).toBe(`Bearer ${devnet.token}`);
  });

  it("lets a page of an allowed origin send Apollo Client's and Sentry's headers, and read the answer", {
    timeout: 60_000,
  }, async () => {
    devnet.resetRecords();
    // What `new ApolloClient({ name, version })` and Sentry's browser SDK add to every request.
    const outcome = await callFrom(allowed, {
      'apollographql-client-name': 'explorer-web',
      'apollographql-client-version': '1.2.3',
      'sentry-trace': '4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1',
      baggage: 'sentry-environment=production,sentry-public_key=abc',
    });
    expect(outcome.failure).toBeUndefined();
    expect(outcome.data).toEqual({
      failedTransactions: { nodes: [{ hash: expect.any(String) }, { hash: expect.any(String) }] },
    });
    expect(devnet.requests.filter((r) => r.service === 'explorer')).toHaveLength(1);
  });

  it('lets a page of an allowed origin send a header CORS_ALLOW_HEADERS adds, and no other', {
    timeout: 60_000,
  }, async () => {
    devnet.resetRecords();
    const added = await callFrom(allowed, { 'x-app-build': '2026.11.29' });
    expect(added.failure).toBeUndefined();
    expect(added.data).toEqual({
      failedTransactions: { nodes: [{ hash: expect.any(String) }, { hash: expect.any(String) }] },
    });
    devnet.resetRecords();
    const other = await callFrom(allowed, { 'x-not-allowed': '1' });
    expect(other.failure).toMatch(/TypeError: Failed to fetch/);
    expect(devnet.requests).toHaveLength(0);
  });

  it('keeps the answer from a page of any other origin', { timeout: 60_000 }, async () => {
    devnet.resetRecords();
    const outcome = await callFrom(other);
    expect(outcome.data).toBeUndefined();
    expect(outcome.failure).toMatch(/TypeError: Failed to fetch/);
    // The preflight was refused, so the browser never sent the POST: no upstream saw a call.
    expect(devnet.requests).toHaveLength(0);
  });

  it('lets a page of an allowed origin receive blockAdded through an EventSource', {
    timeout: 60_000,
  }, async () => {
    const page: Page = await browser.newPage();
    try {
      await page.goto(allowed);
      const polled = gateway.live.hub.afterPoll('blocks');
      const query = 'subscription Live { blockAdded { height hash } }';
      await page.evaluate(
        (url) => {
          const target = window as unknown as { heights: number[]; source: EventSource };
          target.heights = [];
          target.source = new EventSource(url);
          // Yoga names its events: `next` carries a result, `complete` ends the stream.
          target.source.addEventListener('next', (event) => {
            target.heights.push(JSON.parse((event as MessageEvent).data).data.blockAdded.height);
          });
        },
        `${http.url}?query=${encodeURIComponent(query)}`,
      );
      await polled;
      const { heights } = devnet.advance(2);
      await expect
        .poll(() => page.evaluate(() => (window as unknown as { heights: number[] }).heights), {
          message: "the two blocks on the page's EventSource",
        })
        .toEqual(heights);
      await page.evaluate(() => (window as unknown as { source: EventSource }).source.close());
    } finally {
      await page.close();
    }
  });

  it('keeps the events from a page of any other origin', { timeout: 60_000 }, async () => {
    const page: Page = await browser.newPage();
    try {
      await page.goto(other);
      const outcome = await page.evaluate(
        (url) =>
          new Promise<string>((resolve) => {
            const source = new EventSource(url);
            source.addEventListener('next', () => resolve('read an event'));
            source.onerror = () => {
              source.close();
              resolve('refused');
            };
          }),
        `${http.url}?query=${encodeURIComponent('subscription { blockAdded { height } }')}`,
      );
      expect(outcome).toBe('refused');
    } finally {
      await page.close();
    }
  });
});

describe('CORS_ALLOW_HEADERS', () => {
  it('takes header names, lower-cased, and refuses to start on anything else, naming the variable', () => {
    expect(loadConfig({ CORS_ALLOW_HEADERS: ' X-App-Build ,x-tenant' }).cors.allowHeaders).toEqual([
      'x-app-build',
      'x-tenant',
    ]);
    expect(loadConfig({}).cors.allowHeaders).toEqual([]);
    for (const bad of ['x-app build', 'x-a,,x-b', 'x-app:1', 'x-é']) {
      expect(() => loadConfig({ CORS_ALLOW_HEADERS: bad }), bad).toThrow(
        /^CORS_ALLOW_HEADERS must list header names/,
      );
    }
  });
});
