import { request } from 'node:http';

/**
 * A client that behaves as a browser's EventSource does (WHATWG HTML, server-sent events): a GET
 * asking for `text/event-stream`; `id:` fields remembered and sent back as `Last-Event-ID` when it
 * reconnects; `retry:` fields setting how long it waits before reconnecting, which it does
 * whenever the connection ends, until it is closed. Node 20 has no EventSource of its own.
 */

export interface EventSourceLike {
  /** The data of every `next` event received, over every connection, in order. */
  events: string[];
  /** The connections made so far (the first, and each reconnection). */
  connections: number;
  close(): void;
}

export function openEventSource(url: string, onEvent: () => void = () => {}): EventSourceLike {
  const source: EventSourceLike = { events: [], connections: 0, close: () => {} };
  let lastEventId: string | null = null;
  let retryMs = 3_000;
  let closed = false;
  let current: ReturnType<typeof request> | null = null;
  const connect = () => {
    if (closed) return;
    source.connections++;
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    if (lastEventId !== null) headers['last-event-id'] = lastEventId;
    const req = request(url, { headers, agent: false });
    current = req;
    let buffer = '';
    const reconnect = () => {
      if (current === req) setTimeout(connect, retryMs);
      current = null;
    };
    req.on('response', (res) => {
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          let event = 'message';
          let data: string | null = null;
          for (const line of block.split('\n')) {
            const [field, ...rest] = line.split(':');
            const value = rest.join(':').replace(/^ /, '');
            if (field === 'id') lastEventId = value;
            else if (field === 'retry' && /^\d+$/.test(value)) retryMs = Number(value);
            else if (field === 'event') event = value;
            else if (field === 'data') data = data === null ? value : `${data}\n${value}`;
          }
          if (event === 'next' && data !== null) {
            source.events.push(data);
            onEvent();
          }
        }
      });
      res.on('close', reconnect);
    });
    req.on('error', reconnect);
    req.end();
  };
  source.close = () => {
    closed = true;
    current?.destroy();
  };
  connect();
  return source;
}
