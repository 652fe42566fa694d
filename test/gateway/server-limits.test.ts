import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig, type ServerLimits } from '../../src/config.js';
import type { Gateway } from '../../src/gateway.js';
import { until } from '../support/until.js';
import { listen, parseAnswer, useGatewayOnDevnet } from './helpers.js';

/**
 * The HTTP server's limits (src/http/node-server.ts) on a real socket, and the bounds on a
 * request's variables (src/graphql/plugins/limits.ts): refused before anything reaches an upstream.
 */

// A body cap of 1 MB, so that variables nested 100,000 levels deep (200 KB) reach the variables' check
// (the gateway's and its server's: intake refuses a longer body before it is read).
const limits = { ...loadConfig({}).limits, requestBytes: 1_000_000 };
const env = useGatewayOnDevnet({ gateway: { limits } });
const defaults = loadConfig({}).server;
const servers: Awaited<ReturnType<typeof listen>>[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function serve(server: Partial<ServerLimits>) {
  const served = await listen(env.gateway, { ...defaults, ...server }, { ...loadConfig({}), limits });
  servers.push(served);
  return { ...served, port: Number(new URL(served.url).port) };
}

/** A raw client socket, with everything it receives collected and its closing observable. */
async function rawSocket(port: number) {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => {});
  const client = { socket, received: '', closed: once(socket, 'close') };
  socket.on('data', (chunk: Buffer) => {
    client.received += chunk.toString();
  });
  await once(socket, 'connect');
  return client;
}

const REQUEST = (body: string) =>
  `POST /graphql HTTP/1.1\r\nHost: gateway.test\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

/** Sends one complete request on a raw socket and waits for its whole response. */
async function request(client: Awaited<ReturnType<typeof rawSocket>>) {
  client.received = '';
  client.socket.write(REQUEST(JSON.stringify({ query: '{ validatorStatistics { totalValidators } }' })));
  await until(() => /\r\n\r\n\{.*\}$/s.test(client.received), {
    what: 'the whole response on the raw socket',
  });
  return client.received;
}

/**
 * While `slow` sends a little every 100 ms (`trickle`), another client is served at once; then the
 * server answers the slow one 408 and closes its socket.
 */
async function expectCutOffWhileOthersServed(
  url: string,
  slow: Awaited<ReturnType<typeof rawSocket>>,
  trickle: () => void,
) {
  const timer = setInterval(trickle, 100);
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ validatorStatistics { totalValidators } }' }),
    });
    expect(res.status).toBe(200);
    expect(parseAnswer(await res.text()).data.validatorStatistics).not.toBeNull();
    // Served while the slow client still held its socket.
    expect(slow.socket.destroyed).toBe(false);
    await slow.closed;
  } finally {
    clearInterval(timer);
  }
  expect(slow.received).toMatch(/^HTTP\/1\.1 408 /);
}

const scrape = async (gateway: Gateway, name: string) =>
  (await gateway.metrics.registry.getSingleMetric(name)?.get())?.values[0]?.value;

describe('HTTP server limits', () => {
  it('closes a socket that trickles its headers after HEADERS_TIMEOUT_MS, answering others meanwhile', async () => {
    const { url, port } = await serve({ headersTimeoutMs: 2_000, requestTimeoutMs: 4_000 });
    const slow = await rawSocket(port);
    slow.socket.write('POST /graphql HTTP/1.1\r\nHost: gateway.test\r\n');
    // The slow client sends a header line every 100 ms, never the blank line that ends them.
    let line = 0;
    await expectCutOffWhileOthersServed(url, slow, () => slow.socket.write(`x-slow-${line++}: 1\r\n`));
  });

  it('closes a request whose body trickles in for longer than REQUEST_TIMEOUT_MS', async () => {
    const { url, port } = await serve({ headersTimeoutMs: 1_000, requestTimeoutMs: 2_500 });
    const slow = await rawSocket(port);
    // Complete headers announcing 1,000 bytes, then one byte every 100 ms.
    slow.socket.write(
      'POST /graphql HTTP/1.1\r\nHost: gateway.test\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n',
    );
    await expectCutOffWhileOthersServed(url, slow, () => slow.socket.write(' '));
  });

  it('closes a keep-alive connection idle for KEEP_ALIVE_TIMEOUT_MS', async () => {
    const { port } = await serve({ keepAliveTimeoutMs: 300 });
    const client = await rawSocket(port);
    // Kept alive between requests: the second goes on the same connection.
    expect(await request(client)).toMatch(/^HTTP\/1\.1 200 /);
    expect(await request(client)).toMatch(/^HTTP\/1\.1 200 /);
    // Then the client sends nothing more: the server ends the connection.
    await client.closed;
  });

  it('refuses connections beyond MAX_CONNECTIONS and counts them in /metrics', async () => {
    const { url, port, server } = await serve({ maxConnections: 2 });
    const accepted: Socket[] = [];
    server.on('connection', (socket: Socket) => accepted.push(socket));
    const before = (await scrape(env.gateway, 'http_connections_refused_total')) ?? 0;
    // Two clients hold a connection each, served and kept alive.
    const held = [await rawSocket(port), await rawSocket(port)];
    for (const client of held) expect(await request(client)).toMatch(/^HTTP\/1\.1 200 /);
    const third = await rawSocket(port);
    third.socket.write(REQUEST('{"query":"{ validatorStatistics { totalValidators } }"}'));
    await third.closed;
    expect(third.received).toBe('');
    expect((await scrape(env.gateway, 'http_connections_refused_total')) ?? 0).toBe(before + 1);
    // Once one of them leaves (and the server has seen its socket close), a new client is served.
    held[0]?.socket.destroy();
    await once(accepted[0] as Socket, 'close');
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', connection: 'close' },
      body: JSON.stringify({ query: '{ validatorStatistics { totalValidators } }' }),
    });
    expect(res.status).toBe(200);
    held[1]?.socket.destroy();
  });
});

describe('variables', () => {
  env.serveOverHttp();

  const post = (variables: unknown) =>
    fetch(env.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: `{"query":"query($q: String!) { search(query: $q) { results { kind } } }","variables":${variables}}`,
    });

  const documents = [
    {
      label: 'nested 100,000 levels deep',
      variables: `{"q":${'['.repeat(100_000)}${']'.repeat(100_000)}}`,
      message: 'nest deeper than 8',
    },
    {
      label: 'nested 9 levels deep',
      variables: `{"q":${'{"a":'.repeat(9)}1${'}'.repeat(9)}}`,
      message: 'nest deeper than 8',
    },
    {
      label: 'holding 5,000 values',
      variables: `{"q":"0x1","extra":[${Array(5_000).fill(1).join(',')}]}`,
      message: 'more than 1000 values',
    },
  ];
  for (const { label, variables, message } of documents) {
    it(`are refused with BAD_USER_INPUT when ${label}, and reach no upstream`, async () => {
      const res = await post(variables);
      const body = parseAnswer(await res.text());
      expect(body.data).toBeUndefined();
      expect(body.errors).toHaveLength(1);
      expect(body.errors[0].extensions).toEqual({ code: 'BAD_USER_INPUT', limit: 'variables' });
      expect(body.errors[0].message).toContain(message);
      expect(env.devnet.requests).toHaveLength(0);
    });
  }

  it('within the bounds, are coerced and executed as usual', async () => {
    const res = await post(`{"q":"12"}`);
    const body = parseAnswer(await res.text());
    expect(body.errors).toBeUndefined();
    expect(Array.isArray(body.data.search.results)).toBe(true);
    expect(env.devnet.requests).toHaveLength(1);
  });
});
