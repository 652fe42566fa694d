import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy on 127.0.0.1 in front of a real server (the tests' Redis) that a test can cut off
 * (every connection through it closed, new ones refused) and put back on the same port: a network
 * partition between one gateway and Redis while Redis itself, and every other connection to it,
 * carry on.
 */

export interface TcpProxy {
  port: number;
  /** Closes every connection through the proxy and refuses new ones until `mend()`. */
  cut(): Promise<void>;
  /** Accepts connections again, on the same port. */
  mend(): Promise<void>;
  /**
   * Holds what clients send (kept, in order, not forwarded) until `release()`: a server that has
   * stopped answering while every connection stays up. `sent()` is what was held so far, as text.
   */
  hold(): { sent(): string; release(): void };
  close(): Promise<void>;
}

const listen = (server: Server, port: number) =>
  new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });

export async function startTcpProxy(targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  };
  /** While held: each connection's target and what its client sent meanwhile. */
  let held: { target: Socket; chunk: Buffer }[] | null = null;
  const server = createServer((client) => {
    const target = connect(targetPort, '127.0.0.1');
    track(client);
    track(target);
    client.on('data', (chunk: Buffer) => {
      if (held) held.push({ target, chunk });
      else target.write(chunk);
    });
    target.pipe(client);
    client.on('close', () => target.destroy());
    target.on('close', () => client.destroy());
  });
  await listen(server, 0);
  const { port } = server.address() as { port: number };
  let open = true;
  const cut = async () => {
    if (!open) return;
    open = false;
    // Refused from now on (no listener), and every connection made so far closed.
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const socket of sockets) socket.destroy();
    await closed;
  };
  return {
    port,
    cut,
    async mend() {
      if (open) return;
      await listen(server, port);
      open = true;
    },
    close: cut,
    hold() {
      const chunks: { target: Socket; chunk: Buffer }[] = [];
      held = chunks;
      return {
        sent: () => Buffer.concat(chunks.map((c) => c.chunk)).toString('latin1'),
        release: () => {
          if (held === chunks) held = null;
          for (const { target, chunk } of chunks) if (!target.destroyed) target.write(chunk);
        },
      };
    },
  };
}
