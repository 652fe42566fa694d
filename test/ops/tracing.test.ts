import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { type Devnet, startDevnet } from '../../src/devnet/index.js';
import { createGateway, type Gateway } from '../../src/gateway.js';
import { flushTracing, startTracing, stopTracing, tracingEnabled } from '../../src/ops/tracing.js';
import { listen, preparedRequests } from '../gateway/helpers.js';
import { startFaultUpstream } from '../support/fault-upstream.js';

/**
 * OpenTelemetry as an operator sees it: an in-process OTLP/HTTP receiver (`http/json`) on a free
 * port collects what the gateway exports. Off by default (no endpoint): nothing is built or
 * exported and the SDK is not even loaded, but the caller's trace still reaches the upstreams.
 */

const require = createRequire(import.meta.url);
const sdkLoaded = () =>
  Object.keys(require.cache).some((path) => path.includes('@opentelemetry/sdk-trace-node'));

const CALLER_TRACE = '0af7651916cd43dd8448eb211c80319c';
const CALLER_SPAN = 'b7ad6b7169203331';
const TRACEPARENT = `00-${CALLER_TRACE}-${CALLER_SPAN}-01`;
const SECRETS = { search: 'zzsecrettext', token: 'tok-secret-4711' };
const QUERY =
  'query TwoUpstreams($q: String!) { searchSuggestions(query: $q) { query } validatorStatistics { totalValidators } }';

let devnet: Devnet;
let receiver: Server;
let endpoint: string;
const exported: string[] = [];

beforeAll(async () => {
  devnet = await startDevnet({ seed: 'tracing', record: true });
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', () => {
      exported.push(body);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  endpoint = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await stopTracing();
  await devnet?.close();
  receiver?.close();
});

/** A gateway whose request log lines can be awaited: the line is written once the request's span ended. */
function gatewayWithLog(): {
  gateway: Gateway;
  logged(operation: string): Promise<Record<string, unknown>>;
} {
  const waiters: { operation: string; resolve: (line: Record<string, unknown>) => void }[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      const line = JSON.parse(chunk.toString());
      for (const w of waiters.filter((w) => w.operation === line.operation)) w.resolve(line);
      done();
    },
  });
  const config = loadConfig({});
  const gateway = createGateway({
    ...config,
    // No block poller kept running by a latest answer: its polls would be traces of their own.
    live: { ...config.live, headHoldMs: 0 },
    upstreamUrls: devnet.urls,
    logger: pino({ level: 'info' }, stream),
  });
  return {
    gateway,
    logged: (operation) => new Promise((resolve) => waiters.push({ operation, resolve })),
  };
}

async function post(url: string, headers: Record<string, string>) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ query: QUERY, variables: { q: SECRETS.search } }),
  });
  expect(res.status).toBe(200);
  expect((await res.json()).errors).toBeUndefined();
}

interface ExportedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: { key: string; value: { stringValue?: string; intValue?: string | number } }[];
  status?: { code?: number };
}

const spansOf = (bodies: string[]): ExportedSpan[] =>
  bodies.flatMap((body) =>
    (JSON.parse(body).resourceSpans ?? []).flatMap((r: { scopeSpans: { spans: ExportedSpan[] }[] }) =>
      r.scopeSpans.flatMap((s) => s.spans),
    ),
  );
const attribute = (span: ExportedSpan, key: string) => {
  const value = span.attributes.find((a) => a.key === key)?.value;
  return value?.stringValue ?? (value?.intValue === undefined ? undefined : Number(value.intValue));
};
const traceparentsSeen = () => devnet.requests.map((r) => r.headers.traceparent);

describe('tracing off (no OTLP endpoint)', () => {
  it('loads no SDK, builds no span, and continues the caller’s trace into the upstreams', async () => {
    await startTracing(loadConfig({}).tracing);
    expect(tracingEnabled()).toBe(false);
    expect(sdkLoaded()).toBe(false);
    const { gateway, logged } = gatewayWithLog();
    const http = await listen(gateway);
    try {
      devnet.resetRecords();
      const done = logged('TwoUpstreams');
      await post(http.url, { traceparent: TRACEPARENT });
      await done;
      const seen = traceparentsSeen();
      expect(seen.length).toBe(1 + Math.ceil(devnet.data.validators.length / 100));
      expect(new Set(seen)).toEqual(new Set([TRACEPARENT]));

      devnet.resetRecords();
      await post(http.url, {});
      expect(traceparentsSeen().every((t) => t === undefined)).toBe(true);
    } finally {
      await http.close();
      await gateway.close();
    }
    expect(exported).toEqual([]);
  });
});

