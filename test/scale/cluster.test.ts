import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { request } from 'node:http';
import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Devnet, startDevnet } from '../../src/devnet/index.js';
import { type FaultUpstream, startFaultUpstream } from '../support/fault-upstream.js';
import { type Started, startServerProcess } from '../support/server-process.js';
import { until } from '../support/until.js';

/**
 * `WORKERS=2`: the real process (`src/main.ts` under tsx), a primary and its workers. Every
 * request goes on a new connection, so that the primary hands each to the next worker.
 */

async function startServer(env: Record<string, string>): Promise<Started> {
  const started = startServerProcess({ WORKERS: '2', ...env });
  await started.listening;
  return started;
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One request on a connection of its own. */
function send(url: string, options: { method?: string; headers?: Record<string, string>; body?: string }) {
  return new Promise<Answer>((resolve, reject) => {
    const req = request(
      url,
      { method: options.method ?? 'GET', headers: options.headers, agent: false },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

const query = (url: string, headers: Record<string, string> = {}) =>
  send(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ query: '{ searchSuggestions(query: "12") { query } }' }),
  });

const metricsUrl = (url: string) => new URL('/metrics', url).href;

/** The sum of graphql_requests_total over its label sets. */
function requestsTotal(text: string): number {
  return text
    .split('\n')
    .filter((line) => line.startsWith('graphql_requests_total{'))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
}

/** How many times the primary has collected every worker's metrics, as a scrape reports it. */
function collections(text: string): number {
  const line = text.split('\n').find((l) => l.startsWith('cluster_metrics_collections_total '));
  return Number(line?.slice(line.lastIndexOf(' ') + 1));
}

/**
 * A scrape answered by a collection made for it or after it: the primary reuses a collection for a
 * second, so this scrapes until the count moves past the one the first scrape reports.
 */
async function freshScrape(url: string): Promise<Answer> {
  const current = collections((await send(metricsUrl(url), {})).body);
  let res: Answer | undefined;
  await until(
    async () => {
      res = await send(metricsUrl(url), {});
      return collections(res.body) !== current;
    },
    { what: 'a scrape answered by a fresh collection' },
  );
  return res as Answer;
}

/** The request log lines printed so far, as objects. */
function requestLines(output: string): Array<{ worker?: number; status: number }> {
  return output
    .split('\n')
    .slice(0, -1) // what follows the last newline may be half a line
    .filter((line) => line.startsWith('{') && line.includes('"msg":"graphql request"'))
    .map((line) => JSON.parse(line));
}

/** Waits until `count` request log lines have been printed (lines leave in batches, at least every second). */
function loggedRequests(server: Started, count: number) {
  return server.waitFor((output) => {
    const lines = requestLines(output);
    return lines.length >= count ? lines : null;
  });
}

/** A process and its workers start in about 3 s each under tsx; slower on a loaded machine. */
const SLOW = 60_000;

const isRunning = (child: ChildProcess) => child.exitCode === null && child.signalCode === null;

describe('WORKERS=2 on the embedded devnet', () => {
  let server: Started;
  beforeAll(async () => {
    server = await startServer({ SCAN_PORT: '0', EXPLORER_PORT: '0', STAKE_PORT: '0' });
    // The banner's last line (a JSON line, as the log's).
    await server.printed(/"msg":"try: curl/);
  }, SLOW);
  afterAll(() => {
    if (server && isRunning(server.child)) server.child.kill('SIGKILL');
  });

  it('starts the devnet once, in the primary, and two workers', async () => {
    const output = server.output();
    expect(output.match(/running on the embedded devnet/g)).toHaveLength(1);
    const workers = [...output.matchAll(/worker (\d+) \(pid (\d+)\) listening/g)].map(([, id]) => Number(id));
    expect(workers.sort()).toEqual([1, 2]);
    expect(output).toMatch(/gateway listening on \S+ \(2 workers\)/);
    // Still devnet mode in the workers: any localhost origin may call.
    const res = await query(server.url, { origin: 'http://localhost:5173' });
    expect(res.status).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBe('http://localhost:5173');
  });

  it('answers from both workers, and each request log line names its worker', async () => {
    const answers = await Promise.all(Array.from({ length: 11 }, () => query(server.url)));
    for (const res of answers) {
      expect(res.status).toBe(200);
      expect(JSON.parse(res.body)).toEqual({ data: { searchSuggestions: { query: '12' } } });
    }
    const lines = await loggedRequests(server, 12);
    expect(new Set(lines.map((line) => line.worker))).toEqual(new Set([1, 2]));
  });

  it('serves the metrics of every worker on /metrics, whichever worker takes the scrape', async () => {
    const lines = requestLines(server.output());
    expect(lines).toHaveLength(12);
    // Each worker answered fewer than 12: a scrape that counts 12 is the aggregate, never one
    // worker's own registry.
    for (const id of [1, 2]) expect(lines.filter((line) => line.worker === id).length).toBeLessThan(12);
    for (let i = 0; i < 4; i++) {
      const res = await send(metricsUrl(server.url), {});
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/plain/);
      expect(requestsTotal(res.body)).toBe(12);
      // A gauge of state is the worst of the workers', not their sum.
      expect(res.body).toMatch(/^upstream_circuit_state\{upstream="scan"\} 0$/m);
    }
  });

  it('collects every worker’s metrics once for a burst of scrapes, not once per scrape', async () => {
    const fresh = collections((await freshScrape(server.url)).body);
    // Twenty scrapes on connections of their own, spread over both workers: one collection for all.
    const answers = await Promise.all(Array.from({ length: 20 }, () => send(metricsUrl(server.url), {})));
    expect(answers.map((res) => res.status)).toEqual(Array(20).fill(200));
    expect(answers.map((res) => collections(res.body))).toEqual(Array(20).fill(fresh));
    // The workers' figures are in every answer as before.
    for (const res of answers) expect(requestsTotal(res.body)).toBe(12);
  });

  it('replaces a worker that dies, and keeps answering', { timeout: SLOW }, async () => {
    const [, pid] = (await server.printed(/worker 1 \(pid (\d+)\) listening/)) as RegExpExecArray;
    process.kill(Number(pid), 'SIGKILL');
    await server.printed(
      new RegExp(
        `worker 1 \\(pid ${pid}\\) exited unexpectedly \\(signal SIGKILL\\): starting a replacement`,
      ),
    );
    await server.printed(/worker 3 \(pid \d+\) listening/);
    const answers = await Promise.all(Array.from({ length: 6 }, () => query(server.url)));
    for (const res of answers) expect(res.status).toBe(200);
    const lines = await loggedRequests(server, 18);
    expect(new Set(lines.slice(12).map((line) => line.worker))).toEqual(new Set([2, 3]));
    // Worker 1's counts died with it: what is left is worker 2's and worker 3's.
    const survivors = lines.filter((line) => line.worker !== 1).length;
    const res = await freshScrape(server.url);
    expect(requestsTotal(res.body)).toBe(survivors);
  });

  it('drains every worker on SIGTERM and exits 0', async () => {
    const exited = once(server.child, 'exit');
    server.child.kill('SIGTERM');
    const [code] = await exited;
    expect(code).toBe(0);
    const output = server.output();
    expect(output).toContain('SIGTERM: draining 2 workers');
    expect(output).toMatch(/worker 2: SIGTERM: finishing in-flight requests, refusing new ones/);
    expect(output).toMatch(/worker 3: SIGTERM: finishing in-flight requests, refusing new ones/);
    expect(output).toMatch(/worker 2 \(pid \d+\) exited \(code 0\)/);
    expect(output).toMatch(/worker 3 \(pid \d+\) exited \(code 0\)/);
  });
});

describe('WORKERS=2 on real upstreams', () => {
  let devnet: Devnet;
  let scan: FaultUpstream;
  beforeAll(async () => {
    devnet = await startDevnet({ seed: 'cluster' });
    scan = await startFaultUpstream(devnet.urls.scan);
  });
  afterAll(async () => {
    await scan?.close();
    await devnet?.close();
  });

  it('on SIGTERM finishes in-flight requests in every worker, refuses new ones, and exits 0', {
    timeout: SLOW,
  }, async () => {
    const server = await startServer({
      SCAN_URL: scan.url,
      EXPLORER_URL: devnet.urls.explorer,
      STAKE_URL: devnet.urls.stake,
    });
    expect(server.output()).not.toContain('embedded devnet');
    scan.set('/api/v1/dex/search', 'held');
    try {
      // In flight: its search call has reached the upstream, which holds it.
      const arrived = scan.nextRequest();
      const inFlight = query(server.url);
      expect((await arrived).url).toMatch(/^\/api\/v1\/dex\/search\?/);
      const exited = once(server.child, 'exit');
      server.child.kill('SIGTERM');
      await server.printed(/worker 1: SIGTERM: finishing in-flight requests, refusing new ones/);
      await server.printed(/worker 2: SIGTERM: finishing in-flight requests, refusing new ones/);
      // The primary closes the shared port once both workers have let go of it.
      await until(
        () =>
          send(new URL('/healthz', server.url).href, {}).then(
            () => false,
            (e: Error & { code?: string }) => e.code === 'ECONNREFUSED',
          ),
        { within: 20_000, what: 'the shared port closed (a connection refused)' },
      );
      // The held request keeps its worker, and so the primary, running.
      expect(isRunning(server.child)).toBe(true);
      scan.release();
      const res = await inFlight;
      expect(res.status).toBe(200);
      expect(JSON.parse(res.body)).toEqual({ data: { searchSuggestions: { query: '12' } } });
      const [code] = await exited;
      expect(code).toBe(0);
    } finally {
      scan.set('/api/v1/dex/search', 'proxy');
      scan.release();
      if (isRunning(server.child)) server.child.kill('SIGKILL');
    }
  });

  it('stops with exit 1, instead of forking again and again, when the workers cannot listen', {
    timeout: SLOW,
  }, async () => {
    const taken: Server = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as { port: number };
    try {
      const server = startServerProcess({
        WORKERS: '2',
        PORT: String(port),
        SCAN_URL: devnet.urls.scan,
        EXPLORER_URL: devnet.urls.explorer,
        STAKE_URL: devnet.urls.stake,
      });
      server.listening.catch(() => {});
      const [code] = await once(server.child, 'exit');
      expect(code).toBe(1);
      // Each worker says which setting chose the port taken, in one line.
      expect(server.output()).toContain(`PORT=${port}: 127.0.0.1:${port} is already in use`);
      expect(server.output()).not.toMatch(/EADDRINUSE/);
      expect(server.output()).toMatch(/exited \(code 1\) before listening: stopping the gateway/);
      expect(server.output()).not.toContain('gateway listening on');
    } finally {
      taken.close();
    }
  });
});
