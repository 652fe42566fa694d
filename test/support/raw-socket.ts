import { once } from 'node:events';
import { connect, type Socket } from 'node:net';

/**
 * Raw client sockets to a server on 127.0.0.1, for tests that write requests byte by byte: each
 * from a loopback address of its choice, with what it receives, its closing observable and its
 * local port; `destroyAll` (a file's afterEach) ends whatever a test left open.
 */
export function rawSockets() {
  const open: Socket[] = [];
  const connectTo = async (port: number, from = '127.0.0.1') => {
    const socket = connect({ port, host: '127.0.0.1', localAddress: from });
    socket.on('error', () => {});
    open.push(socket);
    const client = {
      socket,
      received: '',
      closed: new Promise<void>((resolve) => socket.once('close', () => resolve())),
      /** Its local port, kept: a closed socket no longer names it. */
      port: 0,
    };
    socket.on('data', (chunk: Buffer) => {
      client.received += chunk.toString();
    });
    await once(socket, 'connect');
    client.port = socket.localPort as number;
    return client;
  };
  return {
    connect: connectTo,
    destroyAll: () => {
      for (const socket of open.splice(0)) socket.destroy();
    },
  };
}

export type RawClient = Awaited<ReturnType<ReturnType<typeof rawSockets>['connect']>>;
