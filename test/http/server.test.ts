import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { request } from 'node:http';
import { hostname } from 'node:os';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { type Devnet, startDevnet } from '../../src/devnet/index.js';
import { readAnswer } from '../gateway/helpers.js';
import { type FaultUpstream, startFaultUpstream } from '../support/fault-upstream.js';
import { freePort } from '../support/net.js';
import { startServerProcess } from '../support/server-process.js';
import { until } from '../support/until.js';

/**
 * The real process: `src/main.ts` under tsx, against a devnet whose search service sits behind a
 * fault upstream, which can hold a request until the test lets it go.
 */

let devnet: Devnet;
let scan: FaultUpstream;
beforeAll(async () => {
  devnet = await startDevnet({ seed: 'server' });
  scan = await startFaultUpstream(devnet.urls.scan);
});
afterAll(async () => {
  await scan.close();
  await devnet.close();
});

async function startServer(env: Record<string, string>) {
  const started = startServerProcess(env);
  await started.listening;
  return started;
}

const query = (url: string) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: '{ searchSuggestions(query: "12") { query } }' }),
  });

describe('server process', () => {
  it('on SIGTERM finishes in-flight requests, refuses new ones and exits 0', async () => {
    const { child, url, printed } = await startServer({
      SCAN_URL: scan.url,
      EXPLORER_URL: devnet.urls.explorer,
      STAKE_URL: devnet.urls.stake,
    });
    scan.set('/api/v1/dex/search', 'held');
    try {
      // In flight: its search call has reached the upstream, which holds it.
      const arrived = scan.nextRequest();
      const inFlight = query(url);
      expect((await arrived).url).toMatch(/^\/api\/v1\/dex\/search\?/);
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      // Printed once the listening socket is closed.
      await printed(/SIGTERM: finishing in-flight requests, refusing new ones/);
      const refused = await query(url).then(
        (res) => `answered ${res.status}`,
        (e: Error & { cause?: { code?: string } }) => e.cause?.code,
      );
      expect(refused).toBe('ECONNREFUSED');
      scan.release();
      const res = await inFlight;
      expect(res.status).toBe(200);
      expect(await readAnswer(res)).toEqual({ data: { searchSuggestions: { query: '12' } } });
      const [code] = await exited;
      expect(code).toBe(0);
    } finally {
      scan.set('/api/v1/dex/search', 'proxy');
      scan.release();
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });

  it('answers forty /readyz at once with one check of each upstream, naming neither the machine nor the process', async () => {
    const { child, url } = await startServer({
      SCAN_URL: scan.url,
      EXPLORER_URL: devnet.urls.explorer,
      STAKE_URL: devnet.urls.stake,
    });
    const pings = () => scan.requests.filter((r) => r.url.startsWith('/api/v1/search?'));
    /** HTTP requests the process is answering now, this scrape included (its own gauge). */
    const inFlight = async () => {
      const text = await (await fetch(new URL('/metrics', url))).text();
      return Number(/^http_requests_in_flight (\d+)$/m.exec(text)?.[1]);
    };
    scan.set('/api/v1/search', 'held');
    try {
      const before = pings().length;
      const arrived = scan.nextRequest();
      const burst = () =>
        Promise.all(
          Array.from({ length: 20 }, async () => {
            const res = await fetch(new URL('/readyz', url));
            return { status: res.status, text: await res.text() };
          }),
        );
      // All twenty answered at once while the one check waits on the held search service.
      const first = await burst();
      expect((await arrived).url).toMatch(/^\/api\/v1\/search\?/);
      expect(first.map((answer) => answer.status)).toEqual(Array(20).fill(200));
      expect(await inFlight()).toBe(1);
      scan.release();
      await until(async () => (await (await fetch(new URL('/readyz', url))).json()).upstreams.scan === true, {
        what: 'a /readyz check that reached the released search service',
      });
      for (const answer of await burst()) {
        expect(answer.status).toBe(200);
        expect(JSON.parse(answer.text)).toEqual({
          status: 'ready',
          upstreams: { scan: true, explorer: true, stake: true },
        });
        expect(answer.text).not.toContain(hostname());
        expect(answer.text).not.toContain(String(child.pid));
      }
      expect(pings().length - before).toBe(1);
    } finally {
      scan.set('/api/v1/search', 'proxy');
      scan.release();
      child.kill('SIGKILL');
    }
  });

  it('METRICS_PORT: /metrics there alone, 404 for it on the public port, and closed at the drain', async () => {
    const { child, url, printed } = await startServer({
      SCAN_URL: scan.url,
      EXPLORER_URL: devnet.urls.explorer,
      STAKE_URL: devnet.urls.stake,
      METRICS_PORT: '0',
    });
    // Whatever fails, the process does not outlive the test.
    onTestFinished(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });
    const [, metrics = ''] = await printed(/metrics on (http:\/\/\S+\/metrics)/);
    try {
      expect(new URL(metrics).port).not.toBe(new URL(url).port);
      expect((await query(url)).status).toBe(200);
      const scraped = await fetch(metrics);
      expect(scraped.status).toBe(200);
      expect(scraped.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
      expect(await scraped.text()).toMatch(
        /^graphql_requests_total\{operation="anonymous",outcome="ok"\} 1$/m,
      );
      // The public port: 404, as for any path it does not serve.
      const open = await fetch(new URL('/metrics', url));
      expect(open.status).toBe(404);
      expect(await open.text()).not.toContain('graphql_requests_total');
      // The metrics port: /metrics by GET, and nothing else.
      expect((await fetch(new URL('/graphql', metrics), { method: 'POST' })).status).toBe(404);
      expect((await fetch(new URL('/healthz', metrics))).status).toBe(404);
      expect((await fetch(metrics, { method: 'POST' })).status).toBe(404);
      expect((await fetch(`${metrics}?name[]=graphql_requests_total`)).status).toBe(200);

      // A drain closes it with the public port, while a request in flight keeps the process up.
      scan.set('/api/v1/dex/search', 'held');
      const arrived = scan.nextRequest();
      const inFlight = query(url);
      await arrived;
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await printed(/SIGTERM: finishing in-flight requests, refusing new ones/);
      const refused = await fetch(metrics).then(
        (res) => `answered ${res.status}`,
        (e: Error & { cause?: { code?: string } }) => e.cause?.code,
      );
      expect(refused).toBe('ECONNREFUSED');
      scan.release();
      expect((await inFlight).status).toBe(200);
      expect((await exited)[0]).toBe(0);
    } finally {
      scan.set('/api/v1/dex/search', 'proxy');
      scan.release();
    }
  });

  it('METRICS_PORT with WORKERS=2: every worker serves it, each scrape answering for the whole gateway', async () => {
    const port = await freePort();
    const { child, url, printed } = await startServer({
      SCAN_URL: devnet.urls.scan,
      EXPLORER_URL: devnet.urls.explorer,
      STAKE_URL: devnet.urls.stake,
      WORKERS: '2',
      METRICS_PORT: String(port),
    });
    // The primary drains its workers on SIGTERM; one that does not is killed with them.
    onTestFinished(async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    });
    const [, metrics = ''] = await printed(/metrics on (http:\/\/\S+\/metrics)/);
    expect(metrics).toBe(`http://127.0.0.1:${port}/metrics`);
    // Each on a connection of its own, which the primary hands to the next worker.
    for (let i = 0; i < 4; i++) expect((await send(url, true)).status).toBe(200);
    // A collection made after the four answers: every worker's count, whichever worker scrapes.
    await until(async () => requestsTotal((await send(metrics)).body) === 4, {
      what: 'a scrape that counts the four requests',
    });
    for (let i = 0; i < 4; i++) {
      const scraped = await send(metrics);
      expect(scraped.status).toBe(200);
      expect(requestsTotal(scraped.body)).toBe(4);
      expect(scraped.body).toMatch(/^cluster_metrics_collections_total \d+$/m);
      expect((await send(new URL('/metrics', url).href)).status).toBe(404);
    }
  });

  it('refuses to start with some upstreams set, naming the missing ones', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      env: { ...process.env, SCAN_URL: devnet.urls.scan, EXPLORER_URL: '', STAKE_URL: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const [code] = await once(child, 'exit');
    expect(code).toBe(1);
    expect(stderr).toContain('SCAN_URL set but EXPLORER_URL and STAKE_URL missing');
  });
});

/** One request on a connection of its own: a GET, or (`asQuery`) the POST `query` sends. */
function send(url: string, asQuery = false): Promise<{ status: number; body: string }> {
  const body = asQuery
    ? JSON.stringify({ query: '{ searchSuggestions(query: "12") { query } }' })
    : undefined;
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: body ? 'POST' : 'GET',
        headers: body ? { 'content-type': 'application/json' } : {},
        agent: false,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** The sum of graphql_requests_total over its label sets. */
const requestsTotal = (text: string): number =>
  text
    .split('\n')
    .filter((line) => line.startsWith('graphql_requests_total{'))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
