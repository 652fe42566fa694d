import { request } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { fitToFileLimit, loadConfig } from '../../src/config.js';
import { parseAnswer } from '../gateway/helpers.js';
import { startServerProcess } from '../support/server-process.js';
import { until } from '../support/until.js';

/**
 * Sockets within the file limit (issue 29): a process whose streams took every file has none left
 * for its upstream sockets, and then no event reaches anyone. MAX_CONNECTIONS and
 * MAX_SUBSCRIPTIONS are capped at start from the open-file limit, with a log line; a stream past
 * the cap is refused with RATE_LIMITED, and every open stream still gets every block.
 */

describe('the caps from the open-file limit', () => {
  const limits = [
    { files: 20_000, env: {}, connections: 11_024, streams: 10_000 },
    {
      files: 20_000,
      env: { MAX_SUBSCRIPTIONS: '50000', MAX_CONNECTIONS: '60000' },
      connections: 19_680,
      streams: 19_616,
    },
    { files: 512, env: { UPSTREAM_CONNECTIONS: '4' }, connections: 360, streams: 296 },
    {
      files: 512,
      env: {
        UPSTREAM_CONNECTIONS: '4',
        SCAN_URL: 'http://s',
        EXPLORER_URL: 'http://e',
        STAKE_URL: 'http://k',
      },
      connections: 372,
      streams: 308,
    },
  ];
  for (const { files, env, connections, streams } of limits) {
    it(`with ${files} open files and ${JSON.stringify(env)}: ${connections} connections, ${streams} streams`, () => {
      const { config } = fitToFileLimit(loadConfig(env), files);
      expect(config.server.maxConnections).toBe(connections);
      expect(config.live.maxSubscriptions).toBe(streams);
    });
  }

  it('caps nothing where the limit cannot be read', () => {
    const config = loadConfig({});
    expect(fitToFileLimit(config, null)).toEqual({ config, capped: [] });
  });
});

describe('a process under a small open-file limit', () => {
  const server = startServerProcess(
    {
      UPSTREAM_CONNECTIONS: '4',
      LIVE_POLL_MS: '50',
      MAX_SUBSCRIPTIONS_PER_CLIENT: '100000',
      LOG_LEVEL: 'info',
    },
    512,
  );
  afterAll(() => {
    server.child.kill('SIGKILL');
  });

  it('says what it capped, refuses the stream past the cap, and delivers every block to every open stream', async () => {
    await server.listening;
    await server.printed(/caps MAX_CONNECTIONS 11024 → 360 and MAX_SUBSCRIPTIONS 10000 → 296/);
    const [, scan] = (await server.printed(/SCAN_URL=(\S+)/)) as RegExpExecArray;
    const query = JSON.stringify({ query: 'subscription { blockAdded { height } }' });
    const streams = await Promise.all(
      Array.from(
        { length: 296 },
        () =>
          new Promise<{ status: number; text: () => string; close(): void }>((resolve, reject) => {
            let body = '';
            const req = request(server.url, {
              method: 'POST',
              agent: false,
              headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
            });
            req.on('response', (res) => {
              res.setEncoding('utf8');
              res.on('data', (chunk: string) => {
                body += chunk;
              });
              resolve({ status: res.statusCode as number, text: () => body, close: () => req.destroy() });
            });
            req.on('error', reject);
            req.end(query);
          }),
      ),
    );
    expect(streams.filter((s) => s.status === 200)).toHaveLength(296);
    const refused = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: query,
    });
    expect(refused.status).toBe(429);
    expect(parseAnswer(await refused.text()).errors[0].extensions.code).toBe('RATE_LIMITED');
    // The poller still has files for its upstream sockets: the chain moves until a block has
    // reached every stream (the first poll only finds the head), and every stream got the same.
    const moving = setInterval(() => void fetch(`${scan}/_devnet/advance?blocks=1`, { method: 'POST' }), 200);
    await until(() => streams.every((s) => s.text().includes('event: next')), {
      what: 'a block on every open stream',
    });
    clearInterval(moving);
    const first = (s: { text(): string }) => /"height":(\d+)/.exec(s.text())?.[1];
    expect(new Set(streams.map(first)).size).toBe(1);
    for (const s of streams) s.close();
  });
});
