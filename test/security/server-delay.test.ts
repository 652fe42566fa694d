import type { RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig, type ServerLimits } from '../../src/config.js';
import type { Gateway } from '../../src/gateway.js';
import { createGatewayServer } from '../../src/http/node-server.js';
import { parseAnswer, useGatewayOnDevnet } from '../gateway/helpers.js';
import { rawSockets } from '../support/raw-socket.js';

/**
 * Intake judges a body's pace and first byte by what the client sent (src/http/intake.ts), so the
 * server's own delay must never count against it: bytes waiting in the request that nobody has
 * read yet are the server's. The gateway here is busy elsewhere: its listener gets each request
 * only once the test lets it (a process whose event loop is taken). A client that sends at once
 * is then not cut, while a client that really stalls, admitted after it, is.
 */

const env = useGatewayOnDevnet();
const defaults = loadConfig({});
const closing: (() => Promise<void>)[] = [];
const raw = rawSockets();
const rawSocket = raw.connect;
afterEach(async () => {
  raw.destroyAll();
  await Promise.all(closing.splice(0).map((close) => close()));
});

const QUERY = JSON.stringify({ query: '{ validatorStatistics { totalValidators } }' });

/**
 * A cold gateway of the file's devnet, served with `limits`, whose listener is handed each request
 * only once `release` is called.
 */
async function busyGateway(limits: Partial<ServerLimits>) {
  const gateway = env.coldGateway();
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const listener: RequestListener = (req, res) => void released.then(() => gateway.listener(req, res));
  const server = createGatewayServer(
    { listener, metrics: gateway.metrics, cors: gateway.cors },
    { ...defaults, server: { ...defaults.server, ...limits } },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closing.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { gateway, port: (server.address() as AddressInfo).port, release };
}

const slowBodies = async (gateway: Gateway) => {
  const values = (await gateway.metrics.registry.getSingleMetric('http_requests_refused_total')?.get())
    ?.values;
  return values?.find((v) => v.labels.reason === 'slow_body')?.value ?? 0;
};

const head = (length: number) =>
  'POST /graphql HTTP/1.1\r\nHost: gateway.test\r\nContent-Type: application/json\r\n' +
  `Accept: application/json\r\nConnection: close\r\nContent-Length: ${length}\r\n\r\n`;

/** `QUERY` padded with spaces to `length` bytes: valid JSON of that length. */
const padded = (length: number) => QUERY.padEnd(length, ' ');

describe('a body the server has not read yet', () => {
  it('is not the client’s slowness: sent at once, it is not cut while the server holds it unread', async () => {
    // BODY_TIMEOUT_MS 1 s: a body that stops arriving for a second is cut, as the stalled client
    // below is; admitted after the held body, it is cut no earlier than the held body would be.
    const { gateway, port, release } = await busyGateway({ bodyTimeoutMs: 1_000, minBodyRate: 1_000 });
    // Within MAX_REQUEST_BYTES, and more than the request's buffer takes: node stops reading the
    // socket until someone reads the request.
    const length = 90_000;
    const sent = await rawSocket(port);
    sent.socket.write(head(length) + padded(length));
    const stalled = await rawSocket(port);
    stalled.socket.write(head(2_000));
    await stalled.closed;
    expect(stalled.received).toMatch(/^HTTP\/1\.1 408 /);
    // The stalled client alone was cut: the held body is still waiting for the server.
    expect(await slowBodies(gateway)).toBe(1);
    expect(sent.socket.destroyed).toBe(false);
    release();
    await sent.closed;
    expect(sent.received).toMatch(/^HTTP\/1\.1 200 /);
    const answer = parseAnswer(sent.received.slice(sent.received.indexOf('\r\n\r\n') + 4));
    expect(answer.data.validatorStatistics.totalValidators).toMatch(/^\d+$/);
  });

  it('has arrived once bytes came with its headers, though nobody has read them', async () => {
    // The first-byte deadline is what could cut here (the pace allowance is a minute); the silent
    // client, admitted after it, is cut no earlier than it would be.
    const { gateway, port, release } = await busyGateway({
      bodyTimeoutMs: 60_000,
      bodyFirstByteMs: 500,
      headersTimeoutMs: 60_000,
      requestTimeoutMs: 60_000,
    });
    const body = padded(2_000);
    // Its headers and the first 100 bytes of its body in one write, then nothing for now.
    const started = await rawSocket(port);
    started.socket.write(head(2_000) + body.slice(0, 100));
    const silent = await rawSocket(port);
    silent.socket.write(head(2_000));
    await silent.closed;
    expect(silent.received).toMatch(/^HTTP\/1\.1 408 /);
    expect(await slowBodies(gateway)).toBe(1);
    expect(started.socket.destroyed).toBe(false);
    started.socket.write(body.slice(100));
    release();
    await started.closed;
    expect(started.received).toMatch(/^HTTP\/1\.1 200 /);
  });
});
