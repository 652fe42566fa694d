import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import type { Socket } from 'node:net';
import { endianness } from 'node:os';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { loadConfig, type ServerLimits } from '../../src/config.js';
import type { Gateway } from '../../src/gateway.js';
import { listen, notPolls, parseAnswer, testSettings, useGatewayOnDevnet } from '../gateway/helpers.js';
import { type RawClient, rawSockets } from '../support/raw-socket.js';
import { type Started, startServerProcess } from '../support/server-process.js';
import { until } from '../support/until.js';

/**
 * Intake is bounded (contract.md §8): the bytes of request bodies in flight per process
 * (MAX_INFLIGHT_BODY_BYTES, 503), a client's connections (MAX_CONNECTIONS_PER_CLIENT, 429) and a
 * body's pace (MIN_BODY_RATE after BODY_TIMEOUT_MS, 408), each refused before anything reads the
 * body, with no upstream call, and counted in `http_requests_refused_total{reason}`
 * (src/http/intake.ts). First the attack on the real process; then each bound on its own, served
 * in process as main.ts serves it.
 */

const env = useGatewayOnDevnet();
const processes: Started[] = [];
const servers: Awaited<ReturnType<typeof listen>>[] = [];
const raw = rawSockets();
const rawSocket = raw.connect;
afterEach(async () => {
  raw.destroyAll();
  await Promise.all(servers.splice(0).map((s) => s.close()));
});
afterAll(() => {
  for (const started of processes) started.child.kill('SIGKILL');
});

const QUERY = JSON.stringify({ query: '{ validatorStatistics { totalValidators } }' });

/** A request's head, announcing `length` bytes of JSON body. */
const head = (length: number, extra = '') =>
  `POST /graphql HTTP/1.1\r\nHost: gateway.test\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n${extra}\r\n`;

