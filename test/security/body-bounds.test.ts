import { request as httpRequest } from 'node:http';
import type { Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, type ServerLimits } from '../../src/config.js';
import type { Gateway } from '../../src/gateway.js';
import { listen, parseAnswer, useGatewayOnDevnet } from '../gateway/helpers.js';
import { type RawClient, rawSockets } from '../support/raw-socket.js';
import { until } from '../support/until.js';

/**
 * Bodies over MAX_REQUEST_BYTES are never read, and no client holds more than its share of
 * MAX_INFLIGHT_BODY_BYTES (contract.md §9, src/http/intake.ts). The attacks of issue 47, over real
 * sockets against the gateway's own listener: bodies declaring or sending far more than the cap, and
 * one address holding stalled bodies while another client posts.
 */

const env = useGatewayOnDevnet();
const servers: Awaited<ReturnType<typeof listen>>[] = [];
const raw = rawSockets();
const rawSocket = raw.connect;
afterEach(async () => {
  raw.destroyAll();
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

const defaults = loadConfig({});
const CAP = defaults.limits.requestBytes;
const QUERY = JSON.stringify({ query: '{ validatorStatistics { totalValidators } }' });
/** Limits under which no timer cuts a body within a test: what cuts one is the rule under test. */
const PATIENT = {
  bodyFirstByteMs: 60_000,
  bodyTimeoutMs: 60_000,
  headersTimeoutMs: 60_000,
  requestTimeoutMs: 60_000,
};

/**
 * A cold gateway of the file's devnet over a real socket, with `limits` over the defaults, behind
 * `trustProxy` proxies; the server's end of every connection kept by the client's port.
 */
async function serve(limits: Partial<ServerLimits> = {}, trustProxy = 0) {
  const scale = { ...defaults.scale, rateLimitPoints: 0, trustProxy };
  const gateway = env.coldGateway({ scale });
  const served = await listen(gateway, { ...defaults.server, ...limits }, { ...defaults, scale });
  servers.push(served);
  const accepted = new Map<number, Socket>();
  served.server.on('connection', (socket: Socket) => accepted.set(socket.remotePort as number, socket));
  return { gateway, ...served, port: Number(new URL(served.url).port), accepted };
}

/** A sample of `name` in the gateway's own registry: the series with `labels`. */
async function sample(gateway: Gateway, name: string, labels: Record<string, string> = {}) {
  const values = (await gateway.metrics.registry.getSingleMetric(name)?.get())?.values ?? [];
  return values.find((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x))?.value ?? 0;
}
const refusals = (gateway: Gateway, reason: string) =>
  sample(gateway, 'http_requests_refused_total', { reason });
const bodyBytes = (gateway: Gateway) => sample(gateway, 'http_request_body_bytes_in_flight');

/** A request's head; `length` null: a chunked body. */
const head = (length: number | null, accept: string | undefined = 'application/json') =>
  'POST /graphql HTTP/1.1\r\nHost: gateway.test\r\nContent-Type: application/json\r\n' +
  `Accept: ${accept}\r\n${length === null ? 'Transfer-Encoding: chunked' : `Content-Length: ${length}`}\r\n\r\n`;

/**
 * Writes `total` bytes of body as fast as the connection takes them (64 KiB at a time, framed as
 * chunks when `chunked`), until all are sent or the server closes the connection.
 */
async function pump({ socket }: RawClient, total: number, chunked: boolean) {
  const piece = Buffer.alloc(65_536, 0x20);
  const frame = chunked
    ? Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')])
    : piece;
  for (let sent = 0; sent < total && !socket.destroyed; sent += piece.length) {
    if (socket.write(frame)) continue;
    await new Promise<void>((resolve) => {
      const go = () => {
        socket.off('drain', go);
        socket.off('close', go);
        resolve();
      };
      socket.on('drain', go);
      socket.on('close', go);
    });
  }
}

/** The JSON answer of a raw HTTP/1.1 response. */
const answerOf = (raw: string) => parseAnswer(raw.slice(raw.indexOf('\r\n\r\n') + 4));

const TOO_LARGE = { errors: [{ message: 'Request body too large', extensions: { code: 'BAD_USER_INPUT' } }] };

/**
 * What the server may read of a refused body, of the 20 MB each attacker sends: the socket reads
 * under way when it was refused (64 KiB each; the first also brings the head), and for a chunked
 * body the cap it was read up to.
 */
const READS = 4 * 65_536;
const readBound = (length: number | null) => (length === null ? CAP + READS : READS);

describe('a body over MAX_REQUEST_BYTES', () => {
  it('is answered 413 at once, declared or chunked, on either path, having read at most the cap', async () => {
    const { gateway, port, accepted } = await serve();
    // Two paths: the adapter's JSON reader and Yoga's own (an Accept the adapter does not write).
    const accepts = ['application/json', 'application/graphql-response+json'];
    // 4 declaring 40 MB, 4 chunked (no length); each sends 20 MB as fast as it is taken.
    const lengths = [40_000_000, 40_000_000, 40_000_000, 40_000_000, null, null, null, null];
    const attackers = await Promise.all(
      lengths.map(async (length, i) => ({ length, accept: accepts[i % 2], client: await rawSocket(port) })),
    );
    const began = performance.now();
    await Promise.all(
      attackers.map(({ length, accept, client }) => {
        client.socket.write(head(length, accept));
        return pump(client, 20_000_000, length === null);
      }),
    );
    await until(() => attackers.every(({ client }) => client.socket.destroyed), {
      what: 'every attacker answered and its connection closed',
      within: 5_000,
    });
    expect(performance.now() - began).toBeLessThan(5_000);
    for (const { length, client } of attackers) {
      expect(client.received).toMatch(/^HTTP\/1\.1 413 /);
      expect(client.received).toMatch(/\r\nconnection: close\r\n/i);
      expect(answerOf(client.received)).toEqual(TOO_LARGE);
      const server = accepted.get(client.port) as Socket;
      await until(() => server.destroyed, { what: "the server's end of an attacker's connection closed" });
      expect(server.bytesRead).toBeLessThan(readBound(length));
    }
    expect(await refusals(gateway, 'body_too_large')).toBe(8);
    expect(await bodyBytes(gateway)).toBe(0);
    expect(env.devnet.requests).toHaveLength(0);
  });

  it('is refused before the client sends it, when it expects 100-continue', async () => {
    const { port } = await serve();
    const client = await rawSocket(port);
    client.socket.write(head(CAP + 1).replace('\r\n\r\n', '\r\nExpect: 100-continue\r\n\r\n'));
    await client.closed;
    expect(client.received).toMatch(/^HTTP\/1\.1 413 /);
    expect(answerOf(client.received)).toEqual(TOO_LARGE);
  });

  it('is served at the cap exactly, declared or chunked', async () => {
    const { url } = await serve();
    const body = QUERY.padEnd(CAP, ' ');
    const declared = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    expect(declared.status).toBe(200);
    const stream = new ReadableStream({
      start(controller) {
        for (let at = 0; at < body.length; at += 10_000) {
          controller.enqueue(new TextEncoder().encode(body.slice(at, at + 10_000)));
        }
        controller.close();
      },
    });
    const chunked = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    expect(chunked.status).toBe(200);
  });
});

/** One request on a connection of its own from `from`: its status and parsed answer. */
function post(url: string, body: string, from: string) {
  return new Promise<{ status: number; body: any }>((resolve, reject) => {
    const req = httpRequest(
      url,
      { method: 'POST', localAddress: from, agent: false, headers: { 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode as number, body: parseAnswer(text) }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe("a client's share of MAX_INFLIGHT_BODY_BYTES, and the first byte of a body", () => {
  // A body timeout far away: what cuts a stall here is the first-byte deadline.
  const stalls = { ...PATIENT, bodyFirstByteMs: 500 };

  it('lets another client post while one address holds 80 stalled bodies, and cuts the stalls after the first-byte deadline', async () => {
    const { gateway, url, port } = await serve(stalls);
    // MAX_INFLIGHT_BODY_BYTES_PER_CLIENT's default.
    const share = 4 * CAP;
    const stalled: RawClient[] = [];
    for (let i = 0; i < 80; i++) stalled.push(await rawSocket(port));
    const began = performance.now();
    for (const client of stalled) client.socket.write(head(100_000));
    // The client's share holds 4 of them; the 76 beyond are refused at once.
    await until(() => stalled.filter((c) => c.socket.destroyed).length === 76, {
      what: '76 stalled bodies beyond the share refused',
    });
    const held = stalled.filter((c) => !c.socket.destroyed);
    expect(held).toHaveLength(4);
    expect(await bodyBytes(gateway)).toBe(share);
    for (const { received } of stalled.filter((c) => c.socket.destroyed)) {
      expect(received).toMatch(/^HTTP\/1\.1 429 /);
      expect(received).toMatch(/\r\nretry-after: 1\r\n/i);
      expect(answerOf(received).errors[0].extensions).toEqual({ code: 'RATE_LIMITED', retryAfterMs: 1_000 });
    }
    expect(await refusals(gateway, 'client_body_budget')).toBe(76);

    // Another client (another address) is served while the stalls hold.
    const other = await post(url, QUERY, '127.0.0.2');
    expect(other.status).toBe(200);
    expect(other.body.data.validatorStatistics.totalValidators).toMatch(/^\d+$/);
    expect(held.filter((c) => c.socket.destroyed || c.received !== '')).toHaveLength(0);

    // The stalls are cut once the first-byte deadline has passed, long before BODY_TIMEOUT_MS.
    await Promise.all(held.map((c) => c.closed));
    expect(performance.now() - began).toBeLessThan(10_000);
    for (const { received } of held) {
      expect(received).toMatch(/^HTTP\/1\.1 408 /);
      expect(answerOf(received)).toEqual({
        errors: [
          {
            message: 'No byte of the request body arrived within 500 ms.',
            extensions: { code: 'BAD_USER_INPUT' },
          },
        ],
      });
    }
    expect(await refusals(gateway, 'slow_body')).toBe(4);
    expect(await bodyBytes(gateway)).toBe(0);
    expect(await refusals(gateway, 'body_budget')).toBe(0);
  });

  it('counts a body that came with its headers as arrived, on either path', async () => {
    const { gateway, port } = await serve(stalls);
    const body = QUERY.padEnd(2_000, ' ');
    const accepts = ['application/json', 'application/graphql-response+json'];
    // Each sends its headers and the first 100 bytes of its body in one write, then waits.
    const started = await Promise.all(accepts.map(() => rawSocket(port)));
    for (const [i, c] of started.entries()) c.socket.write(`${head(2_000, accepts[i])}${body.slice(0, 100)}`);
    // A body that sends nothing, admitted after them, is cut at the deadline: theirs has passed too.
    const silent = await rawSocket(port, '127.0.0.2');
    silent.socket.write(head(2_000));
    await silent.closed;
    expect(silent.received).toMatch(/^HTTP\/1\.1 408 /);
    expect(started.filter((c) => c.socket.destroyed || c.received !== '')).toHaveLength(0);
    for (const client of started) client.socket.write(body.slice(100));
    await until(() => started.every((c) => /\r\n\r\n\{/.test(c.received)), { what: 'both answered' });
    for (const { received } of started) expect(received).toMatch(/^HTTP\/1\.1 200 /);
    expect(await refusals(gateway, 'slow_body')).toBe(1);
  });

  it('holds each client behind a trusted proxy (TRUST_PROXY) to a share of its own', async () => {
    const { gateway, url, port } = await serve({ ...stalls, maxInflightBodyBytesPerClient: 2_000 }, 1);
    const from = (client: string) => `X-Forwarded-For: ${client}\r\nConnection: close\r\n`;
    const body = QUERY.padEnd(1_500, ' ');
    // 203.0.113.7's body of 1,500 bytes, through the proxy (every socket is 127.0.0.1's), in flight.
    const holder = await rawSocket(port);
    holder.socket.write(
      `${head(1_500).replace('\r\n\r\n', `\r\n${from('203.0.113.7')}\r\n`)}${body.slice(0, 10)}`,
    );
    await until(async () => (await bodyBytes(gateway)) === 1_500, { what: "the held body's bytes counted" });
    const again = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': '203.0.113.7' },
      body: QUERY.padEnd(1_000, ' '),
    });
    expect(again.status).toBe(429);
    expect(again.headers.get('retry-after')).toBe('1');
    expect(parseAnswer(await again.text())).toEqual({
      errors: [
        {
          message: 'This client is sending too many request bodies at once: at most 2000 bytes.',
          extensions: { code: 'RATE_LIMITED', retryAfterMs: 1_000 },
        },
      ],
    });
    const other = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': '203.0.113.8' },
      body: QUERY.padEnd(1_000, ' '),
    });
    expect(other.status).toBe(200);
    // Once its body is in, the client's share comes back.
    holder.socket.write(body.slice(10));
    await holder.closed;
    expect(holder.received).toMatch(/^HTTP\/1\.1 200 /);
    expect(await bodyBytes(gateway)).toBe(0);
    expect(await refusals(gateway, 'client_body_budget')).toBe(1);
  });
});

describe('MAX_INFLIGHT_BODY_BYTES full of bodies behind their pace', () => {
  it('makes room for another client by cutting the slowest, before refusing anyone', async () => {
    const { gateway, url, port } = await serve({
      ...PATIENT,
      maxInflightBodyBytes: 400_000,
      maxInflightBodyBytesPerClient: 200_000,
    });
    // Two addresses, each at its share: two bodies of 100,000 bytes that have sent one byte.
    const stalled: RawClient[] = [];
    for (const from of ['127.0.0.2', '127.0.0.3']) {
      for (let i = 0; i < 2; i++) stalled.push(await rawSocket(port, from));
    }
    const began = performance.now();
    for (const client of stalled) client.socket.write(`${head(100_000)}{`);
    await until(async () => (await bodyBytes(gateway)) === 400_000, { what: 'the budget full' });
    // Behind MIN_BODY_RATE (1,000 bytes a second) a fraction of a second in, as bodies whose
    // clients hang up and open new ones keep them young: the clock, observed.
    await until(() => performance.now() - began > 300, { what: 'a few hundred bytes behind the pace' });
    const other = await post(url, QUERY, '127.0.0.1');
    expect(other.status).toBe(200);
    expect(other.body.data.validatorStatistics.totalValidators).toMatch(/^\d+$/);
    // One of the stalled bodies made room (the furthest behind), answered 408.
    const cut = stalled.filter((c) => c.received !== '');
    expect(cut).toHaveLength(1);
    expect((cut[0] as RawClient).received).toMatch(/^HTTP\/1\.1 408 /);
    expect(answerOf((cut[0] as RawClient).received)).toEqual({
      errors: [
        {
          message: 'The request body arrived slower than 1000 bytes a second.',
          extensions: { code: 'BAD_USER_INPUT' },
        },
      ],
    });
    expect(await refusals(gateway, 'slow_body')).toBe(1);
    expect(await refusals(gateway, 'body_budget')).toBe(0);
  });

  it('refuses with 503 when the bodies in flight keep their pace', async () => {
    const { gateway, url, port } = await serve({
      maxInflightBodyBytes: 200_000,
      maxInflightBodyBytesPerClient: 200_000,
    });
    const held = [await rawSocket(port, '127.0.0.2'), await rawSocket(port, '127.0.0.2')];
    // Half of each body at once: far ahead of MIN_BODY_RATE for the next 50 s.
    for (const client of held) client.socket.write(`${head(100_000)}{${' '.repeat(50_000)}`);
    await until(async () => (await bodyBytes(gateway)) === 200_000, { what: 'the budget full' });
    const other = await post(url, QUERY, '127.0.0.1');
    expect(other.status).toBe(503);
    expect(held.filter((c) => c.received !== '')).toHaveLength(0);
    expect(await refusals(gateway, 'body_budget')).toBe(1);
  });
});

describe('a body nobody reads', () => {
  const SUBSCRIBE = '/graphql?query=subscription%7BblockAdded%7Bheight%7D%7D';

  it('is refused on a GET or a HEAD (400) before the request is served: an event stream holds no share of the budget', async () => {
    const { gateway, port } = await serve(PATIENT);
    const requests = [
      `GET ${SUBSCRIBE} HTTP/1.1\r\nHost: gateway.test\r\nAccept: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n`,
      `GET ${SUBSCRIBE} HTTP/1.1\r\nHost: gateway.test\r\nAccept: text/event-stream\r\nContent-Length: 50000\r\n\r\nhello`,
      'HEAD /graphql HTTP/1.1\r\nHost: gateway.test\r\nContent-Length: 5\r\n\r\nhello',
    ];
    const clients = await Promise.all(requests.map(() => rawSocket(port)));
    for (const [i, client] of clients.entries()) client.socket.write(requests[i] as string);
    await Promise.all(clients.map((c) => c.closed));
    for (const [i, { received }] of clients.entries()) {
      expect(received).toMatch(/^HTTP\/1\.1 400 /);
      expect(received).toMatch(/\r\nconnection: close\r\n/i);
      if (i < 2) {
        expect(answerOf(received)).toEqual({
          errors: [{ message: 'A GET request carries no body.', extensions: { code: 'BAD_USER_INPUT' } }],
        });
      }
    }
    expect(await refusals(gateway, 'unread_body')).toBe(3);
    expect(await bodyBytes(gateway)).toBe(0);
    // A GET that says its body is empty is served as any other.
    const empty = await rawSocket(port);
    empty.socket.write(
      'GET /graphql?query=%7BvalidatorStatistics%7BtotalValidators%7D%7D HTTP/1.1\r\nHost: gateway.test\r\n' +
        'Accept: application/json\r\nx-graphql-csrf: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n',
    );
    await empty.closed;
    expect(empty.received).toMatch(/^HTTP\/1\.1 200 /);
  });

  it('ends its connection with the answer, chunked, when its answer went out before it was read', async () => {
    const { gateway, port, accepted } = await serve(PATIENT);
    // Paths that answer without reading a body: not found, and the readiness probe.
    const paths = ['/nowhere', '/readyz'];
    const clients = await Promise.all(paths.map(() => rawSocket(port)));
    await Promise.all(
      clients.map((client, i) => {
        client.socket.write(head(null).replace('/graphql', paths[i] as string));
        return pump(client, 20_000_000, true);
      }),
    );
    await Promise.all(clients.map((c) => c.closed));
    for (const client of clients) {
      expect(client.received).toMatch(/^HTTP\/1\.1 (404|200) /);
      const server = accepted.get(client.port) as Socket;
      await until(() => server.destroyed, { what: "the server's end closed" });
      // What had come when the answer went out: the head, and the socket reads under way.
      expect(server.bytesRead).toBeLessThan(READS);
    }
    expect(await bodyBytes(gateway)).toBe(0);
  });

  it('gives its share back when its client hangs up after the answer', async () => {
    const { gateway, port } = await serve(PATIENT);
    const client = await rawSocket(port);
    client.socket.write(`${head(100_000).replace('/graphql', '/nowhere')}{"query"`);
    await until(() => /\r\n\r\n/.test(client.received), { what: 'the answer' });
    expect(client.received).toMatch(/^HTTP\/1\.1 404 /);
    expect(await bodyBytes(gateway)).toBe(100_000);
    client.socket.destroy();
    await until(async () => (await bodyBytes(gateway)) === 0, { what: 'the share given back' });
    expect(await refusals(gateway, 'slow_body')).toBe(0);
  });
});

describe('MAX_INFLIGHT_BODY_BYTES_PER_CLIENT and BODY_FIRST_BYTE_MS', () => {
  it('default to 4 × MAX_REQUEST_BYTES (within the process budget) and 2 s', () => {
    expect(defaults.server.maxInflightBodyBytesPerClient).toBe(400_000);
    expect(defaults.server.bodyFirstByteMs).toBe(2_000);
    const small = loadConfig({ MAX_INFLIGHT_BODY_BYTES: '200000' });
    expect(small.server.maxInflightBodyBytesPerClient).toBe(200_000);
    expect(
      loadConfig({ MAX_INFLIGHT_BODY_BYTES_PER_CLIENT: '150000' }).server.maxInflightBodyBytesPerClient,
    ).toBe(150_000);
  });

  it('refuse a share below MAX_REQUEST_BYTES or above MAX_INFLIGHT_BODY_BYTES', () => {
    expect(() => loadConfig({ MAX_INFLIGHT_BODY_BYTES_PER_CLIENT: '99999' })).toThrow(ConfigError);
    expect(() => loadConfig({ MAX_INFLIGHT_BODY_BYTES_PER_CLIENT: '8000001' })).toThrow(ConfigError);
  });
});
