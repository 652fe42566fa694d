import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type Delivery, UpstreamError } from '../../src/errors.js';
import { buildPath, UpstreamHttp, type UpstreamHttpOptions } from '../../src/upstream/http.js';
import { refusedUrl } from '../support/fault-upstream.js';
import { until } from '../support/until.js';

/** Purpose-built upstreams on 127.0.0.1 that misbehave on cue, and count what reaches them. */
const servers: Server[] = [];
const clients: UpstreamHttp[] = [];

async function upstream(
  handler: (req: IncomingMessage, res: ServerResponse, n: number) => void,
  options: Partial<UpstreamHttpOptions> = {},
) {
  let n = 0;
  const requests: { method: string; url: string }[] = [];
  const server = createServer((req, res) => {
    requests.push({ method: req.method ?? '', url: req.url ?? '' });
    handler(req, res, n++);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const http = new UpstreamHttp({
    name: 'stake',
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    timeoutMs: 500,
    connections: 4,
    maxResponseBytes: 1024 * 1024,
    ...options,
  });
  clients.push(http);
  return { http, requests };
}

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    s.close();
  }
});

const failure = async (promise: Promise<unknown>) => {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(UpstreamError);
  return error as UpstreamError;
};

describe('UpstreamHttp', () => {
  it('encodes every query value so that nothing can change the path', () => {
    expect(
      buildPath('/api/v1/search', {
        q: '../../admin?x=1#frag\r\n%2F',
        'pagination.page': 2,
        skip: undefined,
      }),
    ).toBe('/api/v1/search?q=..%2F..%2Fadmin%3Fx%3D1%23frag%0D%0A%252F&pagination.page=2');
  });

  it('retries a GET once after a 503, then succeeds', async () => {
    const { http, requests } = await upstream((_req, res, n) =>
      n === 0 ? json(res, 503, {}) : json(res, 200, { ok: true }),
    );
    await expect(http.get('/x')).resolves.toEqual({ status: 200, body: { ok: true } });
    expect(requests).toHaveLength(2);
  });

  it('gives up after one retry', async () => {
    const { http, requests } = await upstream((_req, res) => json(res, 503, { code: 503, message: 'down' }));
    const error = await failure(http.get('/x'));
    expect(error.extensions).toEqual({ code: 'UPSTREAM_ERROR', upstream: 'stake' });
    expect(requests).toHaveLength(2);
  });

  it('never retries a PUT', async () => {
    const { http, requests } = await upstream((_req, res) => json(res, 503, {}));
    await failure(http.put('/x', { a: 1 }));
    expect(requests).toEqual([{ method: 'PUT', url: '/x' }]);
  });

  it('never retries a PUT after a reset connection, which a GET would retry', async () => {
    const { http, requests } = await upstream((req) => afterBody(req, () => req.socket.destroy()));
    const error = await failure(http.put('/x', { a: 1 }));
    expect(error.extensions).toEqual({ code: 'UPSTREAM_UNAVAILABLE', upstream: 'stake' });
    expect(requests).toEqual([{ method: 'PUT', url: '/x' }]);
  });

  it('retries a GET once after a reset connection', async () => {
    const { http, requests } = await upstream((req, res, n) =>
      n === 0 ? req.socket.destroy() : json(res, 200, [1]),
    );
    await expect(http.get('/x')).resolves.toEqual({ status: 200, body: [1] });
    expect(requests).toHaveLength(2);
  });

  it('times out a hanging upstream with UPSTREAM_TIMEOUT', async () => {
    const { http } = await upstream(() => {});
    const error = await failure(http.get('/x'));
    expect(error.extensions).toEqual({ code: 'UPSTREAM_TIMEOUT', upstream: 'stake' });
  });

  it('refuses a body over the size cap', async () => {
    const { http } = await upstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(`"${'x'.repeat(2 * 1024 * 1024)}"`);
    });
    const error = await failure(http.get('/x'));
    expect(error.extensions.code).toBe('UPSTREAM_ERROR');
  });

  it('treats a 2xx body that is not JSON as UPSTREAM_ERROR', async () => {
    const { http } = await upstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>oops</html>');
    });
    const error = await failure(http.get('/x'));
    expect(error.extensions.code).toBe('UPSTREAM_ERROR');
    expect(error.message).not.toContain('oops');
  });

  it('reads a body that arrives in pieces, a character split between two of them, after a byte order mark', async () => {
    const text = JSON.stringify({
      name: 'Ålesund validator ✓',
      rows: Array.from({ length: 50 }, (_, i) => i),
    });
    const bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text)]);
    // Cut inside the two-byte Å, then inside the three-byte ✓: each piece alone is not valid UTF-8.
    const cuts = [
      0,
      3 + text.indexOf('Å') + 1,
      3 + Buffer.byteLength(text.slice(0, text.indexOf('✓'))) + 2,
      bytes.length,
    ];
    const { http } = await upstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      let piece = 0;
      const next = () => {
        piece++;
        if (piece === cuts.length) return res.end();
        res.write(bytes.subarray(cuts[piece - 1], cuts[piece]), next);
      };
      next();
    });
    const response = await http.get('/x');
    expect(response).toEqual({ status: 200, body: JSON.parse(text) });
  });

  it('stops the upstream call when the caller aborts', async () => {
    // A budget far beyond the test's: only the caller's abort can close the connection.
    let arrived = (_request: { closed: Promise<unknown> }) => {};
    const received = new Promise<{ closed: Promise<unknown> }>((resolve) => (arrived = resolve));
    const { http } = await upstream((req) => arrived({ closed: once(req.socket, 'close') }), {
      timeoutMs: 60_000,
    });
    const caller = new AbortController();
    const call = http.get('/x', { signal: caller.signal });
    const { closed } = await received;
    caller.abort(new Error('client went away'));
    await expect(call).rejects.toThrow('client went away');
    await closed;
  });

  it('opens the circuit after consecutive failures, fails fast while open, and recovers through a trial call', async () => {
    // The breaker reads Date.now(): a fake clock moves it exactly to the half-open moment.
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      let healthy = false;
      const { http, requests } = await upstream(
        (_req, res) => json(res, healthy ? 200 : 500, { ok: healthy }),
        {
          resilience: { failureThreshold: 3, halfOpenAfterMs: 150 },
        },
      );
      for (let i = 0; i < 3; i++)
        expect((await failure(http.get('/x'))).extensions.code).toBe('UPSTREAM_ERROR');
      expect(http.circuit).toBe('open');
      const fast = await failure(http.get('/x'));
      expect(fast.extensions).toEqual({ code: 'UPSTREAM_UNAVAILABLE', upstream: 'stake' });
      expect(requests).toHaveLength(3);
      healthy = true;
      vi.advanceTimersByTime(149);
      expect((await failure(http.get('/x'))).extensions.code).toBe('UPSTREAM_UNAVAILABLE');
      expect(requests).toHaveLength(3);
      vi.advanceTimersByTime(1);
      await expect(http.get('/x')).resolves.toEqual({ status: 200, body: { ok: true } });
      expect(http.circuit).toBe('closed');
      expect(requests).toHaveLength(4);
    } finally {
      vi.useRealTimers();
    }
  });

  it('does not count 4xx answers or caller aborts against the circuit', async () => {
    const { http } = await upstream((_req, res) => json(res, 404, {}), {
      resilience: { failureThreshold: 2, halfOpenAfterMs: 10_000 },
    });
    for (let i = 0; i < 5; i++) await failure(http.get('/x'));
    expect(http.circuit).toBe('closed');
  });

  it('caps calls in flight and refuses beyond its queue instead of piling up', async () => {
    // The first two calls are held by the upstream until released: the pool is saturated meanwhile.
    const held: ServerResponse[] = [];
    let saturated: () => void = () => {};
    const bothHeld = new Promise<void>((resolve) => {
      saturated = resolve;
    });
    const { http, requests } = await upstream(
      (_req, res, n) => {
        if (n >= 2) return json(res, 200, { n });
        held.push(res);
        if (held.length === 2) saturated();
      },
      { connections: 2, timeoutMs: 60_000 },
    );
    const calls = Array.from({ length: 2 + 16 + 3 }, () =>
      http.get('/x').then(
        () => 'ok',
        (e: UpstreamError) => e.extensions.code,
      ),
    );
    // Beyond two in flight and 16 queued, calls are refused at once.
    expect(await Promise.all(calls.slice(18))).toEqual(Array(3).fill('UPSTREAM_UNAVAILABLE'));
    await bothHeld;
    // While the two connections are busy, the queued calls wait in the gateway, not at the upstream.
    expect(requests).toHaveLength(2);
    for (const res of held) json(res, 200, {});
    expect(await Promise.all(calls.slice(0, 18))).toEqual(Array(18).fill('ok'));
    expect(requests).toHaveLength(18);
  });
});

