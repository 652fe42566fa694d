import { connect, type Socket } from 'node:net';

/**
 * The load generator of `npm run bench -- --live`: SSE subscriptions (graphql-ws ones: live-ws.ts),
 * one connection each, read on one core. Tens of thousands of streams each get a frame per block, and node:http's client (its
 * parser, an IncomingMessage stream and a string decoder per stream) cost about 30 µs a frame:
 * at 10,000 streams the reader, not the target, made the latency. So each stream is a bare socket:
 * the request written by hand, the response's status line and headers read once, the chunked body
 * undone in place, and the SSE text read as Latin-1 (the patterns looked for are ASCII): a frame
 * is found by its `event: next` line and a block by the first `"height":` after it (no
 * JSON.parse). Receipts are stamped once per socket read with the machine clock the devnet and
 * the floor stamp with.
 */

/** Milliseconds on the machine clock, with sub-millisecond precision, comparable between processes. */
export const now = () => performance.timeOrigin + performance.now();

/** What the figures read of an open stream, whichever transport carries it. */
export interface Stream {
  /** Events received (`event: next` frames, graphql-ws `next` messages). */
  frames: number;
  /** The highest height received (block streams). */
  lastHeight: number;
  /** Heights received at or below one received before: a repeat or a block out of order. */
  disorder: number;
  /** Whether the server sent `event: complete`, or closed the stream. */
  completed: boolean;
  closed: boolean;
  error?: string;
  /** The data line of the last frame, kept on the streams asked to (a sample for the floor). */
  last?: string;
  keep: boolean;
  /** The index of the body it was opened with. */
  group: number;
  socket: Socket;
}

/** An SSE stream: its HTTP response read by hand. */
interface SseStream extends Stream {
  /** The response head until it is complete; then null. */
  head: string | null;
  chunked: boolean;
  /** Bytes left in the current HTTP chunk; 0 while reading a chunk-size line. */
  remaining: number;
  /** Bytes of a chunk's closing CRLF still to skip. */
  skip: number;
  sizeLine: string;
  /** The start of an SSE frame whose end has not come yet. */
  tail: string;
}

export interface Reader {
  /** Whether frames carry a block height to read. */
  heights: boolean;
  /** Receipt times of each height over all streams (block streams). */
  receipts: Map<number, number[]>;
}

const HEIGHT = /"height":(\d+)/g;

/** Records the block height of the event at `index` of `text` (the first `"height":` from there). */
export function recordHeight(reader: Reader, stream: Stream, text: string, index: number, at: number): void {
  HEIGHT.lastIndex = index;
  const match = HEIGHT.exec(text);
  if (!match) return;
  const height = Number(match[1]);
  if (height <= stream.lastHeight) stream.disorder++;
  else stream.lastHeight = height;
  const times = reader.receipts.get(height);
  if (times) times.push(at);
  else reader.receipts.set(height, [at]);
}

/** The complete SSE frames of a piece of the body (a frame may straddle reads: its start waits in `tail`). */
function onText(reader: Reader, stream: SseStream, chunk: string, at: number): void {
  const text = stream.tail ? stream.tail + chunk : chunk;
  const end = text.lastIndexOf('\n\n');
  if (end === -1) {
    stream.tail = text;
    return;
  }
  stream.tail = end + 2 < text.length ? text.slice(end + 2) : '';
  let index = text.indexOf('event: ');
  while (index !== -1 && index < end) {
    if (text.startsWith('event: next', index)) {
      stream.frames++;
      if (reader.heights) recordHeight(reader, stream, text, index, at);
      if (stream.keep) {
        const data = text.indexOf('data: ', index) + 6;
        stream.last = text.slice(data, text.indexOf('\n', data));
      }
    } else if (text.startsWith('event: complete', index)) stream.completed = true;
    index = text.indexOf('event: ', index + 7);
  }
}