/** One request on a connection of its own from `from`: its status, headers and parsed answer. */
function post(url: string, body: string, from: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; headers: Record<string, unknown>; body: any }>((resolve, reject) => {
    const req = httpRequest(
      url,
      {
        method: 'POST',
        localAddress: from,
        agent: false,
        headers: { 'content-type': 'application/json', ...headers },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () =>
          resolve({ status: res.statusCode as number, headers: res.headers, body: parseAnswer(text) }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** The JSON answer of a raw HTTP/1.1 response. */
const answerOf = (raw: string) => parseAnswer(raw.slice(raw.indexOf('\r\n\r\n') + 4));

/** VmRSS of a process, in bytes. */
function rss(pid: number): number {
  const kb = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) * 1024;
}

/** An IPv4 endpoint as /proc/net/tcp writes it (the address in host order): `0100007F:1F90`. */
function procEndpoint(address: string, port: number): string {
  const bytes = Buffer.from(address.split('.').map(Number));
  const host = endianness() === 'LE' ? bytes.readUInt32LE() : bytes.readUInt32BE();
  return `${host.toString(16).padStart(8, '0')}:${port.toString(16).padStart(4, '0')}`.toUpperCase();
}

/**
 * The unread bytes queued on both ends of each loopback TCP connection to `port`, by the client's
 * endpoint (/proc/net/tcp): the client's send queue and the server's receive queue. Both at 0:
 * every byte the client wrote has been read by the server process.
 */
function queuedTo(port: number): Map<string, number> {
  const server = procEndpoint('127.0.0.1', port);
  const queued = new Map<string, number>();
  for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const [, local, remote, , queues] = line.trim().split(/\s+/);
    if (!local || !remote || !queues) continue;
    const [tx, rx] = queues.split(':').map((hex) => Number.parseInt(hex, 16)) as [number, number];
    // The server's end reads from the client; the client's end writes to the server.
    if (local === server) queued.set(remote, (queued.get(remote) ?? 0) + rx);
    else if (remote === server) queued.set(local, (queued.get(local) ?? 0) + tx);
  }
  return queued;
}

/**
 * Whether the server has read all that `clients` wrote (nothing queued at either end of their
 * connections), or closed them.
 */
function settled(port: number, clients: RawClient[]): boolean {
  const queued = queuedTo(port);
  return clients.every(
    ({ socket }) =>
      socket.destroyed ||
      (socket.writableLength === 0 &&
        queued.get(procEndpoint(socket.localAddress as string, socket.localPort as number)) === 0),
  );
}

/** A sample of the gateway's /metrics, read from `from` (another client than the attacker). */
async function metric(url: string, name: string, from: string): Promise<number> {
  const text = await new Promise<string>((resolve, reject) => {
    const req = httpRequest(new URL('/metrics', url), { localAddress: from, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => resolve(body));
    });
    req.on('error', reject);
    req.end();
  });
  const line = text.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}

describe('the real process under 150 stalled 1 MB bodies from one address', () => {
  const IDLE_MARGIN = 32 * 1024 * 1024;

  // A process to start and warm, 151 connections and 8 MB to send: more than the default 20 s when
  // the suite runs files side by side.
  it('keeps its RSS within 32 MB of idle, and refuses the 151st connection', {
    timeout: 60_000,
  }, async () => {
    const { urls } = env.devnet;
    const gateway = startServerProcess({
      SCAN_URL: urls.scan,
      EXPLORER_URL: urls.explorer,
      STAKE_URL: urls.stake,
      RATE_LIMIT_POINTS: '0',
      // The heap as the image runs it (Dockerfile): a young generation left to grow to its default
      // would move RSS by tens of MB with allocation alone.
      NODE_OPTIONS: '--max-semi-space-size=16 --max-old-space-size=512',
      // Set explicitly, so that the in-flight budget is what holds, not only the smaller default cap.
      MAX_REQUEST_BYTES: '1000000',
      MAX_CONNECTIONS_PER_CLIENT: '150',
      // The whole budget for one address, and the stalls' first bytes awaited as long as their pace
      // (body-bounds.test.ts holds one address to its share, and cuts bodies that send nothing).
      MAX_INFLIGHT_BODY_BYTES_PER_CLIENT: '8000000',
      BODY_FIRST_BYTE_MS: '10000',
    });
    processes.push(gateway);
    await gateway.listening;
    const pid = gateway.child.pid as number;
    const port = Number(new URL(gateway.url).port);
    // Warm, from other client addresses on connections that close: the paths' code loaded, the
    // metrics read once, as the test reads them at the end, and the garbage of loading collected
    // (the heap's first full collection comes within a hundred requests or so; before it, RSS
    // stands tens of MB higher than after).
    for (let i = 0; i < 200; i++) expect((await post(gateway.url, QUERY, '127.0.0.2')).status).toBe(200);
    await metric(gateway.url, 'http_requests_refused_total', '127.0.0.3');
    const idle = rss(pid);
    env.devnet.resetRecords();

    const attackers: RawClient[] = [];
    for (let i = 0; i < 150; i++) attackers.push(await rawSocket(port));
    // Accepted after the 150 (the kernel's accept queue is in order): one too many.
    const extra = await rawSocket(port);
    extra.socket.write(`${head(Buffer.byteLength(QUERY), 'Connection: close\r\n')}${QUERY}`);
    await extra.closed;
    expect(extra.received).toMatch(/^HTTP\/1\.1 429 /);
    expect(extra.received).toMatch(/\r\nretry-after: 1\r\n/i);
    expect(answerOf(extra.received).errors[0].extensions).toEqual({
      code: 'RATE_LIMITED',
      retryAfterMs: 1_000,
    });

    // Each of the 150 announces 1,000,000 bytes, then those still open send 999,000 of them and
    // stall, until the server has read all it will read.
    for (const attacker of attackers) attacker.socket.write(head(1_000_000));
    const admitted = () => metric(gateway.url, 'http_request_body_bytes_in_flight', '127.0.0.3');
    const closed = () => attackers.filter((a) => a.socket.destroyed).length;
    // Every head read, and each request either answered and closed or admitted (read once the
    // heads are, so that the scrapes themselves do not move the figure measured).
    await until(async () => settled(port, attackers) && closed() + (await admitted()) / 1e6 === 150, {
      within: 20_000,
      what: 'every head read, each of the 150 requests answered and closed or admitted',
    });
    const stalled = attackers.filter((a) => !a.socket.destroyed);
    for (const attacker of stalled) attacker.socket.write(Buffer.alloc(999_000, 0x20));
    await until(() => settled(port, attackers), {
      within: 20_000,
      what: 'the server done reading what the stalled bodies sent',
    });
    expect(rss(pid) - idle).toBeLessThan(IDLE_MARGIN);

    // 8 bodies fit MAX_INFLIGHT_BODY_BYTES (8,000,000); the other 142 were answered 503 at once, and
    // closed, before the server read their bodies.
    const refused = attackers.filter((a) => a.socket.destroyed);
    expect(refused).toHaveLength(142);
    for (const { received } of refused) {
      expect(received).toMatch(/^HTTP\/1\.1 503 /);
      expect(received).toMatch(/\r\nretry-after: 1\r\n/i);
      expect(answerOf(received).errors[0].extensions).toEqual({ code: 'RATE_LIMITED', retryAfterMs: 1_000 });
    }
    expect(attackers.filter((a) => !a.socket.destroyed && a.received === '')).toHaveLength(8);
    const scrape = (name: string) => metric(gateway.url, name, '127.0.0.3');
    expect(await scrape('http_request_body_bytes_in_flight')).toBe(8_000_000);
    expect(await scrape('http_requests_refused_total{reason="body_budget"}')).toBe(142);
    expect(await scrape('http_requests_refused_total{reason="client_connections"}')).toBe(1);
    // Nothing of the refused requests, nor of the stalled bodies, reached an upstream.
    expect(env.devnet.counts).toEqual({ scan: 0, explorer: 0, stake: 0 });
  });
});

const defaults = loadConfig({});

/**
 * A cold gateway of the file's devnet (its counters start at 0), served over a real socket with
 * `limits` over the default server limits, behind `trustProxy` proxies.
 */
async function serve(limits: Partial<ServerLimits>, trustProxy = 0) {
  const scale = { ...testSettings().scale, trustProxy };
  const gateway = env.coldGateway({ scale });
  const served = await listen(gateway, { ...defaults.server, ...limits }, { ...defaults, scale });
  servers.push(served);
  return { gateway, ...served, port: Number(new URL(served.url).port) };
}

/** A sample of `name` in the gateway's own registry: the series with `labels`. */
async function sample(gateway: Gateway, name: string, labels: Record<string, string> = {}) {
  const values = (await gateway.metrics.registry.getSingleMetric(name)?.get())?.values ?? [];
  return values.find((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x))?.value ?? 0;
}
const refusals = (gateway: Gateway, reason: string) =>
  sample(gateway, 'http_requests_refused_total', { reason });
const bodyBytes = (gateway: Gateway) => sample(gateway, 'http_request_body_bytes_in_flight');

/** QUERY padded with whitespace to `bytes`: a valid body of that length. */
const padded = (bytes: number) => QUERY.padEnd(bytes, ' ');

const CHUNKED_HEAD =
  'POST /graphql HTTP/1.1\r\nHost: gateway.test\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n';

describe('the bytes of request bodies in flight (MAX_INFLIGHT_BODY_BYTES)', () => {
  it('are refused beyond the budget with 503, retry-after and RATE_LIMITED, then come back once bodies end', async () => {
    const { gateway, url, port } = await serve({ maxInflightBodyBytes: 10_000 });
    const body = padded(9_990);
    const holder = await rawSocket(port);
    holder.socket.write(`${head(9_990, 'Connection: close\r\n')}${body.slice(0, 100)}`);
    await until(async () => (await bodyBytes(gateway)) === 9_990, {
      what: "the held body's 9,990 bytes counted in flight",
    });
    // 58 bytes more than the budget holds.
    const refused = await post(url, QUERY, '127.0.0.2');
    expect(refused.status).toBe(503);
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.headers.connection).toBe('close');
    expect(refused.headers['cache-control']).toBe('no-store');
    expect(refused.body).toEqual({
      errors: [
        {
          message: 'The server is receiving too many request bodies at once: retry shortly.',
          extensions: { code: 'RATE_LIMITED', retryAfterMs: 1_000 },
        },
      ],
    });
    expect(await refusals(gateway, 'body_budget')).toBe(1);
    expect(env.devnet.requests).toHaveLength(0);
    // The held body arrives whole and is answered; its bytes come back, and the next request fits.
    holder.socket.write(body.slice(100));
    await holder.closed;
    expect(holder.received).toMatch(/^HTTP\/1\.1 200 /);
    expect(answerOf(holder.received).data.validatorStatistics.totalValidators).toMatch(/^\d+$/);
    expect(await bodyBytes(gateway)).toBe(0);
    expect((await post(url, QUERY, '127.0.0.2')).status).toBe(200);
    expect(await refusals(gateway, 'body_budget')).toBe(1);
  });

  it("come back when a body's client leaves before sending all of it", async () => {
    const { gateway, url, port } = await serve({ maxInflightBodyBytes: 10_000 });
    const holder = await rawSocket(port);
    holder.socket.write(`${head(9_990)}{"query":`);
    await until(async () => (await bodyBytes(gateway)) === 9_990, {
      what: "the held body's 9,990 bytes counted in flight",
    });
    expect((await post(url, QUERY, '127.0.0.2')).status).toBe(503);
    holder.socket.destroy();
    await until(async () => (await bodyBytes(gateway)) === 0, {
      what: "the departed client's bytes given back",
    });
    expect((await post(url, QUERY, '127.0.0.2')).status).toBe(200);
    expect(await refusals(gateway, 'body_budget')).toBe(1);
  });

  it('let a request that expects 100-continue send its body only once admitted', async () => {
    const { gateway, port } = await serve({ maxInflightBodyBytes: 10_000 });
    const admitted = await rawSocket(port);
    admitted.socket.write(head(9_990, 'Expect: 100-continue\r\n'));
    await until(() => admitted.received.endsWith('\r\n\r\n'), {
      what: 'an interim answer to the admitted request',
    });
    expect(admitted.received).toBe('HTTP/1.1 100 Continue\r\n\r\n');
    const refused = await rawSocket(port, '127.0.0.2');
    refused.socket.write(head(Buffer.byteLength(QUERY), 'Expect: 100-continue\r\n'));
    await refused.closed;
    expect(refused.received).toMatch(/^HTTP\/1\.1 503 /);
    expect(await refusals(gateway, 'body_budget')).toBe(1);
  });

  it('come back once a body has arrived, not when its request ends: open streams hold none of the budget', async () => {
    // Each subscription's body is in, and its stream stays open: were its bytes held for the stream's
    // life, as many streams as the budget holds bodies would refuse every request after them.
    const { gateway, url } = await serve({ maxInflightBodyBytes: 10_000 });
    // Five bodies of 3,000 bytes: half as much again as the budget holds.
    const body = JSON.stringify({ query: 'subscription { blockAdded { height } }'.padEnd(2_988, ' ') });
    expect(Buffer.byteLength(body)).toBe(3_000);
    const streams = await Promise.all(
      Array.from({ length: 5 }, () =>
        fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
          body,
        }),
      ),
    );
    expect(streams.map((res) => res.status)).toEqual(streams.map(() => 200));
    await until(async () => (await bodyBytes(gateway)) === 0, {
      what: "the open streams' body bytes given back",
    });
    expect((await post(url, QUERY, '127.0.0.2')).status).toBe(200);
    expect(await refusals(gateway, 'body_budget')).toBe(0);
    for (const res of streams) await res.body?.cancel();
    // The streams' source stops with them: nothing of this test polls into the next.
    await until(() => gateway.live.hub.sources().length === 0, {
      what: "the streams' source given up once they were cancelled",
    });
  });

  it('count a body of unknown length (chunked) at MAX_REQUEST_BYTES, the worst case', async () => {
    const { gateway, port } = await serve({ maxInflightBodyBytes: 150_000 });
    const first = await rawSocket(port);
    first.socket.write(`${CHUNKED_HEAD}9\r\n{"query":\r\n`);
    await until(async () => (await bodyBytes(gateway)) === defaults.limits.requestBytes, {
      what: 'the chunked body counted at MAX_REQUEST_BYTES',
    });
    const second = await rawSocket(port, '127.0.0.2');
    second.socket.write(`${CHUNKED_HEAD}9\r\n{"query":\r\n`);
    await second.closed;
    expect(second.received).toMatch(/^HTTP\/1\.1 503 /);
    expect(await refusals(gateway, 'body_budget')).toBe(1);
    expect(env.devnet.requests).toHaveLength(0);
  });
});

