import { EventEmitter, once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * A purpose-built upstream on 127.0.0.1 that misbehaves on cue, per path prefix, and otherwise
 * proxies to a real upstream (the devnet). It records every request, says when the next one
 * arrives and when the connection of one was closed, so that tests wait on those events rather
 * than on time.
 */

export type FaultMode =
  | 'proxy'
  | 'hang'
  | 'drip'
  /** The request read, then the connection closed (FIN) without an answer. */
  | 'reset'
  /** The request read, then the connection reset (TCP RST) without an answer. */
  | 'tcpReset'
  | 'stacktrace500'
  | 'invalidJson'
  | 'wrongShape'
  | 'envelopeError'
  | 'huge'
  | 'echoToken'
  /** Proxied with every page parameter dropped: the upstream answers page 1 whatever is asked. */
  | 'ignorePaging'
  /** Proxied (the upstream applies it), then answered 200 with a body that is not JSON. */
  | 'appliedUnreadable'
  /** Proxied, then answered with the upstream's status and half its body, and the connection closed. */
  | 'appliedCut'
  /** Proxied, then answered with the upstream's status and half its body, and the rest never sent. */
  | 'appliedStall'
  /** Proxied, then answered with the upstream's status and a body of 50 MiB. */
  | 'appliedHuge'
  /** Held, unanswered, until `release()`; then proxied. */
  | 'held'
  /** Proxied, with every list in the envelope's `data` in the opposite order (an upstream that sorts the other way). */
  | 'reversedLists';

export const LEAKY_TEXT =
  'ERROR: SELECT * FROM wallets WHERE key = $1 at Object.query (/srv/db/pool.js:88:13)';

export interface FaultRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  /** Resolves when the connection that carried the request closes. */
  closed: Promise<void>;
}

export interface FaultUpstream {
  url: string;
  requests: FaultRequest[];
  /** Makes every path starting with `prefix` misbehave as `mode` ('proxy' restores it). */
  set(prefix: string, mode: FaultMode): void;
  /** Resolves with the next request to arrive (call it before causing that request). */
  nextRequest(): Promise<FaultRequest>;
  /** Lets every request held so far (mode 'held') go on to the real upstream. */
  release(): void;
  close(): Promise<void>;
}

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

/** A JSON string of 50 MiB, written as fast as the reader takes it, far beyond any size cap. */
const huge = (res: ServerResponse, status: number) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  const chunk = Buffer.alloc(1024 * 1024, 0x20);
  res.write('{"pad":"');
  let sent = 0;
  const more = () => {
    while (sent < 50 && !res.destroyed) {
      sent++;
      if (!res.write(chunk)) return void res.once('drain', more);
    }
    if (!res.destroyed) res.end('"}');
  };
  more();
};

