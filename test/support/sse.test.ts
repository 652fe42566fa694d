import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { subscribe } from './sse.js';
import { until } from './until.js';

/**
 * The SSE subscriber of the live tests, against a purpose-built server on 127.0.0.1 that writes
 * what each test tells it to: a stream that fails (an event that is not a GraphQL answer, an event
 * of another kind, a cut connection, a response that is no stream) rejects what the test awaits,
 * with the reason; only a `complete` or a clean end is a normal end.
 */

let url: string;
let server: ReturnType<typeof createServer>;
/** The streams the server holds open, newest last. */
const streams: ServerResponse[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === '/json') {
      res.writeHead(429, { 'content-type': 'application/json' }).end('{"errors":[]}');
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.flushHeaders();
    streams.push(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

beforeEach(() => {
  streams.length = 0;
});

/** A subscription to the server, and the server's side of its stream. */
async function open() {
  const sub = await subscribe(`${url}/graphql`, 'subscription { blockAdded { height } }');
  await until(() => streams.length === 1, { what: "the server's side of the stream" });
  return { sub, stream: streams[0] as ServerResponse };
}

const NEXT = 'event: next\ndata: {"data":{"blockAdded":{"height":1}}}\n\n';

describe('a stream that fails', () => {
  it('rejects the awaiting next() and ended when an event is not JSON', async () => {
    const { sub, stream } = await open();
    const pending = sub.next();
    stream.write('event: next\ndata: {"data":\n\n');
    await expect(pending).rejects.toThrow(/SSE stream failed: a next event that is not a GraphQL answer/);
    await expect(sub.ended).rejects.toThrow(/not a GraphQL answer/);
    // Every later read fails the same way: it never turns into a close.
    await expect(sub.next()).rejects.toThrow(/not a GraphQL answer/);
  });

  it('rejects when an error carries no code of the contract', async () => {
    const { sub, stream } = await open();
    stream.write('event: next\ndata: {"errors":[{"message":"boom"}]}\n\n');
    await expect(sub.ended).rejects.toThrow(/not a GraphQL answer/);
    await expect(sub.next()).rejects.toThrow(/not a GraphQL answer/);
  });

  it('rejects on an event other than next and complete', async () => {
    const { sub, stream } = await open();
    const pending = sub.next();
    stream.write('event: error\ndata: {"message":"upstream gone"}\n\n');
    await expect(pending).rejects.toThrow(/an unexpected error event: \{"message":"upstream gone"\}/);
    await expect(sub.ended).rejects.toThrow(/unexpected error event/);
  });

  it('rejects when the connection breaks, after the events that came before it', async () => {
    const { sub, stream } = await open();
    stream.write(NEXT);
    expect((await sub.next()).data.blockAdded.height).toBe(1);
    const pending = sub.next();
    stream.socket?.destroy();
    await expect(pending).rejects.toThrow(/SSE stream failed/);
    await expect(sub.ended).rejects.toThrow(/SSE stream failed/);
  });

  it('rejects when the stream ends inside a message', async () => {
    const { sub, stream } = await open();
    stream.end('event: next\ndata: {"data":{}}');
    await expect(sub.ended).rejects.toThrow(/ended inside a message/);
  });

  it('rejects when the answer is not an event stream', async () => {
    const sub = await subscribe(`${url}/json`, 'subscription { blockAdded { height } }');
    expect(sub.status).toBe(429);
    await expect(sub.next()).rejects.toThrow(/not an event stream: 429 application\/json/);
    await expect(sub.ended).rejects.toThrow(/not an event stream/);
  });
});

describe('a stream that ends normally', () => {
  it('is complete after complete, and a waiting next() is told so', async () => {
    const { sub, stream } = await open();
    stream.write(NEXT);
    expect((await sub.next()).data.blockAdded.height).toBe(1);
    const pending = sub.next();
    stream.end('event: complete\ndata:\n\n');
    await expect(pending).rejects.toThrow('stream complete before the next event');
    expect(await sub.ended).toBe('complete');
    expect(sub.messages.map((m) => m.event)).toEqual(['next', 'complete']);
  });

  it('is closed when the server ends it cleanly, or the client closes it', async () => {
    const first = await open();
    first.stream.end(': ping\n\n');
    expect(await first.sub.ended).toBe('closed');
    streams.length = 0;
    const second = await open();
    const pending = second.sub.next();
    second.sub.close();
    await expect(pending).rejects.toThrow('stream closed before the next event');
    expect(await second.sub.ended).toBe('closed');
  });
});
