import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { installed } from '../support/binaries.js';
import { postQuery } from '../support/net.js';
import { hasRedis, REDIS_SERVER } from '../support/redis.js';
import { type Subscription, subscribe } from '../support/sse.js';
import { until } from '../support/until.js';
import { buildImage, type Container, IMAGE, podman, run, runContainer, ULIMITS } from './podman.js';

/**
 * deploy/compose.yaml, checked statically (the Compose Specification's schema through dclint, the
 * wiring between services, the .env it needs) and then started: no registry serves nginx, Redis,
 * the collector or Jaeger here, so the built image runs the devnet service (its command and
 * environment) and each gateway service (its environment, interpolated from deploy/.env.example
 * with the two secrets filled in, and its container settings), Debian's redis-server runs with the
 * redis service's own command (password and ACL), and a small OTLP receiver stands in for the
 * collector. The compose host names are mapped with --add-host to a loopback address of this test's
 * own, on the host's network, so that the services' fixed ports (4101–4103, 6379, 4318) collide
 * with nothing else on the machine.
 */

const FILE = 'deploy/compose.yaml';
const ENV_EXAMPLE = 'deploy/.env.example';
const GATEWAYS = ['gateway-1', 'gateway-2', 'gateway-3'];
const QUERY = '{ validators(pageSize: 2) { nodes { moniker } } }';

/** KEY=value lines of a .env file (comments and blank lines skipped), as Compose reads them. */
const dotenv = (text: string): Record<string, string> =>
  Object.fromEntries(
    text
      .split('\n')
      .filter((line) => /^[A-Z_][A-Z0-9_]*=/.test(line))
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );

/**
 * Compose's interpolation of one value: `${NAME}`, `${NAME:-default}` / `${NAME-default}`,
 * `${NAME:?message}` / `${NAME?message}` (refused, with the message, when unset, or also when empty
 * for the `:` forms) and `$$` for a dollar.
 */
function interpolateValue(value: string, env: Record<string, string>): string {
  return value.replace(
    /\$\$|\$\{([A-Za-z_]\w*)(?:(:?)([-?])([^}]*))?\}/g,
    (whole, name: string | undefined, colon: string, kind: string | undefined, arg: string) => {
      if (whole === '$$') return '$';
      const set = env[name as string];
      const missing = set === undefined || (colon === ':' && set === '');
      if (kind === '-') return missing ? arg : (set as string);
      if (kind === '?' && missing) throw new Error(`required variable ${name} is missing a value: ${arg}`);
      return set ?? '';
    },
  );
}

/** Interpolates every string of a parsed Compose file, as Compose does before it reads it. */
function interpolate(node: unknown, env: Record<string, string>): any {
  if (typeof node === 'string') return interpolateValue(node, env);
  if (Array.isArray(node)) return node.map((item) => interpolate(item, env));
  if (node && typeof node === 'object')
    return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, interpolate(v, env)]));
  return node;
}

const raw = parse(readFileSync(FILE, 'utf8'), { merge: true });
const example = dotenv(readFileSync(ENV_EXAMPLE, 'utf8'));
/** The example .env with the two secrets a user must fill in, as a user would: random hex. */
const filled = {
  ...example,
  CURSOR_SECRET: randomBytes(32).toString('hex'),
  REDIS_PASSWORD: randomBytes(32).toString('hex'),
};
const compose = interpolate(raw, filled);
const services = compose.services as Record<string, any>;
const env = (service: string): Record<string, string> =>
  Object.fromEntries(Object.entries(services[service].environment ?? {}).map(([k, v]) => [k, String(v)]));

