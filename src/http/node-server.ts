import { createServer, type IncomingMessage, type RequestListener, type Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Config } from '../config.js';
import type { CorsPolicy } from '../exchange/headers.js';
import type { GatewayMetrics } from '../ops/metrics.js';
import { type ClientIdentity, clientAddress } from '../scale/rate-limit.js';
import { Intake, type IntakeMetrics } from './intake.js';

/**
 * The gateway's node:http server, with the limits a reverse proxy in front of it would set, so
 * that slow, idle or greedy clients cannot hold sockets or memory: headers complete within
 * HEADERS_TIMEOUT_MS and the whole request within REQUEST_TIMEOUT_MS (both answered 408 and closed
 * by node:http), idle keep-alive connections closed after KEEP_ALIVE_TIMEOUT_MS, and at most
 * MAX_CONNECTIONS sockets: node:http closes any connection beyond, on arrival, and
 * `http_connections_refused_total` counts it. Every request then passes intake (intake.ts) before
 * the gateway's listener sees it: the bytes of request bodies in flight (MAX_INFLIGHT_BODY_BYTES,
 * 503), a client's connections (MAX_CONNECTIONS_PER_CLIENT, 429) and a body's pace (MIN_BODY_RATE
 * after BODY_TIMEOUT_MS, 408), each counted in `http_requests_refused_total{reason}`; a request
 * sent with `Expect: 100-continue` is told to send its body only once admitted.
 */

/** What the server reads of the configuration: its limits, the body cap, who a client is. */
export type GatewayServerSettings = Pick<Config, 'server' | 'limits' | 'scale'>;

export type GatewayServerMetrics = Pick<GatewayMetrics, 'observeRefusedConnection'> & IntakeMetrics;

/** What node:http's server hands an `upgrade` listener (GraphQL over WebSocket: websocket.ts). */
export type UpgradeListener = (req: IncomingMessage, socket: Duplex, head: Buffer) => void;

/** What the server serves of a gateway (gateway.ts). */
export interface ServedGateway {
  listener: RequestListener;
  /** GraphQL over WebSocket (websocket.ts); without it, an upgrade is left to node:http, which closes it. */
  upgrade?: UpgradeListener;
  metrics: GatewayServerMetrics;
  /** The gateway's one CORS policy, which intake's refusals answer by too. */
  cors: CorsPolicy;
}

export function createGatewayServer(
  { listener, upgrade, metrics, cors }: ServedGateway,
  settings: GatewayServerSettings,
): Server {
  const { server: limits } = settings;
  const intake = new Intake({
    limits,
    maxRequestBytes: settings.limits.requestBytes,
    identity: settings.scale,
    cors,
    metrics,
  });
  const server = createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      // node:http checks both timeouts on this interval (30 s by default, which would let a client
      // keep its socket for up to 30 s past them): a tenth of the header timeout, at most a second.
      connectionsCheckingInterval: Math.min(1_000, Math.ceil(limits.headersTimeoutMs / 10)),
    },
    intake.admit(listener),
  );
  // Without it, node:http answers `Expect: 100-continue` before intake has decided.
  server.on('checkContinue', intake.admit(listener, true));
  server.maxConnections = limits.maxConnections;
  server.on('drop', () => metrics.observeRefusedConnection());
  intake.watch(server);
  if (upgrade) server.on('upgrade', intake.admitUpgrade(upgrade));
  return server;
}

/** Open connections METRICS_PORT's server keeps: scrapers are a few Prometheus replicas and agents. */
const METRICS_CONNECTIONS = 64;
/**
 * Open connections one client (an IPv4 address or an IPv6 /64) may hold on METRICS_PORT: a scraper
 * keeps one alive, and a few more cover its retries, so that no address can take the others' places.
 */
export const METRICS_CONNECTIONS_PER_CLIENT = 4;
/** A scrape's request arrives at once, and scrapes come every 15 s: a socket idles on the port no longer. */
const METRICS_TIMEOUT_MS = 2_000;

/**
 * METRICS_PORT's server: `listener` is endpoints.ts' metricsListener. Limits of its own, so that a
 * client that holds sockets open there cannot blind the scrapers: at most
 * METRICS_CONNECTIONS_PER_CLIENT connections per client (any beyond is closed on arrival), its
 * request within 2 s and an idle keep-alive connection closed after 2 s (or the public server's
 * shorter timeouts); no intake, no CORS, no GraphQL.
 */
export function createMetricsServer(
  listener: RequestListener,
  { server: limits, scale }: Pick<Config, 'server' | 'scale'>,
): Server {
  const timeoutMs = Math.min(METRICS_TIMEOUT_MS, limits.headersTimeoutMs);
  const server = createServer(
    {
      headersTimeout: timeoutMs,
      requestTimeout: timeoutMs,
      keepAliveTimeout: Math.min(METRICS_TIMEOUT_MS, limits.keepAliveTimeoutMs),
      connectionsCheckingInterval: Math.ceil(timeoutMs / 10),
    },
    listener,
  );
  server.maxConnections = METRICS_CONNECTIONS;
  capPerClient(server, { trustProxy: 0, ipv6Prefix: scale.ipv6Prefix }, timeoutMs);
  return server;
}

/**
 * Closes, on arrival, a client's connections beyond METRICS_CONNECTIONS_PER_CLIENT, and one that
 * sends no request within `timeoutMs` (node:http's header timeout starts only with a first byte).
 */
function capPerClient(server: Server, identity: ClientIdentity, timeoutMs: number): void {
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const client = clientAddress(socket.remoteAddress, null, identity);
    const held = open.get(client) ?? 0;
    if (held >= METRICS_CONNECTIONS_PER_CLIENT) {
      socket.destroy();
      return;
    }
    // With no listener of the server's 'timeout', node:http destroys the socket when it fires.
    socket.setTimeout(timeoutMs);
    open.set(client, held + 1);
    socket.once('close', () => {
      const left = (open.get(client) ?? 1) - 1;
      if (left === 0) open.delete(client);
      else open.set(client, left);
    });
  });
  // A request came: from here on node:http's own timeouts (request, then keep-alive) apply, and a
  // slow scrape's answer is never cut for want of activity.
  server.on('request', (req: IncomingMessage) => req.socket.setTimeout(0));
}
