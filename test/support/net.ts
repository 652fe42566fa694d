import { createServer } from 'node:net';

/** A port free on this machine's loopback now (for a process or a container on the host's network). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** A GraphQL POST of `document` to `url`: its status and its parsed JSON body. */
export async function postQuery(url: string, document: string): Promise<{ status: number; body: any }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: document }),
  });
  return { status: res.status, body: await res.json() };
}
