import { readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import type { ExecutionResult } from 'graphql';
import { GraphQLError } from 'graphql';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Devnet, startDevnet } from '../../src/devnet/index.js';
import { jsonLogOptions } from '../../src/ops/logger.js';
import { GatewayMetrics } from '../../src/ops/metrics.js';
import { finishTrace, recordResult, startTrace } from '../../src/ops/request-trace.js';
import { type FaultUpstream, startFaultUpstream } from '../support/fault-upstream.js';
import { startServerProcess } from '../support/server-process.js';

/**
 * What an operator's log pipeline and Prometheus read of a running process (contract.md §9, Logs
 * and build): JSON lines with string levels (the start banner among them), a failed request logged
 * at warn or error, so that LOG_LEVEL=warn keeps it and drops the successes; and `build_info`.
 */

const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };

describe('a gateway process at LOG_LEVEL=warn whose search service fails', () => {
  let devnet: Devnet;
  let scan: FaultUpstream;
  let gateway: ReturnType<typeof startServerProcess>;
  /** What the process wrote to stdout alone (its log), line by line. */
  let stdout = '';
  const lines = () =>
    stdout
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => ({ raw: line, json: JSON.parse(line) as Record<string, unknown> }));

  beforeAll(async () => {
    devnet = await startDevnet({ seed: 'logs' });
    scan = await startFaultUpstream(devnet.urls.scan);
    gateway = startServerProcess({
      SCAN_URL: scan.url,
      EXPLORER_URL: devnet.urls.explorer,
      STAKE_URL: devnet.urls.stake,
      LOG_LEVEL: 'warn',
      BUILD_REVISION: '0123abcd',
      RATE_LIMIT_POINTS: '0',
    });
    gateway.child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    await gateway.listening;
  });
  afterAll(async () => {
    gateway?.child.kill('SIGKILL');
    await scan?.close();
    await devnet?.close();
  });

  const post = (requestId: string, query: string) =>
    fetch(gateway.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': requestId },
      body: JSON.stringify({ query }),
    }).then(async (res) => ({ status: res.status, body: (await res.json()) as ExecutionResult }));

  /**
   * Resolves once stdout holds a line `match` accepts. It waits on the process's output as a whole
   * (the helper's event), then reads stdout alone, which has the same chunk by then.
   */
  const logged = async (match: (line: Record<string, unknown>) => boolean) => {
    await gateway.waitFor((output) =>
      output.split('\n').some((line) => line.startsWith('{') && match(JSON.parse(line))) ? true : null,
    );
    return lines().filter(({ json }) => match(json));
  };

  it('writes its start banner as JSON lines at info, whatever LOG_LEVEL, naming its build', async () => {
    // The warning about CURSOR_SECRET is a log line like any other, flushed within a second.
    const [warning] = await logged((line) => String(line.msg).startsWith('CURSOR_SECRET'));
    expect(warning?.raw).toContain('"level":"warn"');
    // Everything on stdout parses (lines() would throw): the banner, the warning.
    const banner = lines().filter(({ json }) => String(json.msg).startsWith('gateway listening on'));
    expect(banner).toHaveLength(1);
    expect(banner[0]?.raw).toContain('"level":"info"');
    expect(banner[0]?.json).toMatchObject({
      level: 'info',
      endpoint: gateway.url,
      version,
      revision: '0123abcd',
      msg: `gateway listening on ${gateway.url} (1 process) (open it in a browser for GraphiQL)`,
    });
  });

  it('logs a request failed by an upstream as one warn line, and neither a success nor a caller’s mistake', async () => {
    const ok = await post('ok-1', '{ validatorStatistics { totalValidators } }');
    expect(ok.body.errors).toBeUndefined();
    const mistake = await post('bad-1', '{ block(height: -1) { hash } }');
    expect(mistake.body.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    scan.set('/', 'stacktrace500');
    const failed = await post(
      'fail-1',
      '{ validatorStatistics { totalValidators } searchSuggestions(query: "9") { query } }',
    );
    expect(failed.body.data?.validatorStatistics).not.toBeNull();
    expect(failed.body.errors?.map((e) => e.extensions?.code)).toEqual(['UPSTREAM_ERROR']);
    // Lines leave in order: once the failure's line is out, the two before it would be too.
    const [line, ...more] = await logged((json) => json.requestId === 'fail-1');
    expect(more).toEqual([]);
    expect(line?.raw).toContain('"level":"warn"');
    expect(line?.json).toMatchObject({
      level: 'warn',
      msg: 'graphql request',
      outcome: 'partial',
      status: 200,
      errorCodes: ['UPSTREAM_ERROR'],
    });
    const requests = lines().filter(({ json }) => json.msg === 'graphql request');
    expect(requests.map(({ json }) => json.requestId)).toEqual(['fail-1']);
  });

  it('serves build_info with package.json’s version and BUILD_REVISION', async () => {
    const text = await (await fetch(gateway.url.replace('/graphql', '/metrics'))).text();
    expect(text).toContain(`build_info{version="${version}",revision="0123abcd"} 1\n`);
    expect(text).toContain('graphql_subscriptions_limit 10000\n');
  });
});

