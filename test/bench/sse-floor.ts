/**
 * The floor of `npm run bench -- --live`: what bare node:http does for live updates, nothing
 * else. It answers any POST with 200 `text/event-stream` and a `:` comment, keeps the stream,
 * and on each tick (an IPC message from the load generator, at the chain's cadence) writes one
 * pre-built SSE frame to every open stream, or to the streams whose request body was the one
 * named: one Buffer for all, no parsing, no per-stream timer. Started like the gateway (core 0,
 * the same V8 flags); prints `floor listening on <url>`.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

const now = () => performance.timeOrigin + performance.now();

/** Open streams by the request body that opened them (the subscription document and variables). */
const streams = new Map<string, Set<ServerResponse>>();
let open = 0;

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');
    chunks.length = 0;
    res.writeHead(200, {
      'content-type': 'text/event-stream',
      connection: 'keep-alive',
      'cache-control': 'no-cache',
    });
    res.write(':\n\n');
    const group = streams.get(body) ?? new Set<ServerResponse>();
    streams.set(body, group);
    group.add(res);
    open++;
    res.once('close', () => {
      group.delete(res);
      open--;
    });
  });
});
server.maxConnections = Number.POSITIVE_INFINITY;
server.headersTimeout = 60_000;
server.requestTimeout = 0;

/** One tick: each write's frame to the streams opened with its body (every stream when none). */
interface Tick {
  type: 'tick';
  id?: number;
  writes: { body?: string; frame: string }[];
}

process.on('message', (message: Tick | { type: 'streams' | 'clock'; id?: number }) => {
  if (message.type === 'tick') {
    const at = now();
    let written = 0;
    for (const { body, frame } of message.writes) {
      const bytes = Buffer.from(frame);
      const targets = body === undefined ? [...streams.values()] : [streams.get(body) ?? new Set()];
      for (const group of targets) {
        for (const res of group) res.write(bytes);
        written += group.size;
      }
    }
    process.send?.({ type: 'tick', id: message.id, at, written, writeMs: now() - at });
  } else if (message.type === 'streams') {
    process.send?.({ type: 'streams', id: message.id, open });
  } else if (message.type === 'clock') {
    process.send?.({ type: 'clock', id: message.id, now: now() });
  }
});

server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  console.log(`floor listening on http://127.0.0.1:${port}/graphql`);
});

const stop = () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