describe("a client's connections (MAX_CONNECTIONS_PER_CLIENT)", () => {
  /** Long header and request timeouts: what closes a socket here is the cap, not them. */
  const patient = { headersTimeoutMs: 60_000, requestTimeoutMs: 60_000 };

  it("answer one beyond the cap 429 and close it; other clients, and the client's own connections, are served", async () => {
    const { gateway, url, port, server } = await serve({ ...patient, maxConnectionsPerClient: 2 });
    const accepted: Socket[] = [];
    server.on('connection', (socket: Socket) => accepted.push(socket));
    const held = [await rawSocket(port), await rawSocket(port)] as const;
    await until(() => accepted.length === 2, { what: "the client's two connections accepted" });
    const beyond = await rawSocket(port);
    beyond.socket.write(`${head(Buffer.byteLength(QUERY))}${QUERY}`);
    await beyond.closed;
    expect(beyond.received).toMatch(/^HTTP\/1\.1 429 /);
    expect(beyond.received).toMatch(/\r\nretry-after: 1\r\n/i);
    expect(beyond.received).toMatch(/\r\nconnection: close\r\n/i);
    expect(answerOf(beyond.received)).toEqual({
      errors: [
        {
          message: 'Too many connections from this client: at most 2 at once.',
          extensions: { code: 'RATE_LIMITED', retryAfterMs: 1_000 },
        },
      ],
    });
    expect(env.devnet.requests).toHaveLength(0);
    // Another address is another client.
    expect((await post(url, QUERY, '127.0.0.2')).status).toBe(200);
    // The client's own connections are served; once one has closed, a new one is too.
    held[0].socket.write(`${head(Buffer.byteLength(QUERY), 'Connection: close\r\n')}${QUERY}`);
    await held[0].closed;
    expect(held[0].received).toMatch(/^HTTP\/1\.1 200 /);
    await until(() => accepted[0]?.destroyed === true, {
      what: "the server's side of the answered connection closed",
    });
    expect((await post(url, QUERY, '127.0.0.1')).status).toBe(200);
    expect(await refusals(gateway, 'client_connections')).toBe(1);
  });

  it('close one beyond the cap that sends no request within a second, not HEADERS_TIMEOUT_MS', async () => {
    const { gateway, port, server } = await serve({ ...patient, maxConnectionsPerClient: 1 });
    const accepted: Socket[] = [];
    server.on('connection', (socket: Socket) => accepted.push(socket));
    await rawSocket(port);
    await until(() => accepted.length === 1, { what: "the client's one connection accepted" });
    const silent = await rawSocket(port);
    const opened = performance.now();
    await silent.closed;
    expect(performance.now() - opened).toBeLessThan(5_000);
    expect(silent.received).toBe('');
    expect(await refusals(gateway, 'client_connections')).toBe(1);
  });

  it('count, behind a trusted proxy (TRUST_PROXY), each forwarded client by its requests in flight', async () => {
    const { gateway, url, port } = await serve({ maxConnectionsPerClient: 2 }, 1);
    const body = padded(1_000);
    const from = (client: string) => `X-Forwarded-For: ${client}\r\nConnection: close\r\n`;
    // Two requests of 203.0.113.7 in flight through the proxy (every socket is 127.0.0.1's).
    const inFlight = [await rawSocket(port), await rawSocket(port)] as const;
    for (const c of inFlight) c.socket.write(`${head(1_000, from('203.0.113.7'))}${body.slice(0, 10)}`);
    await until(async () => (await bodyBytes(gateway)) === 2_000, {
      what: "both forwarded requests' bodies counted in flight",
    });
    const third = await post(url, QUERY, '127.0.0.1', { 'x-forwarded-for': '203.0.113.7' });
    expect(third.status).toBe(429);
    expect(third.headers['retry-after']).toBe('1');
    expect(third.body.errors[0].extensions).toEqual({ code: 'RATE_LIMITED', retryAfterMs: 1_000 });
    expect(env.devnet.requests).toHaveLength(0);
    // Another client behind the same proxy.
    expect((await post(url, QUERY, '127.0.0.1', { 'x-forwarded-for': '203.0.113.8' })).status).toBe(200);
    // Once one of its requests is answered, the client is served again.
    inFlight[0].socket.write(body.slice(10));
    await inFlight[0].closed;
    expect(inFlight[0].received).toMatch(/^HTTP\/1\.1 200 /);
    expect((await post(url, QUERY, '127.0.0.1', { 'x-forwarded-for': '203.0.113.7' })).status).toBe(200);
    expect(await refusals(gateway, 'client_connections')).toBe(1);
  });
});