export async function startFaultUpstream(target: string): Promise<FaultUpstream> {
  const modes = new Map<string, FaultMode>();
  const requests: FaultRequest[] = [];
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  const events = new EventEmitter();
  let releaseHeld = () => {};
  let held = new Promise<void>((resolve) => (releaseHeld = resolve));

  const modeOf = (url: string): FaultMode => {
    for (const [prefix, mode] of modes) if (url.startsWith(prefix)) return mode;
    return 'proxy';
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const body = await new Promise<Buffer>((resolve) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => resolve(Buffer.concat(chunks)));
    });
    const url = req.url ?? '/';
    const mode = modeOf(url);
    switch (mode) {
      case 'hang':
        return;
      case 'reset':
        req.socket.destroy();
        return;
      case 'tcpReset':
        req.socket.resetAndDestroy();
        return;
      case 'drip': {
        res.writeHead(200, { 'content-type': 'application/json' });
        const text = JSON.stringify({ padding: 'x'.repeat(10_000) });
        let i = 0;
        const timer = setInterval(() => {
          if (i >= text.length || res.destroyed) {
            clearInterval(timer);
            res.end();
          } else res.write(text[i++] as string);
        }, 20);
        timers.add(timer);
        return;
      }
      case 'stacktrace500':
        res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(`Internal Server Error\n${LEAKY_TEXT}\n    at process (/srv/app/handler.js:12:5)`);
        return;
      case 'invalidJson':
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(`{"validators": [{"id": "1", "moniker": "${LEAKY_TEXT}"`);
        return;
      case 'wrongShape':
        return json(res, 200, { items: [{ name: LEAKY_TEXT }], code: 0, data: { rows: [] } });
      case 'envelopeError':
        return json(res, 200, { code: 50013, message: LEAKY_TEXT, data: null });
      case 'huge':
        return huge(res, 200);
      case 'echoToken': {
        // The caller's token comes back as data, late and in random order.
        const token = req.headers.authorization ?? 'none';
        const timer = setTimeout(
          () =>
            json(res, 200, {
              code: 0,
              message: 'success',
              data: {
                contracts: [{ address: `0x${'1'.repeat(40)}`, symbol: 'ECHO', name: token }],
                pagination: {
                  page: 1,
                  page_size: 20,
                  total: '1',
                  total_pages: 1,
                  has_prev: false,
                  has_next: false,
                },
              },
            }),
          Math.random() * 30,
        );
        timers.add(timer);
        return;
      }
      case 'ignorePaging': {
        const [path, query = ''] = url.split('?');
        const params = new URLSearchParams(query);
        for (const name of ['page', 'pagination.page', 'pagination.cursor']) params.delete(name);
        const upstream = await forward(`${path}?${params}`, req, body);
        res.writeHead(upstream.status, { 'content-type': 'application/json' });
        res.end(Buffer.from(await upstream.arrayBuffer()));
        return;
      }
      case 'held': {
        await held;
        const upstream = await forward(url, req, body);
        res.writeHead(upstream.status, { 'content-type': 'application/json' });
        res.end(Buffer.from(await upstream.arrayBuffer()));
        return;
      }
      case 'reversedLists': {
        const upstream = await forward(url, req, body);
        const answer = (await upstream.json()) as { data?: Record<string, unknown> };
        for (const value of Object.values(answer.data ?? {})) if (Array.isArray(value)) value.reverse();
        return json(res, upstream.status, answer);
      }
      case 'appliedUnreadable': {
        const upstream = await forward(url, req, body);
        await upstream.arrayBuffer();
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"round": {"roundId": "round-006", "totalSlots": ');
        return;
      }
      case 'appliedCut':
      case 'appliedStall': {
        // The whole length announced, half of it sent: the rest is cut off, or never comes.
        const upstream = await forward(url, req, body);
        const answer = Buffer.from(await upstream.arrayBuffer());
        res.writeHead(upstream.status, {
          'content-type': 'application/json',
          'content-length': String(answer.length),
        });
        // Cut only once the status and the first half have left, else nothing would have.
        res.write(answer.subarray(0, answer.length >> 1), () => {
          if (mode === 'appliedCut') res.socket?.destroy();
        });
        return;
      }
      case 'appliedHuge': {
        const upstream = await forward(url, req, body);
        await upstream.arrayBuffer();
        return huge(res, upstream.status);
      }
      default: {
        const upstream = await forward(url, req, body);
        res.writeHead(upstream.status, { 'content-type': 'application/json' });
        res.end(Buffer.from(await upstream.arrayBuffer()));
      }
    }
  };

  const forward = (url: string, req: IncomingMessage, body: Buffer) =>
    fetch(target + url, {
      method: req.method ?? 'GET',
      headers: Object.fromEntries(
        Object.entries(req.headers).filter(([k]) => ['authorization', 'content-type'].includes(k)),
      ) as Record<string, string>,
      ...(body.length > 0 ? { body: body.toString('utf8') } : {}),
    });

  const server = createServer((req, res) => {
    const request: FaultRequest = {
      method: req.method ?? '',
      url: req.url ?? '',
      headers: req.headers,
      closed: new Promise((resolve) => req.socket.once('close', () => resolve())),
    };
    requests.push(request);
    events.emit('request', request);
    handle(req, res).catch(() => res.destroy());
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));

  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    set: (prefix, mode) => {
      modes.delete(prefix);
      if (mode !== 'proxy') modes.set(prefix, mode);
    },
    nextRequest: async () => {
      const [request] = await once(events, 'request');
      return request as FaultRequest;
    },
    release: () => {
      releaseHeld();
      held = new Promise<void>((resolve) => (releaseHeld = resolve));
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const t of timers) clearTimeout(t);
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A URL on 127.0.0.1 where nothing listens: connections are refused. */
export async function refusedUrl(): Promise<string> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}