describe('deploy/compose.yaml', () => {
  it('follows the Compose Specification, with no finding of dclint', async () => {
    // no-build-and-image: the devnet and the gateways build the one image and name it, so that it is
    // built once and reused, which is what that rule warns against for a pulled image.
    const linted = await run('node_modules/.bin/dclint', [
      FILE,
      '--formatter',
      'json',
      '--disable-rule',
      'no-build-and-image',
      '--max-warnings',
      '0',
    ]);
    const [report] = JSON.parse(linted.stdout);
    expect(report.messages).toEqual([]);
    expect(linted.code).toBe(0);
  });

  it('needs CURSOR_SECRET and REDIS_PASSWORD, which deploy/.env.example leaves empty, and no other', () => {
    // The example holds no secret: every value in it is empty, and the rest is commented out.
    expect(example).toEqual({ CURSOR_SECRET: '', REDIS_PASSWORD: '' });
    expect(() => interpolate(raw, example)).toThrow(
      /required variable CURSOR_SECRET is missing a value: set CURSOR_SECRET in deploy\/\.env/,
    );
    expect(() => interpolate(raw, { ...example, CURSOR_SECRET: 'x'.repeat(64) })).toThrow(
      /required variable REDIS_PASSWORD is missing a value: set REDIS_PASSWORD in deploy\/\.env/,
    );
    expect(interpolate(raw, filled).services['gateway-1'].environment.CURSOR_SECRET).toBe(
      filled.CURSOR_SECRET,
    );
  });

  it('runs three gateways on the image the devnet runs, on the devnet, with Redis by password and the collector', () => {
    expect(Object.keys(services).sort()).toEqual([
      'devnet',
      ...GATEWAYS,
      'jaeger',
      'nginx',
      'otel-collector',
      'redis',
    ]);
    const devnet = env('devnet');
    expect(services.devnet.command).toEqual(['node', '--enable-source-maps', 'dist/devnet/main.js']);
    expect(devnet.DEVNET_HOST).toBe('0.0.0.0');
    for (const name of GATEWAYS) {
      const gateway = services[name];
      expect(gateway.image).toBe(services.devnet.image);
      expect(gateway.build).toEqual({ context: '..', dockerfile: 'Dockerfile' });
      // The image's own command (`npm start`'s), in production, as the image sets it.
      expect(gateway.command).toBeUndefined();
      const vars = env(name);
      expect([vars.SCAN_URL, vars.EXPLORER_URL, vars.STAKE_URL]).toEqual([
        `http://devnet:${devnet.SCAN_PORT}`,
        `http://devnet:${devnet.EXPLORER_PORT}`,
        `http://devnet:${devnet.STAKE_PORT}`,
      ]);
      expect(vars.NODE_ENV).toBeUndefined();
      expect(vars.DEVNET).toBeUndefined();
      expect([vars.GRAPHIQL, vars.GRAPHQL_INTROSPECTION]).toEqual(['false', 'false']);
      expect(vars.REDIS_URL).toBe(`redis://gateway:${filled.REDIS_PASSWORD}@redis:6379`);
      expect(vars.METRICS_PORT).toBe('9464');
      expect(vars.OTEL_EXPORTER_OTLP_ENDPOINT).toBe('http://otel-collector:4318');
      expect(vars.TRUST_PROXY).toBe('1');
      expect(Object.keys(gateway.depends_on).sort()).toEqual(['devnet', 'otel-collector', 'redis']);
      expect(gateway.depends_on.redis).toEqual({ condition: 'service_healthy' });
      expect(gateway.read_only).toBe(true);
      expect(gateway.cap_drop).toEqual(['ALL']);
      // Past SHUTDOWN_DELAY_MS and the drain deadline (UPSTREAM_TIMEOUT_MS, 5 s by default, + 5 s).
      expect(graceSeconds(gateway) * 1000).toBeGreaterThan(Number(vars.SHUTDOWN_DELAY_MS) + 5_000 + 5_000);
    }
    // Redis: the password of deploy/.env for the user the gateways log in as, for its health check too.
    const redis = services.redis;
    expect(redis.command).toEqual(expect.arrayContaining(['gateway', 'on', `>${filled.REDIS_PASSWORD}`]));
    expect(redis.environment).toEqual({ REDISCLI_AUTH: filled.REDIS_PASSWORD });
    expect(redis.healthcheck.test).toEqual(['CMD-SHELL', 'redis-cli --user gateway ping | grep -q PONG']);
    // maxmemory, and the three gateways' pub/sub buffers at their hard cap, and 64 MB for Redis.
    const arg = (flag: string) => redis.command[redis.command.indexOf(flag) + 1];
    expect(arg('--maxmemory-policy')).toBe('noeviction');
    const [, hardMb] = /^pubsub (\d+)mb \d+mb \d+$/.exec(arg('--client-output-buffer-limit')) ?? [];
    const megabytes = (figure: string) => Number(/^(\d+)m(?:b)?$/.exec(figure)?.[1]);
    expect(megabytes(redis.mem_limit)).toBeGreaterThanOrEqual(
      megabytes(arg('--maxmemory')) + GATEWAYS.length * Number(hardMb) + 64,
    );
  });

  it('balances over exactly the three gateways, unbuffered, and sends their traces on to Jaeger', () => {
    const nginx = readFileSync('deploy/compose/nginx.conf', 'utf8');
    expect([...nginx.matchAll(/^\s*server (\S+?)(?: |;)/gm)].map((m) => m[1])).toEqual(
      GATEWAYS.map((name) => `${name}:4000`),
    );
    expect(nginx).toMatch(/proxy_buffering off;/);
    expect(nginx).toMatch(/proxy_read_timeout 1h;/);
    expect(services.nginx.volumes).toEqual(['./compose/nginx.conf:/etc/nginx/conf.d/default.conf:ro']);

    const collector = parse(readFileSync('deploy/compose/otel-collector.yaml', 'utf8'));
    expect(collector.receivers.otlp.protocols.http.endpoint).toBe('0.0.0.0:4318');
    // `otlp_grpc`: the OTLP/gRPC exporter's name in the collector release the file pins.
    expect(services['otel-collector'].image).toMatch(
      /^docker\.io\/otel\/opentelemetry-collector-contrib:0\.\d+\.\d+$/,
    );
    expect(collector.exporters['otlp_grpc/jaeger'].endpoint).toBe('jaeger:4317');
    expect(collector.service.pipelines.traces).toEqual({
      receivers: ['otlp'],
      processors: ['batch'],
      exporters: ['otlp_grpc/jaeger'],
    });
    expect(services['otel-collector'].volumes).toEqual([
      './compose/otel-collector.yaml:/etc/otelcol/config.yaml:ro',
    ]);
  });
});

