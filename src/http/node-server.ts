import { createServer, type RequestListener, type Server } from 'node:http';
import type { Config } from '../config.js';
import type { GatewayMetrics } from '../ops/metrics.js';
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

/** What the server reads of the configuration: its limits, the body cap, who a client is, CORS. */
export type GatewayServerSettings = Pick<Config, 'server' | 'limits' | 'scale' | 'cors'>;

export type GatewayServerMetrics = Pick<GatewayMetrics, 'observeRefusedConnection'> & IntakeMetrics;

export function createGatewayServer(
  listener: RequestListener,
  settings: GatewayServerSettings,
  metrics: GatewayServerMetrics,
): Server {
  const { server: limits } = settings;
  const intake = new Intake({
    limits,
    maxRequestBytes: settings.limits.requestBytes,
    identity: settings.scale,
    cors: settings.cors,
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
  return server;
}

/** Open connections METRICS_PORT's server keeps: scrapers are a few Prometheus replicas and agents. */
const METRICS_CONNECTIONS = 64;

/**
 * METRICS_PORT's server: `listener` is endpoints.ts' metricsListener. The same header, request and
 * keep-alive timeouts as the public server, so that a client that holds sockets open there gets
 * nothing more for it; no intake, no CORS, no GraphQL.
 */
export function createMetricsServer(
  listener: RequestListener,
  { server: limits }: Pick<Config, 'server'>,
): Server {
  const server = createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      connectionsCheckingInterval: Math.min(1_000, Math.ceil(limits.headersTimeoutMs / 10)),
    },
    listener,
  );
  server.maxConnections = METRICS_CONNECTIONS;
  return server;
}