/** Undoes the chunked transfer coding of one read, from `start`, and reads the SSE text in it. */
function onBody(reader: Reader, stream: SseStream, buf: Buffer, start: number, at: number): void {
  // Streams whose sample is kept decode UTF-8 (the floor writes the same bytes); the others Latin-1.
  const encoding = stream.keep ? 'utf8' : 'latin1';
  if (!stream.chunked) {
    if (start < buf.length) onText(reader, stream, buf.toString(encoding, start), at);
    return;
  }
  let text = '';
  let i = start;
  while (i < buf.length) {
    if (stream.skip > 0) {
      const n = Math.min(stream.skip, buf.length - i);
      stream.skip -= n;
      i += n;
    } else if (stream.remaining > 0) {
      const n = Math.min(stream.remaining, buf.length - i);
      text += buf.toString(encoding, i, i + n);
      stream.remaining -= n;
      i += n;
      if (stream.remaining === 0) stream.skip = 2;
    } else {
      const lf = buf.indexOf(10, i);
      if (lf === -1) {
        stream.sizeLine += buf.toString('latin1', i);
        break;
      }
      const size = Number.parseInt(stream.sizeLine + buf.toString('latin1', i, lf), 16);
      stream.sizeLine = '';
      i = lf + 1;
      // The last chunk: the server ended the stream.
      if (size === 0) stream.completed = true;
      else stream.remaining = size;
    }
  }
  if (text) onText(reader, stream, text, at);
}

/** The loopback source addresses client sockets are spread over (no ephemeral-port exhaustion). */
export const SOURCE_ADDRESSES = ['2', '3', '4', '5', '6', '7', '8', '9'].map((n) => `127.0.0.${n}`);

/** Opens one SSE subscription; resolves once its headers came, or with the reason it was refused. */
function openStream(
  reader: Reader,
  url: URL,
  body: string,
  localAddress: string,
  group: number,
  keep: boolean,
): Promise<Stream | string> {
  return new Promise((resolve) => {
    const socket = connect({ host: url.hostname, port: Number(url.port), localAddress, noDelay: true });
    const stream: SseStream = {
      frames: 0,
      lastHeight: 0,
      disorder: 0,
      completed: false,
      closed: false,
      keep,
      group,
      socket,
      head: '',
      chunked: false,
      remaining: 0,
      skip: 0,
      sizeLine: '',
      tail: '',
    };
    socket.on('data', (buf: Buffer) => {
      const at = now();
      if (stream.head === null) return onBody(reader, stream, buf, 0, at);
      const before = stream.head.length;
      stream.head += buf.toString('latin1');
      const end = stream.head.indexOf('\r\n\r\n');
      if (end === -1) return;
      const head = stream.head.slice(0, end);
      stream.head = null;
      if (!/^HTTP\/1\.1 200 /.test(head)) {
        socket.destroy();
        return resolve(head.split('\r\n')[0] ?? 'no status line');
      }
      stream.chunked = /\r\ntransfer-encoding:\s*chunked/i.test(head);
      resolve(stream);
      onBody(reader, stream, buf, end + 4 - before, at);
    });
    socket.on('close', () => {
      stream.closed = true;
      resolve(stream.error ?? 'closed before its headers');
    });
    socket.on('error', (error) => {
      stream.error = error.message;
    });
    socket.write(
      `POST ${url.pathname} HTTP/1.1\r\nhost: ${url.host}\r\ncontent-type: application/json\r\n` +
        `accept: text/event-stream\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  });
}

export interface Opened {
  streams: Stream[];
  /** Streams refused (a status other than 200, or a socket error), and the first reason. */
  refused: number;
  firstRefusal?: string;
}

/** Opens one stream with `body` from `from`: the stream, or why it was refused. */
export type OpenOne = (body: string, from: string, group: number, keep: boolean) => Promise<Stream | string>;

/**
 * Opens `count` streams, stream i with `bodies[i % bodies.length]`, in batches of 500 so that the
 * target's accept queue is not what is measured; the first stream of each body keeps its last frame.
 */
export async function openInBatches(count: number, bodies: string[], open: OpenOne): Promise<Opened> {
  const opened: Opened = { streams: [], refused: 0 };
  for (let i = 0; i < count; i += 500) {
    const batch = Array.from({ length: Math.min(500, count - i) }, (_, j) => {
      const n = i + j;
      const group = n % bodies.length;
      const from = SOURCE_ADDRESSES[n % SOURCE_ADDRESSES.length] as string;
      return open(bodies[group] as string, from, group, n < bodies.length);
    });
    for (const result of await Promise.all(batch)) {
      if (typeof result === 'string') {
        opened.refused++;
        opened.firstRefusal ??= result;
      } else opened.streams.push(result);
    }
  }
  return opened;
}

/** `count` SSE subscriptions (openInBatches). */
export function openMany(reader: Reader, url: string, count: number, bodies: string[]): Promise<Opened> {
  const target = new URL(url);
  return openInBatches(count, bodies, (body, from, group, keep) =>
    openStream(reader, target, body, from, group, keep),
  );
}

export function closeAll(streams: Stream[]): void {
  for (const s of streams) s.socket.destroy();
}
