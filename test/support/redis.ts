import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { installed } from './binaries.js';
import { freePort } from './net.js';

/**
 * A real Redis for the tests: Debian's `redis-server` (installed by `.ci/run`) on a free port of
 * 127.0.0.1, in a temporary directory, with persistence off. `stop()` kills it, for the tests of
 * an outage; `start()` brings it back on the same port.
 */

export const REDIS_SERVER = '/usr/bin/redis-server';
/** Whether the Redis tests run: outside CI they are skipped without it; in CI its absence throws here. */
export const hasRedis = installed(REDIS_SERVER, 'redis-server', 'apt-get install redis-server');

export interface TestRedis {
  url: string;
  port: number;
  start(): Promise<void>;
  stop(): Promise<void>;
  close(): Promise<void>;
}

export async function startRedis(): Promise<TestRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'gateway-redis-'));
  let child: ChildProcess | null = null;

  const start = async () => {
    const proc = spawn(
      REDIS_SERVER,
      ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child = proc;
    // Ready once it says so on stdout; refused if it exits first.
    await new Promise<void>((resolve, reject) => {
      let out = '';
      proc.stdout?.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('Ready to accept connections')) resolve();
      });
      proc.once('exit', (code) => reject(new Error(`redis-server exited with ${code}: ${out}`)));
    });
  };

  const stop = async () => {
    const proc = child;
    child = null;
    if (!proc || proc.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    proc.kill('SIGKILL');
    await exited;
  };

  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    start,
    stop,
    async close() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