/** Runs `then` once the whole request has been read: the upstream has it, whatever it does next. */
function afterBody(req: IncomingMessage, then: () => void) {
  req.resume();
  req.once('end', then);
}

/** Answers `status` and the first bytes of a body announced as longer, then does `next`. */
const partial =
  (status: number, next: (res: ServerResponse) => void) => (req: IncomingMessage, res: ServerResponse) =>
    afterBody(req, () => {
      res.writeHead(status, { 'content-type': 'application/json', 'content-length': '100' });
      res.write('{"round": ', () => next(res));
    });

describe('how far a failed request got (its delivery: whether a write may have happened)', () => {
  type Upstream = (req: IncomingMessage, res: ServerResponse) => void;
  const meets: { label: string; code: string; delivery: Delivery; handler: Upstream }[] = [
    {
      label: 'closed after the request was read',
      code: 'UPSTREAM_UNAVAILABLE',
      delivery: 'sent',
      handler: (req) => afterBody(req, () => req.socket.destroy()),
    },
    {
      label: 'reset after the request was read',
      code: 'UPSTREAM_UNAVAILABLE',
      delivery: 'sent',
      handler: (req) => afterBody(req, () => req.socket.resetAndDestroy()),
    },
    { label: 'no headers within the budget', code: 'UPSTREAM_TIMEOUT', delivery: 'sent', handler: () => {} },
    {
      label: 'a 2xx whose body is cut',
      code: 'UPSTREAM_UNAVAILABLE',
      delivery: 200,
      handler: partial(200, (res) => res.socket?.destroy()),
    },
    {
      label: 'a 2xx whose body stalls past the budget',
      code: 'UPSTREAM_TIMEOUT',
      delivery: 200,
      handler: partial(200, () => {}),
    },
    {
      label: 'a 2xx whose body is over the size cap',
      code: 'UPSTREAM_ERROR',
      delivery: 200,
      handler: (req, res) => afterBody(req, () => json(res, 200, 'x'.repeat(2 * 1024 * 1024))),
    },
    {
      label: 'a 2xx whose body is not JSON',
      code: 'UPSTREAM_ERROR',
      delivery: 200,
      handler: (req, res) => afterBody(req, () => res.end('<html>')),
    },
    {
      label: 'a 409',
      code: 'UPSTREAM_ERROR',
      delivery: 409,
      handler: (req, res) => afterBody(req, () => json(res, 409, {})),
    },
    {
      label: 'a 503 whose body is cut',
      code: 'UPSTREAM_UNAVAILABLE',
      delivery: 503,
      handler: partial(503, (res) => res.socket?.destroy()),
    },
  ];
  for (const { label, code, delivery, handler } of meets) {
    it(`a PUT that meets ${label}: ${code}, delivery ${delivery}, sent once`, async () => {
      const { http, requests } = await upstream(handler);
      const error = await failure(http.put('/x', { a: 1 }));
      expect(error.extensions.code).toBe(code);
      expect(error.delivery).toBe(delivery);
      expect(requests).toEqual([{ method: 'PUT', url: '/x' }]);
    });
  }

  it('a PUT to a refused connection: unsent', async () => {
    const http = new UpstreamHttp({
      name: 'stake',
      baseUrl: await refusedUrl(),
      timeoutMs: 500,
      connections: 1,
    });
    clients.push(http);
    const error = await failure(http.put('/x', { a: 1 }));
    expect(error.extensions.code).toBe('UPSTREAM_UNAVAILABLE');
    expect(error.delivery).toBe('unsent');
  });

  it('a PUT while the circuit is open: unsent, nothing reaches the upstream', async () => {
    const { http, requests } = await upstream((_req, res) => json(res, 500, {}), {
      resilience: { failureThreshold: 1, halfOpenAfterMs: 600_000 },
    });
    await failure(http.get('/x'));
    expect(http.circuit).toBe('open');
    const error = await failure(http.put('/x', { a: 1 }));
    expect(error.extensions).toEqual({ code: 'UPSTREAM_UNAVAILABLE', upstream: 'stake' });
    expect(error.delivery).toBe('unsent');
    expect(requests).toEqual([{ method: 'GET', url: '/x' }]);
  });

  it('a PUT whose caller has already gone: nothing reaches the upstream', async () => {
    const { http, requests } = await upstream((req, res) => afterBody(req, () => json(res, 200, {})));
    const gone = new AbortController();
    gone.abort(new Error('client went away'));
    await expect(http.put('/x', { a: 1 }, { signal: gone.signal })).rejects.toThrow('client went away');
    // A read after it, on the same connection: what was sent before it has arrived by its answer.
    await http.get('/after');
    expect(requests).toEqual([{ method: 'GET', url: '/after' }]);
  });

  it('a PUT whose caller leaves while it waits in the bulkhead: never sent once its turn comes', async () => {
    const held: ServerResponse[] = [];
    const { http, requests } = await upstream(
      (req, res) => (req.url === '/held' ? held.push(res) : afterBody(req, () => json(res, 200, {}))),
      { connections: 1, timeoutMs: 60_000 },
    );
    const first = http.get('/held');
    await until(() => held.length === 1, { what: 'the first call at the upstream' });
    const caller = new AbortController();
    const write = http.put('/x', { a: 1 }, { signal: caller.signal });
    const after = http.get('/after');
    caller.abort(new Error('client went away'));
    await expect(write).rejects.toThrow('client went away');
    json(held[0] as ServerResponse, 200, {});
    await first;
    // The bulkhead serves its queue in order: the read queued after the write is answered last.
    await after;
    expect(requests).toEqual([
      { method: 'GET', url: '/held' },
      { method: 'GET', url: '/after' },
    ]);
  });

  it('a PUT beyond the bulkhead: unsent, nothing reaches the upstream', async () => {
    const held: ServerResponse[] = [];
    const { http, requests } = await upstream((_req, res) => held.push(res), {
      connections: 1,
      timeoutMs: 60_000,
    });
    // One call in flight (held by the upstream) and eight queued fill the bulkhead.
    const reads = Array.from({ length: 9 }, () => http.get('/x').then(() => 'ok'));
    const error = await failure(http.put('/x', { a: 1 }));
    expect(error.extensions).toEqual({ code: 'UPSTREAM_UNAVAILABLE', upstream: 'stake' });
    expect(error.delivery).toBe('unsent');
    // One connection: the queued calls reach the upstream one after the other, each once answered.
    for (let i = 0; i < 9; i++) {
      await until(() => held.length === i + 1, { what: `queued call ${i + 1} at the upstream` });
      json(held[i] as ServerResponse, 200, {});
    }
    expect(await Promise.all(reads)).toEqual(Array(9).fill('ok'));
    expect(requests.filter((r) => r.method === 'PUT')).toEqual([]);
  });
});