describe("a body's pace (MIN_BODY_RATE after BODY_TIMEOUT_MS)", () => {
  const pace = {
    minBodyRate: 1_000,
    bodyTimeoutMs: 1_000,
    headersTimeoutMs: 60_000,
    requestTimeoutMs: 60_000,
  };

  const bodies = [
    {
      label: 'of declared length (the fast path)',
      start: head(2_000, 'Connection: close\r\n'),
      frame: (bytes: string) => bytes,
    },
    {
      label: "of unknown length (chunked: Yoga's path)",
      start: CHUNKED_HEAD,
      frame: (bytes: string) => `${bytes.length.toString(16)}\r\n${bytes}\r\n`,
    },
  ];
  for (const { label, start, frame } of bodies) {
    it(`is cut with 408 when a body ${label} trickles below it, long before REQUEST_TIMEOUT_MS`, async () => {
      const { gateway, port } = await serve(pace);
      const slow = await rawSocket(port);
      slow.socket.write(start);
      const began = performance.now();
      // 10 bytes every 100 ms: 100 bytes a second, a tenth of the minimum.
      const trickle = setInterval(() => slow.socket.write(frame(' '.repeat(10))), 100);
      try {
        await slow.closed;
      } finally {
        clearInterval(trickle);
      }
      expect(performance.now() - began).toBeLessThan(10_000);
      expect(slow.received).toMatch(/^HTTP\/1\.1 408 /);
      expect(answerOf(slow.received)).toEqual({
        errors: [
          {
            message: 'The request body arrived slower than 1000 bytes a second.',
            extensions: { code: 'BAD_USER_INPUT' },
          },
        ],
      });
      expect(await refusals(gateway, 'slow_body')).toBe(1);
      await until(async () => (await bodyBytes(gateway)) === 0, {
        what: "the cut body's bytes given back",
      });
      // Nothing of it reached an upstream (a poll cancelled as the previous test's streams ended may
      // still arrive: its request id says it is the poller's).
      expect(notPolls(env.devnet.requests)).toHaveLength(0);
    });
  }

  it('serves a body sent at a normal pace in several chunks, for longer than BODY_TIMEOUT_MS', async () => {
    const { gateway, port } = await serve(pace);
    const client = await rawSocket(port);
    const body = padded(6_000);
    client.socket.write(head(6_000, 'Connection: close\r\n'));
    // 1,000 bytes every 300 ms (over 3,000 bytes a second), for 1.8 s in all.
    for (let i = 0; i < 6; i++) {
      await new Promise((resolve) => setTimeout(resolve, 300));
      client.socket.write(body.slice(i * 1_000, (i + 1) * 1_000));
    }
    await client.closed;
    expect(client.received).toMatch(/^HTTP\/1\.1 200 /);
    expect(answerOf(client.received).data.validatorStatistics.totalValidators).toMatch(/^\d+$/);
    expect(await refusals(gateway, 'slow_body')).toBe(0);
  });
});