describe('tracing on (OTLP/HTTP JSON)', () => {
  it('names the pod, namespace and node that OTEL_RESOURCE_ATTRIBUTES gives, beside the service', async () => {
    // What the manifests pass through the Downward API. Read when the SDK starts, which it does
    // once per process (its tracer provider is global): the first test to start it sets them.
    process.env.OTEL_RESOURCE_ATTRIBUTES =
      'k8s.pod.name=chain-gateway-7d9f8-x2k4q,k8s.namespace.name=explorer,k8s.node.name=node-3';
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = endpoint;
    process.env.OTEL_EXPORTER_OTLP_PROTOCOL = 'http/json';
    await startTracing(loadConfig(process.env).tracing);
    const { gateway, logged } = gatewayWithLog();
    const http = await listen(gateway);
    exported.length = 0;
    try {
      const done = logged('TwoUpstreams');
      await post(http.url, { 'x-request-id': 'pod-identity' });
      await done;
      await flushTracing();
    } finally {
      await http.close();
      await gateway.close();
    }
    const batches = exported.flatMap(
      (body) =>
        JSON.parse(body).resourceSpans as {
          resource: { attributes: ExportedSpan['attributes'] };
          scopeSpans: { spans: ExportedSpan[] }[];
        }[],
    );
    const server = batches.find((batch) =>
      batch.scopeSpans.some((scope) =>
        scope.spans.some((span) => span.kind === 2 && attribute(span, 'request.id') === 'pod-identity'),
      ),
    );
    const resource = Object.fromEntries(
      (server?.resource.attributes ?? []).map(({ key, value }) => [key, value.stringValue]),
    );
    expect(resource).toMatchObject({
      'service.name': 'chain-gateway',
      'k8s.pod.name': 'chain-gateway-7d9f8-x2k4q',
      'k8s.namespace.name': 'explorer',
      'k8s.node.name': 'node-3',
    });
  });

  it('exports a server span per request and a client span per upstream call, linked to the caller', async () => {
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = endpoint;
    process.env.OTEL_EXPORTER_OTLP_PROTOCOL = 'http/json';
    await startTracing(loadConfig(process.env).tracing);
    expect(tracingEnabled()).toBe(true);
    expect(sdkLoaded()).toBe(true);
    const { gateway, logged } = gatewayWithLog();
    const http = await listen(gateway);
    let line: Record<string, unknown> = {};
    exported.length = 0;
    try {
      devnet.resetRecords();
      const done = logged('TwoUpstreams');
      await post(http.url, {
        traceparent: TRACEPARENT,
        authorization: `Bearer ${SECRETS.token}`,
        'x-request-id': 'traced-1',
      });
      line = await done;
      await flushTracing();
    } finally {
      await http.close();
      await gateway.close();
    }

    const spans = spansOf(exported);
    const server = spans.find((s) => s.kind === 2); // SERVER
    const others = spans.filter((s) => s !== server);
    expect(server?.name).toBe('TwoUpstreams');
    expect(server?.traceId).toBe(CALLER_TRACE);
    expect(server?.parentSpanId).toBe(CALLER_SPAN);
    expect(attribute(server as ExportedSpan, 'http.response.status_code')).toBe(200);
    expect(attribute(server as ExportedSpan, 'graphql.operation.name')).toBe('TwoUpstreams');
    // The request id, the log line's trace id and the span agree.
    expect(attribute(server as ExportedSpan, 'request.id')).toBe('traced-1');
    expect(line).toMatchObject({ requestId: 'traced-1', traceId: CALLER_TRACE });

    const pages = Math.ceil(devnet.data.validators.length / 100);
    expect(others).toHaveLength(1 + pages);
    for (const client of others) {
      expect(client.kind).toBe(3); // CLIENT
      expect(client.name).toBe('GET');
      expect(client.traceId).toBe(CALLER_TRACE);
      expect(client.parentSpanId).toBe(server?.spanId);
      expect(attribute(client, 'http.request.method')).toBe('GET');
      expect(attribute(client, 'server.address')).toBe('127.0.0.1');
      expect(attribute(client, 'http.response.status_code')).toBe(200);
      expect(String(attribute(client, 'url.path'))).not.toContain('?');
    }
    expect(others.map((s) => attribute(s, 'url.path')).sort()).toEqual(
      ['/api/v1/dex/search', ...Array(pages).fill('/stake/validators')].sort(),
    );

    // Each upstream request carried its own client span's id, in the caller's trace.
    const seen = traceparentsSeen();
    expect(seen.sort()).toEqual(others.map((s) => `00-${CALLER_TRACE}-${s.spanId}-01`).sort());

    // No search text, variable value or token in any exported byte.
    const bytes = exported.join('\n');
    expect(bytes).not.toContain(SECRETS.search);
    expect(bytes).not.toContain(SECRETS.token);
    expect(bytes).not.toContain('authorization');
  });

  it('a hot query’s prepared request exports the same spans as its first request', async () => {
    // Kept and compiled on first use: the second request runs its prepared request. No caches, so
    // that both make the same upstream calls.
    const config = loadConfig({});
    const gateway = createGateway({
      ...config,
      documents: { ...config.documents, keepAfter: 1, compileAfter: 1 },
      validatorCacheTtlMs: 0,
      responseCacheTtlMs: 0,
      upstreamUrls: devnet.urls,
      logger: pino({ level: 'silent' }),
    });
    const http = await listen(gateway);
    exported.length = 0;
    try {
      await post(http.url, { traceparent: TRACEPARENT, 'x-request-id': 'first' });
      expect(await preparedRequests(http.url)).toBe(0);
      await post(http.url, { traceparent: TRACEPARENT, 'x-request-id': 'prepared' });
      expect(await preparedRequests(http.url)).toBe(1);
      await flushTracing();
    } finally {
      await http.close();
      await gateway.close();
    }
    const spans = spansOf(exported);
    // A request's spans as a shape: its server span and its client spans, ids and times aside.
    const shape = (requestId: string) => {
      const server = spans.find(
        (s) => s.kind === 2 && attribute(s, 'request.id') === requestId,
      ) as ExportedSpan;
      const strip = (span: ExportedSpan) => ({
        name: span.name,
        kind: span.kind,
        traceId: span.traceId,
        status: span.status,
        attributes: span.attributes.filter((a) => a.key !== 'request.id'),
      });
      const clients = spans.filter((s) => s.parentSpanId === server.spanId).map(strip);
      return {
        server: { ...strip(server), parent: server.parentSpanId },
        clients: clients.sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
      };
    };
    const first = shape('first');
    expect(first.server.name).toBe('TwoUpstreams');
    expect(first.clients).toHaveLength(1 + Math.ceil(devnet.data.validators.length / 100));
    expect(shape('prepared')).toEqual(first);
  });

  it('shows a retry as a second client span and an event, and a circuit refusal as an event', async () => {
    const scan = await startFaultUpstream(devnet.urls.scan);
    scan.set('/', 'reset');
    const gateway = createGateway({
      ...loadConfig({}),
      // The call and its retry open the circuit; the next call is refused.
      circuitFailureThreshold: 2,
      upstreamUrls: { ...devnet.urls, scan: scan.url },
    });
    exported.length = 0;
    try {
      for (const name of ['Retried', 'Refused']) {
        const res = await gateway.yoga.fetch('http://gateway.test/graphql', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ query: `query ${name} { searchSuggestions(query: "12") { query } }` }),
        });
        expect((await res.json()).errors?.[0]?.extensions.code).toBe('UPSTREAM_UNAVAILABLE');
      }
      await flushTracing();
    } finally {
      await gateway.close();
      await scan.close();
    }
    const spans = spansOf(exported);
    const retried = spans.find((s) => s.name === 'Retried') as ExportedSpan & { events?: { name: string }[] };
    const refused = spans.find((s) => s.name === 'Refused') as ExportedSpan & { events?: { name: string }[] };
    const clients = spans.filter((s) => s.parentSpanId === retried.spanId);
    expect(clients.map((c) => attribute(c, 'http.request.resend_count') ?? 0)).toEqual([0, 1]);
    expect(clients.map((c) => attribute(c, 'error.type'))).toEqual([
      'UPSTREAM_UNAVAILABLE',
      'UPSTREAM_UNAVAILABLE',
    ]);
    expect(retried.events?.map((e) => e.name)).toEqual(['upstream.retry']);
    // The open circuit refuses the call before any request leaves: an event, no client span.
    expect(spans.filter((s) => s.parentSpanId === refused.spanId)).toEqual([]);
    expect(refused.events?.map((e) => e.name)).toEqual(['upstream.refused']);
    expect(scan.requests).toHaveLength(2);
  });
});
