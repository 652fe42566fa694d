import { createServer, type RequestListener, type Server } from 'node:http';
import type { ServerLimits } from '../config.js';

/**
 * The gateway's node:http server, with the limits a reverse proxy in front of it would set, so
 * that slow or idle clients cannot hold sockets: headers complete within HEADERS_TIMEOUT_MS and the
 * whole request within REQUEST_TIMEOUT_MS (both answered 408 and closed by node:http), idle
 * keep-alive connections closed after KEEP_ALIVE_TIMEOUT_MS, and at most MAX_CONNECTIONS sockets:
 * node:http closes any connection beyond, on arrival, and `refused` counts it.
 */
export function createGatewayServer(
  listener: RequestListener,
  limits: ServerLimits,
  refused: () => void,
): Server {
  const server = createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      // node:http checks both timeouts on this interval (30 s by default, which would let a client
      // keep its socket for up to 30 s past them): a tenth of the header timeout, at most a second.
      connectionsCheckingInterval: Math.min(1_000, Math.ceil(limits.headersTimeoutMs / 10)),
    },
    listener,
  );
  server.maxConnections = limits.maxConnections;
  server.on('drop', refused);
  return server;
}
