import { EventEmitter } from 'node:events';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type Devnet, startDevnet } from '../../src/devnet/index.js';
import { createGateway, type Gateway } from '../../src/gateway.js';
import { MAX_CLIENT_LABELS } from '../../src/ops/metrics.js';
import { listen, testSettings } from './helpers.js';

/** Metrics, request logs, request ids and trace propagation, seen from outside. */

let devnet: Devnet;
let gateway: Gateway;
let http: Awaited<ReturnType<typeof listen>>;
const lines: Record<string, unknown>[] = [];
const raw: string[] = [];
const logged = new EventEmitter();

/** Resolves with the first log line (already written or still to come) that `match` accepts. */
function logLine(match: (line: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> {
  return new Promise((resolve) => {
    const found = lines.find(match);
    if (found) return resolve(found);
    const check = (line: Record<string, unknown>) => {
      if (!match(line)) return;
      logged.off('line', check);
      resolve(line);
    };
    logged.on('line', check);
  });
}

beforeAll(async () => {
  devnet = await startDevnet({ seed: 'telemetry', record: true });
  const sink = new Writable({
    write(chunk, _encoding, done) {
      raw.push(chunk.toString());
      const line = JSON.parse(chunk.toString());
      lines.push(line);
      logged.emit('line', line);
      done();
    },
  });
  gateway = createGateway({
    ...testSettings({ validatorCacheTtlMs: 60_000 }),
    upstreamUrls: devnet.urls,
    logger: pino({ level: 'info' }, sink),
  });
  http = await listen(gateway);
});
afterAll(async () => {
  await http.close();
  await gateway.close();
  await devnet.close();
});

const postTo = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
const post = (body: unknown, headers: Record<string, string> = {}) => postTo(http.url, body, headers);
const scrape = async (url: string) => (await fetch(url.replace('/graphql', '/metrics'))).text();
/** A sample's value in Prometheus text (NaN when absent). */
const sample = (text: string, pattern: RegExp) => Number(pattern.exec(text)?.[1] ?? Number.NaN);

describe('request ids and traces', () => {
  it('returns and forwards the caller’s x-request-id and passes its traceparent on unchanged while tracing is off', async () => {
    devnet.resetRecords();
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const res = await post(
      {
        query:
          'query Portfolio { validatorStatistics { totalValidators } searchSuggestions(query: "9") { query } }',
      },
      { 'x-request-id': 'req-42', traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
    );
    expect(res.headers.get('x-request-id')).toBe('req-42');
    // The validator list, page by page, and the search suggestions.
    const pages = Math.ceil(devnet.data.validators.length / 100);
    expect(devnet.requests.map((r) => `${r.service} ${r.path}`).sort()).toEqual([
      'scan /api/v1/dex/search',
      ...Array.from({ length: pages }, () => 'stake /stake/validators'),
    ]);
    // Tracing is off here (no OTLP endpoint): no span is invented, the caller's context goes on as
    // it came (test/ops/tracing.test.ts covers the exported spans).
    for (const r of devnet.requests) {
      expect(r.headers['x-request-id']).toBe('req-42');
      expect(r.headers.traceparent).toBe(`00-${traceId}-00f067aa0ba902b7-01`);
    }
  });

  it('makes up a request id, and sends no trace, when the caller sends none or a malformed one, on both paths', async () => {
    const variants: Record<string, string>[] = [
      {},
      { 'x-request-id': 'bad id\twith spaces', traceparent: 'garbage' },
    ];
    for (const headers of variants) {
      devnet.resetRecords();
      const fast = await post({ query: '{ search(query: "7") { query } }' }, headers);
      const id = fast.headers.get('x-request-id');
      expect(id).toMatch(/^[0-9a-f-]{36}$/);
      expect(devnet.requests[0]?.headers['x-request-id']).toBe(id);
      // No trace to continue, and none started while tracing is off: no parent that exists nowhere.
      expect(devnet.requests[0]?.headers.traceparent).toBeUndefined();
    }
    const viaYoga = await gateway.yoga.fetch('http://gateway.test/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'yoga-path-1' },
      body: JSON.stringify({ query: '{ __typename }' }),
    });
    expect(viaYoga.headers.get('x-request-id')).toBe('yoga-path-1');
  });
});

describe('request logs', () => {
  it('writes one line per request with id, operation, duration, upstream calls and codes, and no secrets', async () => {
    lines.length = 0;
    raw.length = 0;
    const token = 'super-secret-token-value';
    const text = 'my private search phrase';
    await post(
      { query: 'query Box($q: String!) { searchSuggestions(query: $q) { query } }', variables: { q: text } },
      {
        authorization: `Bearer ${token}`,
        'x-request-id': 'log-1',
      },
    );
    await post({ query: 'query Contracts { contractsBySymbol(symbol: "USDT") { nodes { address } } }' });
    await post(
      { query: 'query Failing { failedTransactions { nodes { hash } } }' },
      { authorization: `Bearer ${token}` },
    );
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatchObject({
      msg: 'graphql request',
      requestId: 'log-1',
      traceId: expect.stringMatching(/^[0-9a-f]{32}$/),
      operation: 'Box',
      outcome: 'ok',
      status: 200,
      durationMs: expect.any(Number),
      upstreamCalls: 1,
      errorCodes: [],
    });
    // A field that wants a token the caller did not send: the caller's mistake, not the gateway's.
    expect(lines[1]).toMatchObject({
      operation: 'Contracts',
      outcome: 'invalid',
      upstreamCalls: 0,
      errorCodes: ['UNAUTHENTICATED'],
    });
    expect(lines[2]).toMatchObject({
      operation: 'Failing',
      upstreamCalls: 1,
      errorCodes: ['UNAUTHENTICATED'],
    });
    // A value that fails coercion is quoted in the GraphQL error; it must not reach the log.
    await post({ query: 'query Height($h: Int!) { block(height: $h) { hash } }', variables: { h: text } });
    expect(lines).toHaveLength(4);
    expect(lines[3]).toMatchObject({
      operation: 'Height',
      outcome: 'invalid',
      upstreamCalls: 0,
      errorCodes: ['BAD_USER_INPUT'],
    });
    const all = raw.join('');
    for (const secret of [token, text, 'authorization', 'Bearer']) expect(all).not.toContain(secret);
  });
});

describe('metrics', () => {
  it('serves Prometheus text with request, error, upstream, cache, circuit and in-flight series', async () => {
    // A gateway of its own: its counters start at zero and its validator cache cold, whatever other
    // tests of this file sent.
    const own = createGateway({
      ...testSettings({ validatorCacheTtlMs: 60_000 }),
      upstreamUrls: devnet.urls,
    });
    const server = await listen(own);
    try {
      await postTo(server.url, { query: 'query Stats { validatorStatistics { totalValidators } }' });
      await postTo(server.url, { query: 'query Stats { validatorStatistics { totalValidators } }' });
      await postTo(server.url, { query: 'query Bad { validators(page: 0) { nodes { moniker } } }' });
      const res = await fetch(server.url.replace('/graphql', '/metrics'));
      expect(res.headers.get('content-type')).toContain('text/plain');
      const text = await res.text();
      const value = (pattern: RegExp) => sample(text, pattern);
      expect(value(/^graphql_requests_total\{operation="Stats",outcome="ok"\} (\d+)/m)).toBe(2);
      // An argument its field refuses is the caller's mistake (outcome invalid), as a query that does
      // not validate is: the availability SLI leaves both out.
      expect(value(/^graphql_requests_total\{operation="Bad",outcome="invalid"\} (\d+)/m)).toBe(1);
      expect(value(/^graphql_errors_total\{code="BAD_USER_INPUT"\} (\d+)/m)).toBe(1);
      expect(value(/^graphql_request_duration_seconds_count\{operation="Stats"\} (\d+)/m)).toBe(2);
      // The first Stats reads the validator list page by page; the second finds it in the cache.
      expect(
        value(
          /^upstream_requests_total\{upstream="stake",endpoint="\/stake\/validators",status="200"\} (\d+)/m,
        ),
      ).toBe(Math.ceil(devnet.data.validators.length / 100));
      expect(text).toMatch(
        /^upstream_request_duration_seconds_bucket\{le="0.005",upstream="stake",endpoint="\/stake\/validators"\} \d+/m,
      );
      expect(value(/^cache_requests_total\{cache="validators",result="hit"\} (\d+)/m)).toBe(1);
      expect(value(/^cache_requests_total\{cache="validators",result="miss"\} (\d+)/m)).toBe(1);
      expect(value(/^upstream_circuit_state\{upstream="stake"\} (\d+)/m)).toBe(0);
      expect(value(/^http_requests_in_flight (\d+)/m)).toBe(1);
      expect(text).toMatch(/^process_resident_memory_bytes \d+/m);
    } finally {
      await server.close();
      await own.close();
    }
  });

  it('bounds operation-name labels that callers control', async () => {
    await post({ query: 'query Weird { __typename }', operationName: 'Weird' });
    await post({ query: '{ __typename }', operationName: 'not-valid!' });
    const text = await scrape(http.url);
    expect(text).not.toContain('not-valid!');
  });
});

describe('hostile operation names', () => {
  it('never reach a metric label, and never break the request or the process', async () => {
    const invalid = /^graphql_requests_total\{operation="invalid",outcome="invalid"\} (\d+)/m;
    // Other tests of this file send invalid operation names too: count this test's own.
    const before = sample(await scrape(http.url), invalid) || 0;
    const names = [['a'], { x: 1 }, 42, 'ok-name?'];
    for (const operationName of names) {
      const res = await post({ query: '{ __typename }', operationName });
      expect(res.status).toBe(400);
    }
    expect(sample(await scrape(http.url), invalid)).toBe(before + names.length);
  });
});

describe('a request the client abandons', () => {
  // The same lifecycle (src/exchange/exchange.ts) whichever path answers: the adapter's own, or Yoga's.
  const paths = [
    {
      path: 'a JSON POST (the fast path)',
      requestId: 'gone-0',
      send: (requestId: string, signal: AbortSignal) =>
        fetch(http.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-request-id': requestId },
          body: JSON.stringify({ query: 'query Abandoned { search(query: "78") { query } }' }),
          signal,
        }),
    },
    {
      path: "a GET (Yoga's path)",
      requestId: 'gone-1',
      send: (requestId: string, signal: AbortSignal) =>
        fetch(
          `${http.url}?query=${encodeURIComponent('query Abandoned { search(query: "79") { query } }')}`,
          {
            headers: { accept: 'application/json', 'x-graphql-csrf': '1', 'x-request-id': requestId },
            signal,
          },
        ),
    },
  ];
  for (const { path, requestId, send } of paths) {
    it(`is logged with status 499 and its upstream call cancelled: ${path}`, async () => {
      // The search service answers late; the client leaves once the gateway has called it.
      devnet.setLatency(2_000);
      const scan = gateway.upstreams.scan;
      const search = scan.search.bind(scan);
      let called = (_call: { result: Promise<unknown> }) => {};
      const upstreamCalled = new Promise<{ result: Promise<unknown> }>((resolve) => (called = resolve));
      const spy = vi.spyOn(scan, 'search').mockImplementation((...args) => {
        const result = search(...args);
        called({ result });
        return result;
      });
      try {
        const client = new AbortController();
        const abandoned = send(requestId, client.signal).catch((e: Error) => e.name);
        const { result } = await upstreamCalled;
        client.abort();
        expect(await abandoned).toBe('AbortError');
        expect(await logLine((l) => l.requestId === requestId)).toMatchObject({
          operation: 'Abandoned',
          status: 499,
        });
        await expect(result).rejects.toThrow();
        expect(spy).toHaveBeenCalledTimes(1);
      } finally {
        spy.mockRestore();
        devnet.setLatency(0);
      }
    });
  }
});

describe('the client a request names', () => {
  // Apollo Client's headers (`new ApolloClient({ name, version })`), and Hive's convention.
  const apollo = { 'apollographql-client-name': 'explorer-web', 'apollographql-client-version': '1.2.3' };
  const clientRequests = (text: string, name: string, version: string, outcome: string) =>
    sample(
      text,
      new RegExp(
        `^graphql_client_requests_total\\{client_name="${name}",client_version="${version}",outcome="${outcome}"\\} (\\d+)`,
        'm',
      ),
    );

  it('labels its metrics and its log line, on both paths', async () => {
    const own = createGateway({ ...testSettings(), upstreamUrls: devnet.urls });
    const server = await listen(own);
    try {
      // The fast path (a JSON POST) and Yoga's (a GET), and one without a name.
      await postTo(server.url, { query: 'query Stats { validatorStatistics { totalValidators } }' }, apollo);
      await fetch(`${server.url}?query=${encodeURIComponent('query Stats { __typename }')}`, {
        headers: { accept: 'application/json', 'x-graphql-csrf': '1', ...apollo },
      });
      await postTo(
        server.url,
        { query: '{ __typename }' },
        {
          'graphql-client-name': 'ops console',
          'graphql-client-version': '7',
        },
      );
      await postTo(server.url, { query: '{ __typename }' });
      const text = await scrape(server.url);
      expect(clientRequests(text, 'explorer-web', '1.2.3', 'ok')).toBe(2);
      // Hive's headers too; a character outside [A-Za-z0-9._-] becomes `_`.
      expect(clientRequests(text, 'ops_console', '7', 'ok')).toBe(1);
      expect(clientRequests(text, 'unknown', 'unknown', 'ok')).toBe(1);
      expect(text.match(/^graphql_client_requests_total\{/gm)).toHaveLength(3);
    } finally {
      await server.close();
      await own.close();
    }
  });

  it('writes them in its log line, sanitized and cut to 64 characters', async () => {
    await post({ query: 'query Named { __typename }' }, { ...apollo, 'x-request-id': 'client-1' });
    expect(await logLine((l) => l.requestId === 'client-1')).toMatchObject({
      operation: 'Named',
      clientName: 'explorer-web',
      clientVersion: '1.2.3',
    });
    await fetch(`${http.url}?query=${encodeURIComponent('query Named { __typename }')}`, {
      headers: { accept: 'application/json', 'x-graphql-csrf': '1', 'x-request-id': 'client-2', ...apollo },
    });
    expect(await logLine((l) => l.requestId === 'client-2')).toMatchObject({
      clientName: 'explorer-web',
      clientVersion: '1.2.3',
    });
    await post(
      { query: '{ __typename }' },
      { 'apollographql-client-name': `a\u00e9b<script>${'x'.repeat(100)}`, 'x-request-id': 'client-3' },
    );
    const long = await logLine((l) => l.requestId === 'client-3');
    expect(long.clientName).toBe(`a_b_script_${'x'.repeat(53)}`);
    expect(long.clientVersion).toBeUndefined();
    await post({ query: '{ __typename }' }, { 'x-request-id': 'client-4' });
    const none = await logLine((l) => l.requestId === 'client-4');
    expect('clientName' in none).toBe(false);
  });

  it('keeps the labels of a flood of names within the cap, plus `other`', async () => {
    const own = createGateway({ ...testSettings(), upstreamUrls: devnet.urls });
    const server = await listen(own);
    try {
      for (let i = 0; i < 200; i++) {
        const res = await postTo(
          server.url,
          { query: '{ __typename }' },
          {
            'apollographql-client-name': `flood-${i}`,
            'apollographql-client-version': `${i}.0`,
          },
        );
        expect(res.status).toBe(200);
      }
      const text = await scrape(server.url);
      const series = [
        ...text.matchAll(
          /^graphql_client_requests_total\{client_name="([^"]*)",client_version="([^"]*)",outcome="ok"\} (\d+)/gm,
        ),
      ];
      const names = new Set(series.map(([, name]) => name));
      const versions = new Set(series.map(([, , version]) => version));
      expect(names.size).toBe(MAX_CLIENT_LABELS + 1);
      expect(versions.size).toBe(MAX_CLIENT_LABELS + 1);
      expect(names.has('other')).toBe(true);
      expect(names.has(`flood-${MAX_CLIENT_LABELS - 1}`)).toBe(true);
      expect(names.has(`flood-${MAX_CLIENT_LABELS}`)).toBe(false);
      expect(series.reduce((sum, [, , , n]) => sum + Number(n), 0)).toBe(200);
      expect(clientRequests(text, 'other', 'other', 'ok')).toBe(200 - MAX_CLIENT_LABELS);
    } finally {
      await server.close();
      await own.close();
    }
  });
});
