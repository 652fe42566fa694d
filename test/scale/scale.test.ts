import { once } from 'node:events';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Devnet, startDevnet } from '../../src/devnet/index.js';
import { notPolls } from '../gateway/helpers.js';
import { hasRedis, startRedis, type TestRedis } from '../support/redis.js';
import { type Started, startServerProcess } from '../support/server-process.js';

/**
 * Two real gateway processes, two workers each, on one Redis and one devnet: what one process
 * fetched, the other answers without an upstream call, and a client has one rate-limit budget
 * whichever process and worker takes its requests.
 */

let redis: TestRedis;
let devnet: Devnet;
const processes: Started[] = [];

beforeAll(async () => {
  if (!hasRedis) return;
  redis = await startRedis();
  devnet = await startDevnet({ seed: 'scale', record: true });
  const env = {
    WORKERS: '2',
    REDIS_URL: redis.url,
    REDIS_TIMEOUT_MS: '1000',
    SCAN_URL: devnet.urls.scan,
    EXPLORER_URL: devnet.urls.explorer,
    STAKE_URL: devnet.urls.stake,
    // Four validator-statistics reads (cost 11 each) fit, a fifth does not.
    RATE_LIMIT_POINTS: '45',
    RATE_LIMIT_WINDOW_MS: '600000',
  };
  for (let i = 0; i < 2; i++) {
    const started = startServerProcess(env);
    processes.push(started);
    await started.listening;
  }
}, 90_000);

afterAll(async () => {
  await Promise.all(
    processes.map(async (p) => {
      if (p.child.exitCode !== null) return;
      p.child.kill('SIGTERM');
      await once(p.child, 'exit');
    }),
  );
  await devnet?.close();
  await redis?.close();
});

/** One POST on a connection of its own (so that each may go to another worker); status and body. */
function post(url: string, query: string, from: string): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        agent: false,
        localAddress: from,
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify({ query }));
  });
}

describe.runIf(hasRedis)('two processes, two workers each, one Redis', () => {
  it('answers on the second process what the first fetched, with no upstream call', {
    timeout: 60_000,
  }, async () => {
    const [a, b] = processes as [Started, Started];
    // Public, and read from the whole validator list.
    const table = '{ validatorStatistics { totalValidators activeValidators } }';
    devnet.resetRecords();
    const first = await post(a.url, table, '127.0.0.3');
    expect(first.status).toBe(200);
    expect(notPolls(devnet.requests).length).toBe(Math.ceil(devnet.data.validators.length / 100));
    devnet.resetRecords();
    for (const from of ['127.0.0.3', '127.0.0.3']) {
      const again = await post(b.url, table, from);
      expect(again.body).toEqual(first.body);
    }
    // Nothing read for these answers (the block poller the first one keeps running aside).
    expect(notPolls(devnet.requests)).toHaveLength(0);
  });

  it('keeps one rate-limit budget per client across both processes and their workers', {
    timeout: 60_000,
  }, async () => {
    const [a, b] = processes as [Started, Started];
    const statistics = '{ validatorStatistics { totalValidators } }';
    const statuses: number[] = [];
    for (const url of [a.url, b.url, a.url, b.url, a.url, b.url]) {
      statuses.push((await post(url, statistics, '127.0.0.4')).status);
    }
    expect(statuses).toEqual([200, 200, 200, 200, 429, 429]);
    // Another client has its own budget.
    expect((await post(b.url, statistics, '127.0.0.5')).status).toBe(200);
  });
});
