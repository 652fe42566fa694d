import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { hostname } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Devnet, startDevnet } from '../src/devnet/index.js';
import { readAnswer } from './gateway/helpers.js';
import { type FaultUpstream, startFaultUpstream } from './support/fault-upstream.js';
import { startServerProcess } from './support/server-process.js';
import { until } from './support/until.js';

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
      await until(async () => (await (await fetch(new URL('/readyz', url))).json()).upstreams.scan === true);
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
