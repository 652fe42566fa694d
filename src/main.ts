/** `npm start`: the gateway on HOST:PORT, on the embedded devnet when no upstream is configured. */
import cluster from 'node:cluster';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type Config,
  ConfigError,
  fitToFileLimit,
  listenError,
  loadConfig,
  loadPersistedOperations,
  openFileLimit,
  secretWarnings,
} from './config.js';
import { type MetricsSource, metricsListener } from './graphql/plugins/endpoints.js';
import { createGatewayServer, createMetricsServer } from './http/node-server.js';
import { announce, createLogger } from './ops/logger.js';
import { startTracing, stopTracing } from './ops/tracing.js';
import { type DevnetHandoff, joinPrimary, runPrimary, type WorkerLink } from './scale/cluster.js';

/** A running devnet, as this process started it: what it serves, and how to stop it. */
interface StartedDevnet {
  handoff: DevnetHandoff;
  close(): Promise<void>;
}

/**
 * The embedded devnet, loaded only when no upstream is configured (a deployment never loads its
 * module), with the variables GraphiQL's tabs run under.
 */
async function startEmbeddedDevnet(config: Config['devnet']): Promise<StartedDevnet> {
  const [{ startDevnet }, { exampleVariables }] = await Promise.all([
    import('./devnet/index.js'),
    import('./devnet/examples.js'),
  ]);
  const devnet = await startDevnet(config);
  return {
    handoff: { urls: devnet.urls, token: devnet.token, exampleVariables: exampleVariables(devnet.data) },
    close: () => devnet.close(),
  };
}

async function main(config: Config): Promise<void> {
  // WORKERS > 1: this process is the primary, which serves nothing itself, or one of its workers,
  // which runs on the primary's devnet (see scale/cluster.ts). WORKERS=1 is one process, even when
  // another manager forks it as a cluster worker (PM2's cluster mode).
  const primary = config.scale.workers > 1 && cluster.isPrimary;
  const worker = config.scale.workers > 1 && cluster.isWorker ? await joinPrimary() : null;
  // Every request ends within the upstream budget; a drain that takes longer is cut off.
  const drainMs = config.upstreamTimeoutMs + 5_000;
  // Before anything serves: OpenTelemetry's SDK, only when an OTLP endpoint is configured.
  if (!primary) await startTracing(config.tracing);
  const devnet = !config.upstreams && !worker ? await startEmbeddedDevnet(config.devnet) : null;
  const onDevnet = worker ? worker.devnet : (devnet?.handoff ?? null);
  if (primary) {
    runPrimary({
      workers: config.scale.workers,
      devnet: onDevnet,
      // The workers serve on for SHUTDOWN_DELAY_MS before their drain's deadline starts.
      drainMs: config.server.shutdownDelayMs + drainMs,
      listening: (port) => printBanner(config, { port, metrics: config.metricsPort }, onDevnet),
      close: async () => {
        await devnet?.close();
      },
    });
    return;
  }
  await serve(config, { worker, devnet, onDevnet, drainMs });
}

interface ServeOptions {
  worker: WorkerLink | null;
  /** The devnet this process started (closed when it stops), if any. */
  devnet: StartedDevnet | null;
  /** The devnet the gateway runs on (this process's, or the primary's); null on real upstreams. */
  onDevnet: DevnetHandoff | null;
  drainMs: number;
}

/** One serving process: the gateway on its node:http server, until a signal drains it. */
async function serve(configured: Config, { worker, devnet, onDevnet, drainMs }: ServeOptions): Promise<void> {
  const logger = createLogger(configured.logLevel, worker?.id ?? null);
  const files = openFileLimit();
  const { config, capped } = fitToFileLimit(configured, files);
  if (capped.length > 0) {
    logger.warn(
      { openFileLimit: files, capped },
      `the open-file limit (${files}) caps ${capped.join(' and ')}: raise it (ulimit -n) to serve more streams`,
    );
  }
  // Loaded here, not at the top: the primary of WORKERS > 1 never builds a gateway, and starts
  // (and forks) sooner without loading one.
  const { createGateway } = await import('./gateway.js');
  const gateway = createGateway({
    ...config,
    logger,
    persistedOperations: config.persistedOperationsFile
      ? loadPersistedOperations(config.persistedOperationsFile)
      : null,
    upstreamUrls: config.upstreams ?? (onDevnet as DevnetHandoff).urls,
    ...(onDevnet ? { exampleToken: onDevnet.token, exampleVariables: onDevnet.exampleVariables } : {}),
    // A worker's /metrics answers for every worker.
    ...(worker ? { scrapeMetrics: worker.metrics } : {}),
  });
  worker?.share(gateway.metrics.registry);
  for (const warning of secretWarnings(config)) logger.warn(warning);
  const server = createGatewayServer(gateway, config);
  const port = await listen(server, config.port, config.host, 'PORT');
  // After the public port, which is the one a cluster's primary learns first from each worker.
  const metrics = await serveMetrics(config, { metrics: gateway.metrics, scrape: worker?.metrics });
  // A worker's port is the primary's, which prints the banner once all workers listen.
  if (!worker) printBanner(config, { port, metrics: metrics?.port ?? null }, onDevnet);

  const stop = drainOnce(server, { drainMs, delayMs: config.server.shutdownDelayMs }, worker, {
    // /readyz answers 503 at once, so that load balancers stop sending requests, which are still
    // served meanwhile.
    notReady: () => gateway.startDraining(),
    // Subscription streams complete (with a retry hint: their clients reconnect elsewhere) when
    // the drain begins: they would otherwise hold it to its deadline. Scrapes stop with the
    // public port (a scrape under way finishes).
    begin: () => {
      void gateway.drain();
      metrics?.server.close();
      metrics?.server.closeIdleConnections();
    },
    close: async () => {
      logger.flush();
      await gateway.close();
      await devnet?.close();
      await stopTracing();
    },
  });
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
  worker?.onDrain(stop);
}

