import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installed } from '../support/binaries.js';
import { freePort, postQuery } from '../support/net.js';
import { type Subscription, subscribe } from '../support/sse.js';
import { until } from '../support/until.js';
import { buildImage, type Container, IMAGE, podman, runContainer, ULIMITS } from './podman.js';

/**
 * The container image (Dockerfile), built by `.ci/image.sh` on CI's stand-in base and run with
 * podman as Kubernetes runs it (deploy/k8s: read-only root but /tmp, no capability, no privilege
 * escalation): `npm start`'s command on its embedded devnet (asked for by name, DEVNET=true: the
 * image is production, which refuses to run the devnet otherwise), as a user other than root,
 * answering queries and probes, /metrics on METRICS_PORT only, holding no test and no .git, and
 * draining on SIGTERM to exit 0. It prints the image's size and its start time to the first answer.
 */

const engine = installed(
  '/usr/bin/podman',
  'podman',
  'apt-get install podman runc mmdebstrap uidmap slirp4netns fuse-overlayfs',
);

const QUERY = '{ validators(pageSize: 2) { nodes { moniker } } }';
const NAME = `chain-gateway-test-${process.pid}`;

/** What one look inside the running container finds, printed as JSON by the image's own Node. */
const INSPECT = `
const fs = require('node:fs');
const path = require('node:path');
const walk = (dir) => fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
  const at = path.join(dir, entry.name);
  return entry.isDirectory() ? [at + '/', ...walk(at)] : [at];
});
const app = walk('/app');
const own = app.filter((file) => !file.startsWith('/app/node_modules/'));
const maps = own.filter((file) => file.endsWith('.map'));
console.log(JSON.stringify({
  top: fs.readdirSync('/app').sort(),
  ownTests: own.filter((file) => /(^|\\/)(test|tests|__tests__)\\/|\\.(test|spec)\\.[cm]?[jt]sx?(\\.map)?$/.test(file)),
  git: app.filter((file) => /(^|\\/)\\.git\\/?$/.test(file)).concat(fs.existsSync('/.git') ? ['/.git'] : []),
  maps: maps.length,
  mapsOutsideSrc: maps.flatMap((file) => JSON.parse(fs.readFileSync(file, 'utf8')).sources
    .map((source) => path.resolve(path.dirname(file), source))
    .filter((source) => !source.startsWith('/app/src/'))),
  devDependencies: ['typescript', 'vitest', 'tsx', '@biomejs/biome', 'playwright-core', 'kubernetes-models']
    .filter((name) => fs.existsSync('/app/node_modules/' + name)),
  pid1: fs.readFileSync('/proc/1/status', 'utf8').match(/^Uid:\\s+(.*)$/m)[1].split(/\\s+/),
  pid1Command: fs.readFileSync('/proc/1/cmdline', 'utf8').split('\\0').filter(Boolean),
  rootWritable: (() => { try { fs.writeFileSync('/app/probe', ''); return true; } catch { return false; } })(),
}));
`;