const graceSeconds = (service: any) => Number(/^(\d+)s$/.exec(service.stop_grace_period)?.[1]);

/** `podman run` flags for what a Compose service's container settings ask. */
function containerFlags(service: any): string[] {
  const flags: string[] = [];
  if (service.read_only) flags.push('--read-only', '--read-only-tmpfs=false');
  for (const path of service.tmpfs ?? []) flags.push('--tmpfs', path);
  for (const capability of service.cap_drop ?? []) flags.push('--cap-drop', capability);
  for (const option of service.security_opt ?? []) flags.push('--security-opt', option.replace(/:true$/, ''));
  for (const [name, { soft, hard }] of Object.entries<any>(service.ulimits ?? {}))
    flags.push('--ulimit', `${name}=${soft}:${hard}`);
  if (service.mem_limit) flags.push('--memory', service.mem_limit);
  for (const [name, value] of Object.entries(service.environment ?? {})) flags.push('-e', `${name}=${value}`);
  return flags;
}

/** What the stand-in collector received: each request's path, content type and body. */
interface Received {
  path: string;
  type: string;
  body: Buffer;
}

function otlpReceiver(host: string, port: number): Promise<{ server: Server; received: Received[] }> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({
        path: req.url ?? '',
        type: req.headers['content-type'] ?? '',
        body: Buffer.concat(chunks),
      });
      res.writeHead(200, { 'content-type': req.headers['content-type'] ?? 'application/x-protobuf' }).end();
    });
  });
  return new Promise((resolve) => server.listen(port, host, () => resolve({ server, received })));
}