/**
 * METRICS_PORT's server, listening on HOST: `/metrics` alone, the same text the public port would
 * serve (a cluster worker's: every worker's); null when METRICS_PORT is unset.
 */
async function serveMetrics(
  config: Config,
  source: MetricsSource,
): Promise<{ server: Server; port: number } | null> {
  if (config.metricsPort === null) return null;
  const server = createMetricsServer(metricsListener(source), config);
  return { server, port: await listen(server, config.metricsPort, config.host, 'METRICS_PORT') };
}

/**
 * Listens on HOST:port (0: any free port), and resolves with the port it listens on; a port
 * already taken rejects naming `variable`, the setting that chose it.
 */
function listen(server: Server, port: number, host: string, variable: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', (error) => reject(listenError(variable, host, port, error)));
    server.listen(port, host, () => resolve((server.address() as AddressInfo).port));
  });
}

/**
 * The drain, at most once whatever asks for it: not ready at once, still serving for `delayMs`
 * (SHUTDOWN_DELAY_MS), then stop accepting, complete every subscription stream, finish what is in
 * flight, close the gateway, exit 0; whatever still runs `drainMs` after the drain began is cut
 * off and the process exits 1.
 */
function drainOnce(
  server: Server,
  { drainMs, delayMs }: { drainMs: number; delayMs: number },
  worker: WorkerLink | null,
  steps: { notReady(): void; begin(): void; close(): Promise<void> },
) {
  let stopping = false;
  return (signal: string) => {
    if (stopping) return;
    stopping = true;
    steps.notReady();
    if (delayMs > 0) {
      console.log(
        `${worker ? `worker ${worker.id}: ` : ''}${signal}: not ready; serving for ${delayMs} ms more`,
      );
    }
    setTimeout(() => drain(signal), delayMs);
  };

  function drain(signal: string) {
    steps.begin();
    // close() stops accepting and calls back once in-flight requests have finished.
    server.close(async () => {
      await steps.close();
      process.exit(0);
    });
    server.closeIdleConnections();
    // A connection whose request or stream ends during the drain closes as soon as it is idle,
    // rather than after its keep-alive timeout.
    setInterval(() => server.closeIdleConnections(), 100).unref();
    // Printed once the listening socket is closed: from this line on, new connections are refused
    // (in a worker: handed to the others; the primary closes the port once every worker has).
    console.log(
      `${worker ? `worker ${worker.id}: ` : ''}${signal}: finishing in-flight requests, refusing new ones`,
    );
    setTimeout(() => {
      console.error('requests still running after the drain deadline: closing them');
      server.closeAllConnections();
      process.exit(1);
    }, drainMs).unref();
  }
}

/**
 * The startup banner (ops/logger.ts `announce`): JSON lines among the log's, plain text in a
 * terminal. Each message ends in words, never in a URL, so that a reader taking the URL up to the
 * next space gets it whole in both. `metrics`: METRICS_PORT's port (null: /metrics on the public
 * port; 0: a free port the primary of a cluster does not learn).
 */
function printBanner(
  config: Config,
  { port, metrics }: { port: number; metrics: number | null },
  devnet: DevnetHandoff | null,
): void {
  const origin = (at: number) =>
    `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${at}`;
  const endpoint = `${origin(port)}/graphql`;
  const { workers } = config.scale;
  announce(
    `gateway listening on ${endpoint} (${workers > 1 ? `${workers} workers` : '1 process'})${config.graphiql ? ' (open it in a browser for GraphiQL)' : ''}`,
    { endpoint, workers, ...config.build },
  );
  if (metrics !== null) {
    announce(
      metrics === 0
        ? 'metrics on a free port (METRICS_PORT=0), not on the public port'
        : `metrics on ${origin(metrics)}/metrics, not on the public port`,
      metrics === 0 ? {} : { metrics: `${origin(metrics)}/metrics` },
    );
  }
  if (devnet) {
    const { scan, explorer, stake } = devnet.urls;
    announce(
      `no upstream configured: running on the embedded devnet (SCAN_URL=${scan} EXPLORER_URL=${explorer} STAKE_URL=${stake})`,
      { devnet: devnet.urls },
    );
    announce(
      `devnet token for contractsBySymbol, failedTransactions and updateBuybackRound: Authorization: Bearer ${devnet.token}`,
    );
    announce(
      `try: curl -s ${endpoint} -H 'content-type: application/json' -d '{"query":"{ validators(pageSize: 3) { nodes { moniker tokens } } }"}'`,
    );
  }
}

try {
  await main(loadConfig());
} catch (error) {
  console.error(error instanceof ConfigError ? `configuration error: ${error.message}` : error);
  process.exit(1);
}
