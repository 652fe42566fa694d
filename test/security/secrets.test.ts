import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

/**
 * Secrets (contract.md §7): with real upstreams and NODE_ENV=production the process does not start
 * without CURSOR_SECRET. Without it, cursors (and the HMACs that name a caller's token in Redis)
 * would be keyed by a secret derived from the upstream URLs, which anyone who knows them can derive.
 * Nor does a production process start on the embedded devnet unless asked by name (contract.md §8):
 * a deployment that forgot its upstream URLs would otherwise serve made-up data and accept the
 * devnet's public token (`devnet-token`), the mutation included.
 */

const REAL = {
  NODE_ENV: 'production',
  SCAN_URL: 'http://127.0.0.1:9/scan',
  EXPLORER_URL: 'http://127.0.0.1:9/explorer',
  STAKE_URL: 'http://127.0.0.1:9/stake',
};

describe('CURSOR_SECRET', () => {
  it('stops the start of a production process on real upstreams, naming the variable', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      env: { ...process.env, ...REAL, CURSOR_SECRET: '', PORT: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    // A process that starts after all (the regression this guards against) does not outlive the test.
    onTestFinished(() => {
      if (child.exitCode === null) child.kill('SIGKILL');
    });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const [code] = await once(child, 'exit');
    expect(code).toBe(1);
    expect(stderr).toContain('CURSOR_SECRET must be set in production on real upstreams');
  });

  it('is required only there: the devnet and real upstreams outside production start without it', () => {
    expect(loadConfig({ NODE_ENV: 'production', DEVNET: 'true' }).cursorSecret).toBeNull();
    expect(loadConfig({ ...REAL, NODE_ENV: 'development' }).cursorSecret).toBeNull();
    expect(loadConfig({ ...REAL, CURSOR_SECRET: 'a'.repeat(32) }).cursorSecret).toBe('a'.repeat(32));
  });

  it('refuses a secret shorter than 16 bytes', () => {
    expect(() => loadConfig({ ...REAL, CURSOR_SECRET: 'short' })).toThrow(ConfigError);
    expect(() => loadConfig({ ...REAL, CURSOR_SECRET: 'short' })).toThrow(
      'CURSOR_SECRET must be at least 16 bytes',
    );
  });
});

describe('the embedded devnet in production', () => {
  it('does not start without DEVNET=true: exit 1, naming the devnet and DEVNET=true, never listening', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      env: {
        ...process.env,
        NODE_ENV: 'production',
        SCAN_URL: '',
        EXPLORER_URL: '',
        STAKE_URL: '',
        DEVNET: '',
        PORT: '0',
        METRICS_PORT: '0',
        ...{ SCAN_PORT: '0', EXPLORER_PORT: '0', STAKE_PORT: '0' },
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    onTestFinished(() => {
      if (child.exitCode === null) child.kill('SIGKILL');
    });
    let output = '';
    const listening = new Promise<'listening'>((resolve) => {
      const read = (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes('gateway listening')) resolve('listening');
      };
      child.stdout?.on('data', read);
      child.stderr?.on('data', read);
    });
    // One that listens instead is a failure at once, not at the test's timeout.
    const ended = await Promise.race([once(child, 'exit').then(([code]) => code as number), listening]);
    expect(ended).toBe(1);
    expect(output).toContain(
      'configuration error: NODE_ENV=production and no upstream URL: set SCAN_URL, EXPLORER_URL and STAKE_URL, or DEVNET=true to run on the embedded devnet',
    );
    expect(output).not.toContain('devnet token');
  });
});
