/** `npm start`: the gateway on HOST:PORT, on the embedded devnet when no upstream is configured. */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Logger, pino } from 'pino';
import { type Config, ConfigError, loadConfig, loadPersistedOperations } from './config.js';
import { exampleVariables } from './devnet/examples.js';
import { type Devnet, startDevnet } from './devnet/index.js';
import { createGateway } from './gateway.js';
import { startTracing, stopTracing } from './tracing.js';

async function main(config: Config): Promise<void> {
  // Before anything serves: OpenTelemetry's SDK, only when an OTLP endpoint is configured.
  await startTracing(config.tracing);
  let devnet: Devnet | null = null;
  if (!config.upstreams) {
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
  // One JSON line per GraphQL request (pretty in a terminal). The startup banner below is plain
  // text for the person who started the process, not a log line.
  const options = {
    level: config.logLevel,
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
  const gateway = createGateway({
    ...config,
    logger,
    persistedOperations: config.persistedOperationsFile
      ? loadPersistedOperations(config.persistedOperationsFile)
      : null,
    upstreamUrls: config.upstreams ?? (devnet as Devnet).urls,
    ...(devnet ? { exampleToken: devnet.token, exampleVariables: exampleVariables(devnet.data) } : {}),
  });
  const server = createServer(gateway.listener);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, resolve);
  });

  const { port } = server.address() as AddressInfo;
  const endpoint = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}/graphql`;
  console.log(
    `gateway listening on ${endpoint}${config.graphiql ? ' (open it in a browser for GraphiQL)' : ''}`,
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
    // Printed once the listening socket is closed: from this line on, new connections are refused.
    console.log(`${signal}: finishing in-flight requests, refusing new ones`);
    // Every request ends within the upstream budget; one that does not is cut off.
    setTimeout(() => {
      console.error('requests still running after the drain deadline: closing them');
      server.closeAllConnections();
      process.exit(1);
    }, config.upstreamTimeoutMs + 5_000).unref();
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}

try {
  await main(loadConfig());
} catch (error) {
  console.error(error instanceof ConfigError ? `configuration error: ${error.message}` : error);
  process.exit(1);
}