/** Debian's redis-server with the redis service's own command, plus a user for this test to look with. */
async function startComposeRedis(host: string, port: number, inspector: string): Promise<ChildProcess> {
  const [program, ...args] = services.redis.command as string[];
  expect(program).toBe('redis-server');
  const dir = mkdtempSync(join(tmpdir(), 'gateway-compose-redis-'));
  const child = spawn(
    REDIS_SERVER,
    [
      ...args,
      '--bind',
      host,
      '--port',
      String(port),
      '--dir',
      dir,
      '--user',
      'inspector',
      'on',
      `>${inspector}`,
      '~*',
      '&*',
      '+@all',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('Ready to accept connections')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`redis-server exited with ${code}: ${out}`)));
  });
  return child;
}

const engine = installed(
  '/usr/bin/podman',
  'podman',
  'apt-get install podman runc mmdebstrap uidmap slirp4netns fuse-overlayfs',
);

describe.skipIf(!engine || !hasRedis)('deploy/compose.yaml, started', () => {
  // A loopback network of this run's own: the compose services at .1, the gateways at .11 to .13.
  const net = `127.${randomInt(1, 255)}.${randomInt(1, 255)}`;
  const shared = `${net}.1`;
  const NAME = `chain-gateway-compose-${process.pid}`;
  const inspector = randomBytes(16).toString('hex');
  const gateways = new Map<string, { container: Container; url: string; metrics: string }>();
  let devnet: Container;
  let redis: ChildProcess;
  let look: Redis;
  let collector: Awaited<ReturnType<typeof otlpReceiver>>;

  beforeAll(async () => {
    await buildImage();
    const redisUrl = new URL(env('gateway-1').REDIS_URL as string);
    redis = await startComposeRedis(shared, Number(redisUrl.port), inspector);
    look = new Redis({
      host: shared,
      port: Number(redisUrl.port),
      username: 'inspector',
      password: inspector,
    });
    collector = await otlpReceiver(
      shared,
      Number(new URL(env('gateway-1').OTEL_EXPORTER_OTLP_ENDPOINT as string).port),
    );
    // The devnet service: its command and environment, listening on this run's loopback address.
    devnet = runContainer([
      ...['--name', `${NAME}-devnet`, '--network', 'host', ...ULIMITS],
      ...containerFlags({ ...services.devnet, environment: { ...env('devnet'), DEVNET_HOST: shared } }),
      IMAGE,
      ...services.devnet.command,
    ]);
    await devnet.printed(/STAKE_URL=/);
    await Promise.all(GATEWAYS.map((name, i) => startGateway(name, `${net}.${11 + i}`)));
  });

  /** One gateway service: its environment and container settings, its host names mapped here. */
  async function startGateway(name: string, host: string) {
    const container = runContainer([
      ...['--name', `${NAME}-${name}`, '--network', 'host', '--ulimit', 'nproc=8192:8192'],
      ...['devnet', 'redis', 'otel-collector'].flatMap((alias) => ['--add-host', `${alias}:${shared}`]),
      ...containerFlags(services[name]),
      // Where it listens on the shared host network: each gateway on an address of its own.
      ...['-e', `HOST=${host}`],
      IMAGE,
    ]);
    const [, url = ''] = await container.printed(/gateway listening on (http:\/\/\S+\/graphql)/);
    gateways.set(name, { container, url, metrics: `http://${host}:${env(name).METRICS_PORT}/metrics` });
  }

  afterAll(async () => {
    await Promise.all(
      [...GATEWAYS, 'devnet'].map((name) => podman(['rm', '--force', '--ignore', `${NAME}-${name}`])),
    );
    look?.disconnect();
    redis?.kill('SIGKILL');
    collector?.server.close();
  });

  const gateway = (name: string) =>
    gateways.get(name) as { container: Container; url: string; metrics: string };

  it('each gateway answers a query through its real upstream settings, sharing one Redis', async () => {
    for (const name of GATEWAYS) {
      const answer = await postQuery(gateway(name).url, QUERY);
      expect(answer.status).toBe(200);
      expect(answer.body.errors).toBeUndefined();
      expect(answer.body.data.validators.nodes).toHaveLength(2);
      // /readyz answers at once with its last check (none before the first probe asks for one).
      const readyz = gateway(name).url.replace('/graphql', '/readyz');
      await until(async () => (await (await fetch(readyz)).json()).redis !== undefined, {
        within: 30_000,
        what: `a /readyz check of ${name} that reports Redis`,
      });
      const ready = await fetch(readyz);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toMatchObject({ status: 'ready', redis: 'up' });
    }
    // Production on real URLs: the devnet is not embedded, and introspection is off.
    expect(gateway('gateway-1').container.output()).not.toMatch(/embedded devnet/);
    const introspection = await postQuery(gateway('gateway-1').url, '{ __schema { queryType { name } } }');
    expect(introspection.body.data).toBeUndefined();
    expect(introspection.body.errors[0].message).toMatch(/^GraphQL introspection has been disabled/);
    // An answer one gateway stored in Redis is a hit for the next at the same chain height:
    // gateway-2 asks a query gateway-3 asked, and finds it there (the password and the ACL let
    // both write and read). A block between the two asks renews the answer: asked again.
    const hits = () =>
      series(gateway('gateway-2').metrics, 'shared_cache_requests_total{cache="responses",result="hit"}');
    let asked = 0;
    await until(
      async () => {
        const document = `{ validators(pageSize: ${3 + asked++}) { nodes { moniker } } }`;
        const stored = new Set(await look.keys('*:responses:*'));
        const third = await postQuery(gateway('gateway-3').url, document);
        expect(third.status).toBe(200);
        await until(async () => (await look.keys('*:responses:*')).some((key) => !stored.has(key)), {
          within: 30_000,
          what: "gateway-3's answer stored in Redis",
        });
        const before = await hits();
        const second = await postQuery(gateway('gateway-2').url, document);
        expect(second.status).toBe(200);
        if (second.body.extensions?.chainHeight !== third.body.extensions?.chainHeight) return false;
        expect(await hits()).toBe(before + 1);
        return true;
      },
      { within: 60_000, what: 'two answers of one chain height, the second from Redis' },
    );
    expect(await look.call('ACL', 'LOG')).toEqual([]);
  });

  it('serves /metrics on METRICS_PORT only, and streams with X-Accel-Buffering: no', async () => {
    const { url, metrics } = gateway('gateway-3');
    expect((await fetch(url.replace('/graphql', '/metrics'))).status).toBe(404);
    const scraped = await fetch(metrics);
    expect(scraped.status).toBe(200);
    expect(await scraped.text()).toMatch(/^# HELP graphql_requests_total /m);
    const stream: Subscription = await subscribe(url, 'subscription { blockAdded { height } }');
    try {
      expect(stream.status).toBe(200);
      expect(stream.headers.get('x-accel-buffering')).toBe('no');
      // A block reaches it through the shared poller, its lease and its events in Redis.
      expect((await stream.next()).data.blockAdded.height).toEqual(expect.any(Number));
    } finally {
      stream.close();
    }
    expect(await look.call('ACL', 'LOG')).toEqual([]);
  });

  it("sends the gateways' traces to the collector's address", async () => {
    // The SDK's batch processor sends every 5 s.
    await until(() => collector.received.some((r) => r.path === '/v1/traces'), {
      within: 30_000,
      what: 'a batch of spans at the collector',
    });
    const traces = collector.received.filter((r) => r.path === '/v1/traces');
    expect(traces[0]?.type).toBe('application/x-protobuf');
    expect(traces.some((r) => r.body.includes('chain-gateway'))).toBe(true);
  });

  it('stops each gateway within its stop_grace_period, exiting 0', async () => {
    const stopped = await Promise.all(
      GATEWAYS.map((name) =>
        podman(['stop', '--time', String(graceSeconds(services[name])), `${NAME}-${name}`]),
      ),
    );
    expect(stopped.map((s) => s.code)).toEqual([0, 0, 0]);
    expect(await Promise.all(GATEWAYS.map((name) => gateway(name).container.exited))).toEqual([0, 0, 0]);
  });
});

/** One series of a /metrics page (0 while it has none). */
async function series(url: string, name: string): Promise<number> {
  const text = await (await fetch(url)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.slice(name.length + 1)) : 0;
}
