/** `npm start`: the gateway on HOST:PORT, on the embedded devnet when no upstream is configured. */
import cluster from 'node:cluster';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import { type Logger, pino } from 'pino';
import { type Config, ConfigError, loadConfig, loadPersistedOperations } from './config.js';
import { exampleVariables } from './devnet/examples.js';
import { type Devnet, startDevnet } from './devnet/index.js';
import { createGatewayServer } from './http/node-server.js';
import { startTracing, stopTracing } from './ops/tracing.js';
import { type DevnetHandoff, joinPrimary, runPrimary } from './scale/cluster.js';

async function main(config: Config): Promise<void> {
  // WORKERS > 1: this process is the primary, which serves nothing itself, or one of its workers,
  // which runs on the primary's devnet (see cluster.ts). WORKERS=1 is one process, even when another
  // manager forks it as a cluster worker (PM2's cluster mode).
  const primary = config.scale.workers > 1 && cluster.isPrimary;
  const worker = config.scale.workers > 1 && cluster.isWorker ? await joinPrimary() : null;
  // Before anything serves: OpenTelemetry's SDK, only when an OTLP endpoint is configured.
  if (!primary) await startTracing(config.tracing);
  let devnet: Devnet | null = null;
  if (!config.upstreams && !worker) {
    devnet = await startDevnet({
      seed: config.devnet.seed,
      token: config.devnet.token,
      ports: config.devnet.ports,
      dialect: config.devnet.dialect,
      stakeEnvelope: config.devnet.stakeEnvelope,
      explorerSuccessCode: config.devnet.explorerSuccessCode,
      bech32Prefix: config.devnet.bech32Prefix,
    });
  }
  const onDevnet: DevnetHandoff | null = worker
    ? worker.devnet
    : devnet && { urls: devnet.urls, token: devnet.token, exampleVariables: exampleVariables(devnet.data) };
  if (primary) {
    runPrimary({
      workers: config.scale.workers,
      devnet: onDevnet,
      drainMs: config.upstreamTimeoutMs + 5_000,
      listening: (port) => printBanner(config, port, onDevnet),
      close: async () => {
        await devnet?.close();
      },
    });
    return;
  }
  // One JSON line per GraphQL request (pretty in a terminal). The startup banner (printBanner) is
  // plain text for the person who started the process, not a log line.
  const options = {
    level: config.logLevel,
    // A worker's lines name it (pino's default base is pid and hostname).
    ...(worker ? { base: { pid: process.pid, hostname: hostname(), worker: worker.id } } : {}),
    redact: { paths: ['authorization', '*.authorization', 'token', '*.token'], censor: '[redacted]' },
  };
  let logger: Logger;
  if (process.stdout.isTTY) {
    logger = pino({
      ...options,
      transport: {
        target: 'pino-pretty',
        options: { translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' },
      },
    });
  } else {
    // Asynchronous, buffered writes: a request never waits on stdout, and lines leave in 4 KB
    // chunks (one write per ~15 lines instead of one each), flushed every second and on exit.
    logger = pino(options, pino.destination({ sync: false, minLength: 4096 }));
    setInterval(() => logger.flush(), 1000).unref();
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
  const server = createGatewayServer(gateway.listener, config.server, () =>
    gateway.metrics.observeRefusedConnection(),
  );
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, resolve);
  });

  // A worker's port is the primary's, which prints the banner once all workers listen.
  if (!worker) printBanner(config, (server.address() as AddressInfo).port, onDevnet);

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    // close() stops accepting and resolves once in-flight requests have finished.
    server.close(async () => {
      logger.flush();
      await gateway.close();
      await devnet?.close();
      await stopTracing();
      process.exit(0);
    });
    server.closeIdleConnections();
    // Printed once the listening socket is closed: from this line on, new connections are refused
    // (in a worker: handed to the others; the primary closes the port once every worker has).
    console.log(
      `${worker ? `worker ${worker.id}: ` : ''}${signal}: finishing in-flight requests, refusing new ones`,
    );
    // Every request ends within the upstream budget; one that does not is cut off.
    setTimeout(() => {
      console.error('requests still running after the drain deadline: closing them');
      server.closeAllConnections();
      process.exit(1);
    }, config.upstreamTimeoutMs + 5_000).unref();
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
  worker?.onDrain(stop);
}

/** The startup banner: plain text for the person who started the process, not a log line. */
function printBanner(config: Config, port: number, devnet: DevnetHandoff | null): void {
  const endpoint = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}/graphql`;
  const workers = config.scale.workers > 1 ? ` (${config.scale.workers} workers)` : '';
  console.log(
    `gateway listening on ${endpoint}${workers}${config.graphiql ? ' (open it in a browser for GraphiQL)' : ''}`,
  );
  if (devnet) {
    const { scan, explorer, stake } = devnet.urls;
    console.log(
      `no upstream configured: running on the embedded devnet (SCAN_URL=${scan} EXPLORER_URL=${explorer} STAKE_URL=${stake})`,
    );
    console.log(
      `devnet token for contractsBySymbol, failedTransactions and updateBuybackRound: Authorization: Bearer ${devnet.token}`,
    );
    console.log(
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
