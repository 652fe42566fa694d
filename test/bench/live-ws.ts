import { createHash, randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { now, type Opened, openInBatches, type Reader, recordHeight, type Stream } from './live-load.js';

/**
 * graphql-ws streams for `npm run bench -- --live --transports ws`: one subscription per socket, as
 * a browser tab holds it (subprotocol `graphql-transport-ws`). Read as live-load.ts reads SSE, so
 * that the reader is not what is measured: a bare socket, the upgrade written by hand, the server's
 * frames (never masked, never fragmented by `ws`) undone in place, messages read as Latin-1, a
 * `next` found by its `"type":"next"` and a block by the first `"height":` after it. The client's
 * own frames (connection_init, subscribe, pongs) are masked, as RFC 6455 requires of a client; a
 * ping is answered at once, or the gateway would close the socket at its next one.
 */

const WS_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
const PROTOCOL = 'graphql-transport-ws';
const TEXT = 0x1;
const CLOSE = 0x8;
const PING = 0x9;
const PONG = 0xa;

interface WsStream extends Stream {
  /** The upgrade's answer until it is complete; then null. */
  head: string | null;
  /** The start of a frame whose end has not come yet. */
  pending: Buffer | null;
  /** Called once: acknowledged and subscribed, or refused. */
  settle: (outcome: Stream | string) => void;
}

/** A client frame: masked, in one piece. */
function clientFrame(opcode: number, payload: Buffer): Buffer {
  const length = payload.length;
  const head = length < 126 ? 2 : length < 65_536 ? 4 : 10;
  const frame = Buffer.allocUnsafe(head + 4 + length);
  frame[0] = 0x80 | opcode;
  if (length < 126) frame[1] = 0x80 | length;
  else if (length < 65_536) {
    frame[1] = 0x80 | 126;
    frame.writeUInt16BE(length, 2);
  } else {
    frame[1] = 0x80 | 127;
    frame.writeBigUInt64BE(BigInt(length), 2);
  }
  const mask = randomBytes(4);
  mask.copy(frame, head);
  for (let i = 0; i < length; i++) frame[head + 4 + i] = (payload[i] as number) ^ (mask[i & 3] as number);
  return frame;
}

const send = (stream: WsStream, message: string) =>
  stream.socket.write(clientFrame(TEXT, Buffer.from(message)));

/** One graphql-ws message from the server. */
function onMessage(reader: Reader, stream: WsStream, text: string, body: string, at: number): void {
  const type = text.indexOf('"type":"');
  if (text.startsWith('next', type + 8)) {
    stream.frames++;
    if (reader.heights) recordHeight(reader, stream, text, type, at);
    if (stream.keep) stream.last = text.slice(text.indexOf('"payload":') + 10, -1);
  } else if (text.startsWith('connection_ack', type + 8)) {
    send(stream, `{"id":"1","type":"subscribe","payload":${body}}`);
    stream.settle(stream);
  } else if (text.startsWith('complete', type + 8)) stream.completed = true;
  else if (text.startsWith('error', type + 8)) {
    stream.completed = true;
    stream.error = text.slice(0, 300);
  } else if (text.startsWith('ping', type + 8)) send(stream, '{"type":"pong"}');
}

/** The server's frames in one read, from `start`; a frame cut by the read waits in `pending`. */
function onFrames(reader: Reader, stream: WsStream, buf: Buffer, start: number, body: string, at: number) {
  // Streams whose sample is kept decode UTF-8 (the floor writes the same bytes); the others Latin-1.
  const encoding = stream.keep ? 'utf8' : 'latin1';
  const data = stream.pending ? Buffer.concat([stream.pending, buf.subarray(start)]) : buf;
  let i = stream.pending ? 0 : start;
  stream.pending = null;
  while (data.length - i >= 2) {
    const opcode = (data[i] as number) & 0x0f;
    let length = (data[i + 1] as number) & 0x7f;
    let head = 2;
    if (length === 126) {
      if (data.length - i < 4) break;
      length = data.readUInt16BE(i + 2);
      head = 4;
    } else if (length === 127) {
      if (data.length - i < 10) break;
      length = Number(data.readBigUInt64BE(i + 2));
      head = 10;
    }
    if (data.length - i < head + length) break;
    const from = i + head;
    i = from + length;
    if (opcode === TEXT) onMessage(reader, stream, data.toString(encoding, from, i), body, at);
    else if (opcode === PING) stream.socket.write(clientFrame(PONG, data.subarray(from, i)));
    else if (opcode === CLOSE) {
      stream.completed = true;
      stream.settle(`closed ${length >= 2 ? data.readUInt16BE(from) : ''}`.trim());
    }
  }
  if (i < data.length) stream.pending = Buffer.from(data.subarray(i));
}

/** Opens one socket and subscribes with `body`; resolves once acknowledged, or with why it was refused. */
function openSocket(
  reader: Reader,
  url: URL,
  body: string,
  localAddress: string,
  group: number,
  keep: boolean,
): Promise<Stream | string> {
  return new Promise((resolve) => {
    let settled = false;
    const socket = connect({ host: url.hostname, port: Number(url.port), localAddress, noDelay: true });
    const key = randomBytes(16).toString('base64');
    const accept = createHash('sha1')
      .update(key + WS_GUID)
      .digest('base64');
    const stream: WsStream = {
      frames: 0,
      lastHeight: 0,
      disorder: 0,
      completed: false,
      closed: false,
      keep,
      group,
      socket,
      head: '',
      pending: null,
      settle: (outcome) => {
        if (settled) return;
        settled = true;
        if (typeof outcome === 'string') socket.destroy();
        resolve(outcome);
      },
    };
    socket.on('data', (buf: Buffer) => {
      const at = now();
      if (stream.head === null) return onFrames(reader, stream, buf, 0, body, at);
      const before = stream.head.length;
      stream.head += buf.toString('latin1');
      const end = stream.head.indexOf('\r\n\r\n');
      if (end === -1) return;
      const head = stream.head.slice(0, end);
      stream.head = null;
      if (
        !/^HTTP\/1\.1 101 /.test(head) ||
        !head.toLowerCase().includes(`sec-websocket-accept: ${accept}`.toLowerCase())
      )
        return stream.settle(head.split('\r\n')[0] ?? 'no status line');
      send(stream, '{"type":"connection_init"}');
      onFrames(reader, stream, buf, end + 4 - before, body, at);
    });
    socket.on('close', () => {
      stream.closed = true;
      stream.settle(stream.error ?? 'closed before its connection_ack');
    });
    socket.on('error', (error) => {
      stream.error = error.message;
    });
    socket.write(
      `GET ${url.pathname} HTTP/1.1\r\nhost: ${url.host}\r\nupgrade: websocket\r\nconnection: Upgrade\r\n` +
        `sec-websocket-key: ${key}\r\nsec-websocket-version: 13\r\nsec-websocket-protocol: ${PROTOCOL}\r\n\r\n`,
    );
  });
}

/** `count` graphql-ws subscriptions, one per socket (live-load.ts's openInBatches). */
export function openManyWs(reader: Reader, url: string, count: number, bodies: string[]): Promise<Opened> {
  const target = new URL(url);
  return openInBatches(count, bodies, (body, from, group, keep) =>
    openSocket(reader, target, body, from, group, keep),
  );
}
