import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A small HTTP load balancer on 127.0.0.1, as a Kubernetes Service with readiness probes behaves:
 * it checks each backend's `/readyz` every `checkMs`, sends each new request to the first backend
 * whose last check answered 200, and streams the answer back (an SSE stream included). It records
 * which backend served each request, so that tests see where a reconnection landed.
 */

export interface LoadBalancer {
  url: string;
  /** The backend (its index) of each request, in order of arrival. */
  served: number[];
  /** Each backend's readiness, as the last check found it. */
  ready: readonly boolean[];
  close(): Promise<void>;
}

export async function startLoadBalancer(backends: string[], checkMs = 50): Promise<LoadBalancer> {
  const ready = backends.map(() => false);
  const check = () =>
    backends.forEach((backend, i) => {
      fetch(new URL('/readyz', backend), { signal: AbortSignal.timeout(1_000) }).then(
        (res) => {
          ready[i] = res.status === 200;
          void res.body?.cancel();
        },
        () => {
          ready[i] = false;
        },
      );
    });
  check();
  const timer = setInterval(check, checkMs);
  const served: number[] = [];
  const server: Server = createServer((req, res) => {
    const index = ready.indexOf(true);
    if (index === -1) {
      res.writeHead(503).end();
      return;
    }
    served.push(index);
    const upstream = request(new URL(req.url ?? '/', backends[index]), {
      method: req.method,
      headers: req.headers,
      agent: false,
    });
    upstream.on('response', (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    res.on('close', () => upstream.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    served,
    ready,
    close: async () => {
      clearInterval(timer);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
