import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Devnet, startDevnet } from '../src/devnet/index.js';
import { readAnswer } from './gateway/helpers.js';

/** The real process: `src/server.ts` under tsx, against a devnet whose answers take 400 ms. */

let devnet: Devnet;
beforeAll(async () => {
  devnet = await startDevnet({ seed: 'server', latencyMs: 400 });
});
afterAll(async () => {
  await devnet.close();
});

async function startServer(
  env: Record<string, string>,
): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
    env: { ...process.env, PORT: '0', NODE_ENV: 'test', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  while (!/listening on (\S+)/.test(output)) {
    if (child.exitCode !== null) throw new Error(`server exited: ${output}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return { child, url: /listening on (\S+)/.exec(output)?.[1] as string, output: () => output };
}

const query = (url: string) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: '{ searchSuggestions(query: "12") { query } }' }),
  });

describe('server process', () => {
  it('on SIGTERM finishes in-flight requests, refuses new ones and exits 0', async () => {
    const { child, url } = await startServer({
      SCAN_URL: devnet.urls.scan,
      EXPLORER_URL: devnet.urls.explorer,
      STAKE_URL: devnet.urls.stake,
    });
    const inFlight = query(url);
    await new Promise((resolve) => setTimeout(resolve, 150));
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 50));
    const refused = await query(url).then(
      (res) => `answered ${res.status}`,
      (e: Error & { cause?: { code?: string } }) => e.cause?.code,
    );
    expect(refused).toBe('ECONNREFUSED');
    const res = await inFlight;
    expect(res.status).toBe(200);
    expect(await readAnswer(res)).toEqual({ data: { searchSuggestions: { query: '12' } } });
    const [code] = await exited;
    expect(code).toBe(0);
  });

  it('refuses to start with some upstreams set, naming the missing ones', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
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