describe.skipIf(!engine)('the container image', () => {
  let container: Container;
  let url = '';
  let metricsUrl = '';
  let scanUrl = '';

  beforeAll(async () => {
    const built = await buildImage();
    const size = (await podman(['image', 'inspect', '--format', '{{ .Size }}', IMAGE])).stdout.trim();
    const port = await freePort();
    const metricsPort = await freePort();
    const started = performance.now();
    container = runContainer([
      '--name',
      NAME,
      '--network',
      'host',
      ...ULIMITS,
      '--read-only',
      '--read-only-tmpfs=false',
      '--tmpfs',
      '/tmp',
      '--cap-drop',
      'ALL',
      '--security-opt',
      'no-new-privileges',
      // The devnet on free ports (the host's network is shared), its chain moved by the test; the
      // metrics port on a free one too (its production default, 9464, may be taken here).
      ...['-e', 'DEVNET=true', '-e', `PORT=${port}`, '-e', `METRICS_PORT=${metricsPort}`],
      ...['-e', 'SCAN_PORT=0', '-e', 'EXPLORER_PORT=0', '-e', 'STAKE_PORT=0'],
      ...['-e', 'DEVNET_BLOCK_MS=0', '-e', 'LIVE_POLL_MS=100'],
      IMAGE,
    ]);
    [, scanUrl = ''] = await container.printed(/SCAN_URL=(http:\/\/\S+)/);
    const listening = performance.now() - started;
    url = `http://127.0.0.1:${port}/graphql`;
    metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    // The first answer, asked as soon as the banner is out.
    const first = await postQuery(url, QUERY);
    const answered = performance.now() - started;
    expect(first.status).toBe(200);
    const build = /image built in \d+ s/.exec(built)?.[0] ?? 'not built';
    console.log(
      `${IMAGE}: ${(Number(size) / 1e6).toFixed(0)} MB (${build}); from \`podman run\` to the banner ${listening.toFixed(0)} ms, to the first answer ${answered.toFixed(0)} ms`,
    );
  });

  afterAll(async () => {
    await podman(['rm', '--force', '--ignore', NAME]);
  });

  it("runs npm start's command on the embedded devnet, as uid 10001, and answers a query", async () => {
    const { scripts } = JSON.parse(readFileSync('package.json', 'utf8'));
    const config = JSON.parse(
      (await podman(['image', 'inspect', '--format', '{{ json .Config }}', IMAGE])).stdout,
    );
    expect(config.Cmd).toEqual(scripts.start.split(' '));
    expect(config.User).toBe('10001:10001');
    expect(config.Env).toEqual(expect.arrayContaining(['NODE_ENV=production', 'HOST=0.0.0.0', 'PORT=4000']));
    // OCI's labels say which release and revision it is (.ci/image.sh passes them), as build_info does.
    const revision = execFileSync('git', ['rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
    const { version } = JSON.parse(readFileSync('package.json', 'utf8'));
    expect(config.Labels).toMatchObject({
      'org.opencontainers.image.version': version,
      'org.opencontainers.image.revision': revision,
    });
    expect(config.Env).toContain(`BUILD_REVISION=${revision}`);
    expect(container.output()).toMatch(/embedded devnet/);

    const answer = await postQuery(url, QUERY);
    expect(answer.status).toBe(200);
    expect(answer.body.errors).toBeUndefined();
    expect(answer.body.data.validators.nodes).toHaveLength(2);
    expect(answer.body.data.validators.nodes[0].moniker).toEqual(expect.any(String));
    // The two answers (the first one's and this one's, from the response cache) read the whole
    // validator list once: its two pages of 100, from the staking service. (The search service's
    // reads are the block poller's, which a latest answer keeps running: CHAIN_HEAD_HOLD_MS.)
    const { 'scan /api/v1/dex/search 200': _polls, ...read } = await upstreamRequests(metricsUrl);
    expect(read).toEqual({ 'stake /stake/validators 200': 2 });

    const inside = await inspect();
    expect(inside.pid1).toEqual(['10001', '10001', '10001', '10001']);
    expect(inside.pid1Command).toEqual(scripts.start.split(' '));
    expect(inside.rootWritable).toBe(false);
  });

  it('answers /healthz and /readyz with 200, and its HEALTHCHECK passes', async () => {
    const health = await fetch(url.replace('/graphql', '/healthz'));
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
    const ready = await fetch(url.replace('/graphql', '/readyz'));
    expect(ready.status).toBe(200);
    const body = await ready.json();
    expect(body.status).toBe('ready');
    expect(Object.keys(body.upstreams).sort()).toEqual(['explorer', 'scan', 'stake']);
    const check = await podman(['healthcheck', 'run', NAME]);
    expect(check.code).toBe(0);
  });

  it('serves /metrics on METRICS_PORT alone, and answers 404 for it on the serving port', async () => {
    const scraped = await fetch(metricsUrl);
    expect(scraped.status).toBe(200);
    expect(await scraped.text()).toMatch(/^# HELP graphql_requests_total /m);
    expect((await fetch(url.replace('/graphql', '/metrics'))).status).toBe(404);
    expect((await fetch(metricsUrl.replace('/metrics', '/graphql'), { method: 'POST' })).status).toBe(404);
  });

  it('holds the compiled gateway and its production dependencies, and no test, test source map or .git', async () => {
    const inside = await inspect();
    expect(inside.top).toEqual(['dist', 'node_modules', 'operations', 'package.json']);
    expect(inside.ownTests).toEqual([]);
    expect(inside.git).toEqual([]);
    expect(inside.maps).toBeGreaterThan(0);
    expect(inside.mapsOutsideSrc).toEqual([]);
    expect(inside.devDependencies).toEqual([]);
  });

  it('ends an open stream on SIGTERM (podman stop) for its client to come back, drains and exits 0', async () => {
    const stream: Subscription = await subscribe(url, 'subscription { blockAdded { height } }');
    expect(stream.status).toBe(200);
    // The first poll finds the head; the block after it is the stream's first event.
    await until(async () => (await metric(metricsUrl, 'live_polls_total{source="blocks",result="ok"}')) > 0, {
      within: 30_000,
      what: "the blocks' first good poll",
    });
    const advanced = await fetch(`${scanUrl}/_devnet/advance?blocks=1`, { method: 'POST' });
    const { heights } = (await advanced.json()) as { heights: number[] };
    expect((await stream.next()).data.blockAdded.height).toBe(heights[0]);

    const stop = podman(['stop', '--time', '60', NAME]);
    // A retry: and no `complete`, which would end graphql-sse's client instead of bringing it back.
    expect(await stream.ended).toBe('closed');
    expect(await container.exited).toBe(0);
    expect((await stop).code).toBe(0);
    expect(container.output()).toMatch(/SIGTERM: finishing in-flight requests, refusing new ones/);
    expect(container.output()).not.toMatch(/drain deadline/);
  });
});

describe.skipIf(!engine)('the image with no upstream and no DEVNET', () => {
  it('refuses to start (production), naming the devnet and DEVNET=true', async () => {
    await buildImage();
    const port = await freePort();
    const refused = runContainer([
      ...[
        '--name',
        `${NAME}-no-upstream`,
        '--network',
        'host',
        ...ULIMITS,
        '--read-only',
        '--cap-drop',
        'ALL',
      ],
      ...['-e', `PORT=${port}`, '-e', 'SCAN_PORT=0', '-e', 'EXPLORER_PORT=0', '-e', 'STAKE_PORT=0'],
      IMAGE,
    ]);
    try {
      // It exits; one that listens instead is a failure at once, not at the test's timeout.
      const listening = refused.printed(/gateway listening on/).then(
        () => true,
        () => false,
      );
      const ended = await Promise.race([
        refused.exited,
        listening.then<number | 'listening'>((up) => (up ? 'listening' : refused.exited)),
      ]);
      expect(ended).toBe(1);
      expect(refused.output()).toMatch(/DEVNET=true/);
      expect(refused.output()).toMatch(/devnet/i);
      expect(refused.output()).not.toMatch(/gateway listening/);
    } finally {
      await podman(['rm', '--force', '--ignore', `${NAME}-no-upstream`]);
    }
  });
});

describe.skipIf(!engine)('the devnet alone in the image, as deploy/compose.yaml runs it', () => {
  it('listens on DEVNET_HOST, so that gateways in other containers reach it, and stops on SIGTERM', async () => {
    await buildImage();
    const name = `${NAME}-devnet`;
    const devnet = runContainer([
      ...['--name', name, '--network', 'host', ...ULIMITS, '--read-only', '--cap-drop', 'ALL'],
      ...['-e', 'DEVNET_HOST=0.0.0.0', '-e', 'SCAN_PORT=0', '-e', 'EXPLORER_PORT=0', '-e', 'STAKE_PORT=0'],
      ...[IMAGE, 'node', '--enable-source-maps', 'dist/devnet/main.js'],
    ]);
    try {
      const [, scan = ''] = await devnet.printed(/SCAN_URL=(http:\/\/\S+)/);
      expect(new URL(scan).hostname).toBe('0.0.0.0');
      const { port } = new URL(scan);
      // Any answer is an answer: the search service is up.
      expect((await fetch(`http://127.0.0.1:${port}/api/v1/search?q=1`)).status).toBe(200);
      expect((await podman(['stop', '--time', '30', name])).code).toBe(0);
      expect(await devnet.exited).toBe(0);
    } finally {
      await podman(['rm', '--force', '--ignore', name]);
    }
  });
});

/** The gateway's upstream_requests_total, as `upstream endpoint status` → count. */
async function upstreamRequests(metricsUrl: string): Promise<Record<string, number>> {
  const text = await (await fetch(metricsUrl)).text();
  const counts: Record<string, number> = {};
  for (const [, upstream, endpoint, status, value] of text.matchAll(
    /^upstream_requests_total\{upstream="([^"]+)",endpoint="([^"]+)",status="([^"]+)"\} (\d+)$/gm,
  ))
    counts[`${upstream} ${endpoint} ${status}`] = Number(value);
  return counts;
}

/** One series of the gateway's /metrics (0 while it has none). */
async function metric(metricsUrl: string, series: string): Promise<number> {
  const text = await (await fetch(metricsUrl)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

async function inspect(): Promise<any> {
  const looked = await podman(['exec', NAME, 'node', '-e', INSPECT]);
  if (looked.code !== 0) throw new Error(`podman exec failed: ${looked.stderr}`);
  return JSON.parse(looked.stdout);
}
