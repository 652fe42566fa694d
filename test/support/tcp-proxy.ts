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
  const server = createServer((client) => {
    const target = connect(targetPort, '127.0.0.1');
    track(client);
    track(target);
    client.pipe(target);
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
  };
}