describe('the image', () => {
  it('labels itself as OCI says, with package.json’s version, and hands its revision to build_info', () => {
    const dockerfile = readFileSync('Dockerfile', 'utf8');
    expect(dockerfile).toContain(`ARG VERSION=${version}\n`);
    expect(dockerfile).toMatch(/^ARG REVISION=unknown$/m);
    expect(dockerfile).toMatch(/^ENV BUILD_REVISION=\$\{REVISION\}$/m);
    for (const label of ['source', 'version', 'revision'])
      expect(dockerfile).toMatch(new RegExp(`org\\.opencontainers\\.image\\.${label}=`));
  });
});

describe('the request log line', () => {
  const metrics = new GatewayMetrics(() => ({ scan: 'closed', explorer: 'closed', stake: 'closed' }));
  const written: string[] = [];
  const logger = pino(
    jsonLogOptions('info'),
    new Writable({
      write(chunk, _encoding, done) {
        written.push(chunk.toString());
        done();
      },
    }),
  );
  const error = (code: string) => new GraphQLError('x', { extensions: { code } });
  /** The level and outcome of the line one answer makes. */
  const logged = (result: ExecutionResult, status = 200) => {
    const trace = startTrace(() => null, false);
    recordResult(trace, result);
    written.length = 0;
    finishTrace({ metrics, logger }, trace, status);
    expect(written).toHaveLength(1);
    const line = JSON.parse(written[0] as string);
    return `${line.level} ${line.outcome}`;
  };

  it('is at info for an answer or a caller’s mistake, warn for an upstream’s failure, error for the gateway’s own', () => {
    expect(logged({ data: { a: 1 } })).toBe('info ok');
    expect(logged({ errors: [error('BAD_USER_INPUT')] }, 400)).toBe('info invalid');
    // A field's argument refused, an absent token, an unknown persisted query: still the caller's.
    expect(logged({ data: { a: null }, errors: [error('BAD_USER_INPUT')] })).toBe('info invalid');
    expect(logged({ data: { a: null, b: 1 }, errors: [error('UNAUTHENTICATED')] })).toBe('info invalid');
    expect(logged({ errors: [error('PERSISTED_QUERY_NOT_FOUND')] })).toBe('info invalid');
    // Over its budget: the caller's 429, counted apart from its mistakes (an alert watches its share).
    expect(logged({ errors: [error('RATE_LIMITED')] }, 429)).toBe('info rate_limited');
    expect(logged({ data: { a: null, b: 1 }, errors: [error('UPSTREAM_ERROR')] })).toBe('warn partial');
    expect(logged({ data: { a: null }, errors: [error('UPSTREAM_TIMEOUT'), error('BAD_USER_INPUT')] })).toBe(
      'warn error',
    );
    expect(logged({ data: { a: null, b: 1 }, errors: [error('INTERNAL_SERVER_ERROR')] })).toBe(
      'error partial',
    );
    // Refused before execution for a fault of the gateway's: not the caller's mistake.
    expect(logged({ errors: [error('INTERNAL_SERVER_ERROR')] }, 500)).toBe('error error');
    expect(logged({ data: { a: 1 } }, 503)).toBe('error ok');
  });
});
