/**
 * `npm run bench`: the gateway against a hand-written BFF (test/bench/baseline.ts) over the same
 * devnet. The devnet, the gateway and the baseline run as separate processes; the gateway and
 * the baseline are pinned to core 0 and the devnet and this load generator to core 1 (taskset),
 * so the target under test has one core to itself. Each scenario warms both targets up, then
 * runs several rounds of autocannon at fixed concurrency for a fixed time, alternating targets.
 *
 * Options: --duration S (per round, default 5), --rounds N (2), --connections N (16),
 * --warmup S (2), --only S1,S3 (scenarios), --out FILE (default test/bench/results/latest.json).
 *
 * `--flood` runs, instead, one small public query repeated for 20 s, then made new on every request
 * (a random alias or comment) for --duration (default 120 s), against `dist` or the build named by
 * --target, and prints the ratio of their req/s
 * and the gateway's RSS every 10 s (out: flood.json).
 *
 * `--scale` runs, instead, S2 and S3 (or --only) against three gateways on one devnet: the plain
 * gateway (WORKERS=1, core 0), WORKERS=2 (both cores, which it shares with the devnet and the load
 * generator: this machine has two) and WORKERS=1 with REDIS_URL (a redis-server started for the run,
 * on core 1), and reports each one's req/s as a ratio to the plain gateway's (out: scale.json).
 *
 * `--live` runs, instead, live updates under load (test/bench/live.ts) against their floor, bare
 * node:http (test/bench/sse-floor.ts): `--only A,B,C,D` (default), R; --subscribers, --blocks,
 * --block-ms, --poll-ms, --duration (D, default 180), --groups, --targets, --target (out: live.json).
 *
 * `--chain` runs, instead, public latest-state reads on a devnet making a block every --block-ms
 * (6000), and reports the share answered without an upstream read and the upstream reads per
 * minute (test/bench/chain.ts; --rate, --duration 60, --target; out: chain.json).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { generate } from '../../src/devnet/data.js';
import { startRedis } from '../support/redis.js';
import { chainOptions, formatChainTable, runChain } from './chain.js';
import { formatLiveTable, liveOptions, runLive } from './live.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const SEED = 'bench';
const TOKEN = 'bench-token';

export interface BenchOptions {
  durationSec: number;
  rounds: number;
  connections: number;
  warmupSec: number;
  only?: string[];
}

export interface TargetFigures {
  requestsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  upstreamPerRequest: number;
  /** CPU time the target's process spent per request (user + system): steadier than req/s on a shared VM. */
  cpuUsPerRequest: number;
  requests: number;
  errors: number;
}

export interface ScenarioResult {
  id: string;
  title: string;
  gateway: TargetFigures;
  baseline: TargetFigures;
  /** Gateway req/s as a fraction of the baseline's. */
  ratio: number;
  /** Whether both answered the same JSON to the same request. */
  sameJson: boolean;
}

export interface BenchResult {
  startedAt: string;
  options: BenchOptions;
  pinned: boolean;
  node: string;
  scenarios: ScenarioResult[];
  peakRssMb: { gateway: number; baseline: number };
}

export interface Scenario {
  id: string;
  title: string;
  query: string;
  variables: () => Record<string, unknown>;
  headers?: Record<string, string>;
  latencyMs?: number;
  /** A new document on every request (an adversarial scenario). */
  document?: () => string;
  /** GET: the parameters in the URL, as a CDN forwards a query it does not hold. */
  method?: 'GET';
  /** Only run when named in --only: the adversarial and the gateway-only scenarios. */
  namedOnly?: true;
}

const S2_QUERY = `query S2 { validators(pageSize: 100) { nodes { moniker operatorAddress status jailed tokens delegatorShares uptimePercentage delegationCount imageUrl description commission { rate maxRate maxChangeRate updateTime } } } }`;

export function scenarios(): Scenario[] {
  const data = generate({ seed: SEED, now: Date.now() });
  const delegators = [...data.delegations].filter(([, list]) => list.length >= 20).map(([a]) => a);
  const pick = <T>(items: readonly T[]) => items[Math.floor(Math.random() * items.length)] as T;
  const portfolio = `query S3($d: String!) { delegations(delegatorAddress: $d, pageSize: 20) { nodes { validatorAddress shares balance { denom amount } validator { moniker status commission { rate } } } } }`;
  return [
    {
      id: 'S1',
      title: 'search suggestions, random 0x prefix',
      query: `query S1($q: String!) { searchSuggestions(query: $q) { selectedCategory counts { transactions blocks addresses } transactions { hash blockHeight type } blocks { height hash } addresses { address } submitTarget { kind hash height address } } }`,
      variables: () => ({
        q: `0x${Math.floor(Math.random() * 0xfff)
          .toString(16)
          .padStart(3, '0')}`,
      }),
    },
    {
      id: 'S2',
      title: 'validator table, 100 rows',
      query: S2_QUERY,
      variables: () => ({}),
    },
    {
      id: 'S3',
      title: 'delegator portfolio, 20 with validators',
      query: portfolio,
      variables: () => ({ d: pick(delegators) }),
    },
    {
      id: 'S4',
      title: 'exact search',
      query: `query S4($q: String!) { search(query: $q) { results { kind identity canonicalUrl } } }`,
      variables: () => {
        const roll = Math.random();
        if (roll < 0.4) return { q: String(1 + Math.floor(Math.random() * data.blocks.count)) };
        if (roll < 0.8) return { q: pick(data.txs.hash) };
        return { q: pick(data.addresses) };
      },
    },
    {
      id: 'S5',
      title: 'buyback round mutation',
      query: `mutation S5($input: UpdateBuybackRoundInput!) { updateBuybackRound(input: $input) { round { roundId totalSlots minAmount maxAmount updatedAt } } }`,
      variables: () => ({
        input: { roundId: 'round-006', totalSlots: 100 + Math.floor(Math.random() * 900) },
      }),
      headers: { authorization: `Bearer ${TOKEN}` },
    },
    {
      id: 'S6',
      title: 'S3 with 10 ms per upstream call',
      query: portfolio.replace('query S3', 'query S6'),
      variables: () => ({ d: pick(delegators) }),
      latencyMs: 10,
    },
    {
      id: 'F1',
      title: 'a small public query made new on every request',
      query: FLOOD_QUERY,
      variables: () => ({}),
      document: uniqueFloodDocument,
      namedOnly: true,
    },
    {
      id: 'G2',
      title: 'S2 as a GET, a CDN’s miss (the gateway only: the baseline reads POSTs)',
      query: S2_QUERY.replace('query S2', 'query G2'),
      variables: () => ({}),
      method: 'GET',
      headers: { accept: 'application/json', 'x-graphql-csrf': '1' },
      namedOnly: true,
    },
  ];
}

const hasTaskset = spawnSync('taskset', ['-c', '0', 'true']).status === 0;
const pinned = (cores: number | string, command: string, args: string[]) =>
  hasTaskset ? (['taskset', ['-c', String(cores), command, ...args]] as const) : ([command, args] as const);

/** Starts `node <args>` pinned to cores (`0`, or `0,1`); TypeScript entry points run under tsx. */
export function startProcess(
  cores: number | string,
  args: string[],
  env: Record<string, string>,
  ipc = false,
) {
  const loader = args.some((a) => a.endsWith('.ts')) ? ['--import', 'tsx'] : [];
  const [command, argv] = pinned(cores, process.execPath, [...loader, ...args]);
  const child = spawn(command, [...argv], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe', ...(ipc ? (['ipc'] as const) : [])],
  });
  let output = '';
  const ready = new Promise<string>((resolvePromise, reject) => {
    const collect = (chunk: Buffer) => {
      output += chunk.toString();
      if (/listening on |STAKE_URL=/.test(output)) {
        // From here on the output (the gateway's request log) is drained and dropped, so that
        // this process neither buffers it nor slows the writer.
        child.stdout?.off('data', collect);
        child.stderr?.off('data', collect);
        child.stdout?.resume();
        child.stderr?.resume();
        resolvePromise(output);
      }
    };
    child.stdout?.on('data', collect);
    child.stderr?.on('data', collect);
    child.once('exit', (code) => reject(new Error(`${args[0]} exited with ${code}: ${output}`)));
  });
  return { child, ready: ready.then(() => output) };
}

export function ask<T>(
  child: ChildProcess,
  message: { type: string; ms?: number; blocks?: number },
): Promise<T> {
  return new Promise((resolvePromise) => {
    const onMessage = (reply: { type: string }) => {
      if (reply.type !== message.type) return;
      child.off('message', onMessage);
      resolvePromise(reply as T);
    };
    child.on('message', onMessage);
    child.send(message);
  });
}

/** The devnet's requests so far, per service. */
export const devnetCounts = async (devnet: ChildProcess) =>
  (await ask<{ counts: Record<'scan' | 'explorer' | 'stake', number> }>(devnet, { type: 'counts' })).counts;

const upstreamTotal = async (devnet: ChildProcess) =>
  Object.values(await devnetCounts(devnet)).reduce((a, b) => a + b, 0);

/** Moves the benchmark devnet's chain on by `blocks` blocks; what it added. */
export const advanceDevnet = async (devnet: ChildProcess, blocks: number) =>
  (await ask<{ advance: { heights: number[] } }>(devnet, { type: 'advance', blocks })).advance;

/**
 * Stops the processes a run started and waits until each has exited (SIGKILL after 15 s): they
 * must not outlive this process, whose end closes the pipes they log to.
 */
export async function stopAll(children: ChildProcess[]): Promise<void> {
  await Promise.all(
    children.map(async (child) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolveExit) => child.once('exit', resolveExit));
      child.kill('SIGTERM');
      const force = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(force);
    }),
  );
}

/** User + system CPU seconds of a process so far (/proc/<pid>/stat, in clock ticks of 1/100 s). */
export const cpuSeconds = (pid: number | undefined): number => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) / 100;
};

/** cpuSeconds() of a process and of every live descendant (the workers of WORKERS > 1). */
export const treeCpuSeconds = (pid: number | undefined): number => {
  let children: number[] = [];
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .split(' ')
      .filter(Boolean)
      .map(Number);
  } catch {}
  return cpuSeconds(pid) + children.reduce((sum, child) => sum + treeCpuSeconds(child), 0);
};

const peakRssMb = (pid: number | undefined) => {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Math.round(Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024);
};

export async function load(
  url: string,
  scenario: Scenario,
  durationSec: number,
  connections: number,
  {
    document = scenario.document ?? (() => scenario.query),
    rate,
  }: {
    /** The document of each request (default: the scenario's own, always the same). */
    document?: () => string;
    /** Requests per second over the whole run (autocannon's overallRate); none: as fast as it goes. */
    rate?: number;
  } = {},
) {
  const result = await autocannon({
    url,
    connections,
    duration: durationSec,
    ...(rate ? { overallRate: rate } : {}),
    requests: [
      scenario.method === 'GET'
        ? {
            method: 'GET',
            headers: { ...scenario.headers },
            setupRequest: (req) => ({
              ...req,
              path: `${new URL(url).pathname}?${new URLSearchParams({
                query: document(),
                operationName: scenario.id,
                variables: JSON.stringify(scenario.variables()),
              })}`,
            }),
          }
        : {
            method: 'POST',
            headers: { 'content-type': 'application/json', ...scenario.headers },
            setupRequest: (req) => ({
              ...req,
              body: JSON.stringify({
                query: document(),
                operationName: scenario.id,
                variables: scenario.variables(),
              }),
            }),
          },
    ],
  });
  return result;
}

async function post(url: string, scenario: Scenario, variables: Record<string, unknown>): Promise<unknown> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...scenario.headers },
    body: JSON.stringify({ query: scenario.query, operationName: scenario.id, variables }),
  });
  return res.json();
}

/** `npm run build`, and this process (the load generator) moved to core 1. */
export function prepare(): void {
  const build = spawnSync('npm', ['run', '-s', 'build'], { cwd: ROOT, stdio: 'inherit' });
  if (build.status !== 0) throw new Error('npm run build failed');
  if (hasTaskset) spawnSync('taskset', ['-p', '-c', '1', String(process.pid)]);
}

/** The devnet on core 1, with the benchmark's seed and token, and its three upstream URLs. */
export async function startBenchDevnet() {
  const devnet = startProcess(
    1,
    ['src/devnet/main.ts'],
    {
      DEVNET_SEED: SEED,
      DEVNET_TOKEN: TOKEN,
      SCAN_PORT: '0',
      EXPLORER_PORT: '0',
      STAKE_PORT: '0',
      // The chain stands still unless a scenario advances it: every run reads the same data.
      DEVNET_BLOCK_MS: '0',
    },
    true,
  );
  const output = await devnet.ready;
  const urls = Object.fromEntries(
    [...output.matchAll(/(\w+_URL)=(\S+)/g)].map((m) => [m[1], m[2]]),
  ) as Record<string, string>;
  return { child: devnet.child, urls };
}

/** The V8 flags `npm start` gives the gateway. */
export const START_FLAGS = (
  JSON.parse(readFileSync(resolve(ROOT, 'package.json'), 'utf8')).scripts.start as string
)
  .split(' ')
  .filter((word) => word.startsWith('--'));

/**
 * A target on core 0: `baseline`, or a compiled gateway (`dist`, or another build's directory) run
 * as `npm start` runs it, with its V8 flags and NODE_ENV=production.
 */
/** A compiled gateway's entry point: `main.js`, or `server.js` in builds from before the move to src/main.ts. */
export function entryPoint(target: string): string {
  const main = resolve(ROOT, target, 'main.js');
  return existsSync(main) ? main : resolve(ROOT, target, 'server.js');
}

export async function startTarget(
  target: string,
  urls: Record<string, string>,
  env: Record<string, string> = {},
  cores: number | string = 0,
) {
  const started =
    target === 'baseline'
      ? startProcess(cores, ['test/bench/baseline.ts'], { ...urls, PORT: '0' })
      : startProcess(cores, [...START_FLAGS, entryPoint(target)], {
          ...urls,
          PORT: '0',
          NODE_ENV: 'production',
          // The load generator is one client: unthrottled, so that figures stay comparable.
          RATE_LIMIT_POINTS: '0',
          MAX_CONNECTIONS_PER_CLIENT: '1000000',
          // Production on real upstreams does not start without it (config.ts).
          CURSOR_SECRET: 'bench-cursor-secret-0123456789abcdef',
          // /metrics on a free port of its own: targets run side by side (production's 9464 would clash).
          METRICS_PORT: '0',
          ...env,
        });
  const output = await started.ready.catch((error) => {
    started.child.kill('SIGTERM');
    throw error;
  });
  return { child: started.child, url: /listening on (\S+)/.exec(output)?.[1] as string };
}

/** One round of load against one target: its figures, upstream calls counted at the devnet. */
async function measure(
  devnet: ChildProcess,
  pid: number | undefined,
  url: string,
  scenario: Scenario,
  options: BenchOptions,
  document?: () => string,
): Promise<TargetFigures> {
  const before = await upstreamTotal(devnet);
  const cpuBefore = treeCpuSeconds(pid);
  const r = await load(url, scenario, options.durationSec, options.connections, { document });
  const cpu = treeCpuSeconds(pid) - cpuBefore;
  const upstream = (await upstreamTotal(devnet)) - before;
  return {
    cpuUsPerRequest: r.requests.total > 0 ? (cpu * 1e6) / r.requests.total : 0,
    requestsPerSec: r.requests.average,
    p50Ms: r.latency.p50,
    p99Ms: r.latency.p99,
    upstreamPerRequest: r.requests.total > 0 ? upstream / r.requests.total : 0,
    requests: r.requests.total,
    errors: r.errors + r.non2xx,
  };
}

/**
 * Builds the gateway, moves this process to core 1, starts the benchmark's devnet there, and runs
 * `body` with a way to start targets; every process started is stopped at the end.
 */
export async function withBenchDevnet<T>(
  body: (
    devnet: Awaited<ReturnType<typeof startBenchDevnet>>,
    start: (...args: Parameters<typeof startTarget>) => ReturnType<typeof startTarget>,
  ) => Promise<T>,
): Promise<T> {
  prepare();
  const devnet = await startBenchDevnet();
  const children: ChildProcess[] = [devnet.child];
  try {
    return await body(devnet, async (...args) => {
      const started = await startTarget(...args);
      children.push(started.child);
      return started;
    });
  } finally {
    await stopAll(children);
  }
}

/** What every result file starts with: when, with which options, pinned or not, on which Node. */
const runHeader = (options: BenchOptions) => ({
  startedAt: new Date().toISOString(),
  options,
  pinned: hasTaskset,
  node: process.version,
});

function mean(figures: TargetFigures[]): TargetFigures {
  const avg = (key: keyof TargetFigures) => figures.reduce((s, f) => s + f[key], 0) / figures.length;
  return {
    requestsPerSec: Math.round(avg('requestsPerSec')),
    p50Ms: Number(avg('p50Ms').toFixed(2)),
    p99Ms: Number(avg('p99Ms').toFixed(2)),
    upstreamPerRequest: Number(avg('upstreamPerRequest').toFixed(3)),
    cpuUsPerRequest: Math.round(avg('cpuUsPerRequest')),
    requests: figures.reduce((s, f) => s + f.requests, 0),
    errors: figures.reduce((s, f) => s + f.errors, 0),
  };
}

export async function runBenchmark(
  options: BenchOptions,
  log: (line: string) => void = console.log,
): Promise<BenchResult> {
  return withBenchDevnet(async (devnet, start) => {
    const gateway = await start('dist', devnet.urls);
    const baseline = await start('baseline', devnet.urls);
    const targets = { gateway: gateway.url, baseline: baseline.url };

    const results: ScenarioResult[] = [];
    for (const scenario of scenarios().filter((s) =>
      options.only ? options.only.includes(s.id) : !s.namedOnly,
    )) {
      await ask(devnet.child, { type: 'latency', ms: scenario.latencyMs ?? 0 });
      const variables = scenario.variables();
      const [fromGateway, fromBaseline] = [
        await post(targets.gateway, scenario, variables),
        await post(targets.baseline, scenario, variables),
      ];
      // The same answer but for the chain height the gateway stamps it with (the baseline knows none).
      const { extensions: { chainHeight: _height, ...extensions } = {}, ...answer } = fromGateway as {
        extensions?: Record<string, unknown>;
      };
      const stamped = Object.keys(extensions).length > 0 ? { ...answer, extensions } : answer;
      const sameJson = scenario.id === 'S5' || JSON.stringify(stamped) === JSON.stringify(fromBaseline);
      for (const url of [targets.gateway, targets.baseline])
        await load(url, scenario, options.warmupSec, options.connections);

      const runs = { gateway: [] as TargetFigures[], baseline: [] as TargetFigures[] };
      for (let round = 0; round < options.rounds; round++) {
        const order =
          round % 2 === 0 ? (['gateway', 'baseline'] as const) : (['baseline', 'gateway'] as const);
        for (const target of order) {
          const pid = (target === 'gateway' ? gateway : baseline).child.pid;
          runs[target].push(await measure(devnet.child, pid, targets[target], scenario, options));
        }
      }
      const gw = mean(runs.gateway);
      const base = mean(runs.baseline);
      const result: ScenarioResult = {
        id: scenario.id,
        title: scenario.title,
        gateway: gw,
        baseline: base,
        ratio: base.requestsPerSec > 0 ? Number((gw.requestsPerSec / base.requestsPerSec).toFixed(2)) : 0,
        sameJson,
      };
      results.push(result);
      log(
        `${scenario.id} ${scenario.title}: gateway ${gw.requestsPerSec} req/s (p50 ${gw.p50Ms} ms, p99 ${gw.p99Ms} ms), ` +
          `baseline ${base.requestsPerSec} req/s, ratio ${result.ratio}`,
      );
    }
    await ask(devnet.child, { type: 'latency', ms: 0 });
    return {
      ...runHeader(options),
      scenarios: results,
      peakRssMb: { gateway: peakRssMb(gateway.child.pid), baseline: peakRssMb(baseline.child.pid) },
    };
  });
}

/** The gateways that `--scale` compares, the first being the one the others are a ratio to. */
export const SCALE_VARIANTS = [
  { name: 'WORKERS=1', env: {}, cores: '0' },
  { name: 'WORKERS=2', env: { WORKERS: '2' }, cores: '0,1' },
  { name: 'WORKERS=1 + REDIS_URL', env: { REDIS_URL: '' }, cores: '0' },
] as const;

export interface ScaleScenarioResult {
  id: string;
  title: string;
  /** Per variant, in SCALE_VARIANTS' order, with its req/s as a fraction of the first's. */
  targets: (TargetFigures & { name: string; ratio: number })[];
}

export interface ScaleResult {
  startedAt: string;
  options: BenchOptions;
  pinned: boolean;
  node: string;
  scenarios: ScaleScenarioResult[];
}

/**
 * `--scale`: S2 and S3 (or options.only) against every SCALE_VARIANTS gateway on one devnet and one
 * redis-server, one target loaded at a time, in an order that alternates from round to round. CPU per
 * request counts the gateway's process and its workers (not redis-server).
 */
export async function runScale(
  options: BenchOptions,
  log: (line: string) => void = console.log,
): Promise<ScaleResult> {
  return withBenchDevnet(async (devnet, start) => {
    // Started from this process, now on core 1: redis-server inherits core 1, beside the devnet.
    const redis = await startRedis();
    try {
      const started: { child: ChildProcess; url: string }[] = [];
      for (const variant of SCALE_VARIANTS) {
        const env = 'REDIS_URL' in variant.env ? { REDIS_URL: redis.url } : variant.env;
        started.push(await start('dist', devnet.urls, env, variant.cores));
      }
      const results: ScaleScenarioResult[] = [];
      const only = options.only ?? ['S2', 'S3'];
      for (const scenario of scenarios().filter((s) => only.includes(s.id))) {
        await ask(devnet.child, { type: 'latency', ms: scenario.latencyMs ?? 0 });
        for (const { url } of started) await load(url, scenario, options.warmupSec, options.connections);
        const runs = started.map(() => [] as TargetFigures[]);
        for (let round = 0; round < options.rounds; round++) {
          const order = started.map((_, i) => i);
          if (round % 2 === 1) order.reverse();
          for (const i of order) {
            const { child, url } = started[i] as (typeof started)[number];
            runs[i]?.push(await measure(devnet.child, child.pid, url, scenario, options));
          }
        }
        const means = runs.map(mean);
        const first = means[0]?.requestsPerSec ?? 0;
        const targets = means.map((figures, i) => ({
          name: SCALE_VARIANTS[i]?.name ?? '',
          ...figures,
          ratio: first > 0 ? Number((figures.requestsPerSec / first).toFixed(2)) : 0,
        }));
        results.push({ id: scenario.id, title: scenario.title, targets });
        log(
          `${scenario.id} ${scenario.title}: ${targets
            .map((t) => `${t.name} ${t.requestsPerSec} req/s (${t.ratio})`)
            .join(', ')}`,
        );
      }
      await ask(devnet.child, { type: 'latency', ms: 0 });
      return { ...runHeader(options), scenarios: results };
    } finally {
      await redis.close();
    }
  });
}

export function formatScaleTable(result: ScaleResult): string {
  const rows = result.scenarios.flatMap((s) =>
    s.targets.map((t) =>
      [
        s.id,
        t.name,
        t.requestsPerSec,
        t.ratio.toFixed(2),
        `${t.p50Ms} / ${t.p99Ms}`,
        t.upstreamPerRequest,
        t.cpuUsPerRequest,
        t.errors,
      ].join(' | '),
    ),
  );
  return [
    'id | gateway | req/s | ratio to WORKERS=1 | p50 / p99 ms | upstream calls per request | CPU µs per request (all processes of the gateway) | errors',
    '---|---|---|---|---|---|---|---',
    ...rows,
    '',
    `${result.options.connections} connections, ${result.options.rounds} rounds of ${result.options.durationSec} s; ` +
      `${result.pinned ? 'WORKERS=1 pinned to core 0, WORKERS=2 on cores 0 and 1 (shared with the devnet, redis-server and the load generator)' : 'not pinned (no taskset)'}; Node ${result.node}`,
  ].join('\n');
}

export function formatTable(result: BenchResult): string {
  const rows = result.scenarios.map((s) =>
    [
      s.id,
      s.title,
      s.gateway.requestsPerSec,
      s.baseline.requestsPerSec,
      s.ratio.toFixed(2),
      `${s.gateway.p50Ms} / ${s.gateway.p99Ms}`,
      `${s.baseline.p50Ms} / ${s.baseline.p99Ms}`,
      `${s.gateway.upstreamPerRequest} / ${s.baseline.upstreamPerRequest}`,
      `${s.gateway.cpuUsPerRequest} / ${s.baseline.cpuUsPerRequest}`,
      s.gateway.errors + s.baseline.errors,
      s.sameJson ? 'yes' : 'NO',
    ].join(' | '),
  );
  return [
    'id | scenario | gateway req/s | baseline req/s | ratio | gateway p50 / p99 ms | baseline p50 / p99 ms | upstream calls per request (gateway / baseline) | CPU µs per request (gateway / baseline) | errors | same JSON',
    '---|---|---|---|---|---|---|---|---|---|---',
    ...rows.map((r) => `${r}`),
    '',
    `peak RSS: gateway ${result.peakRssMb.gateway} MB, baseline ${result.peakRssMb.baseline} MB; ` +
      `${result.options.connections} connections, ${result.options.rounds} rounds of ${result.options.durationSec} s; ` +
      `${result.pinned ? 'pinned with taskset' : 'not pinned (no taskset)'}; Node ${result.node}`,
  ].join('\n');
}

/** `--flood`: what a stream of documents never seen before costs, against the same document repeated. */
export interface FloodResult {
  startedAt: string;
  node: string;
  pinned: boolean;
  repeated: TargetFigures;
  unique: TargetFigures;
  /** Unique documents' req/s as a fraction of the repeated document's. */
  ratio: number;
  /** Resident memory of the gateway every 10 s of the unique flood (MB), and its peak. */
  rssMb: number[];
  peakRssMb: number;
}

/** A small public query, and the same query made new on every request (an alias or a comment). */
export const FLOOD_QUERY =
  'query F1 { validatorStatistics { totalValidators activeValidators totalStakedAmount } }';
let floodCounter = 0;
export const uniqueFloodDocument = (): string => {
  const n = `${process.pid}x${floodCounter++}x${Math.floor(Math.random() * 1e9)}`;
  return floodCounter % 2 === 0
    ? FLOOD_QUERY.replace('{ validatorStatistics', `{ a${n}: validatorStatistics`)
    : `${FLOOD_QUERY} # ${n}`;
};

export const rssMb = (pid: number | undefined) =>
  Math.round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024);

/**
 * `--flood`: the production gateway (core 0) answers FLOOD_QUERY repeated for `warmup` + 20 s, then
 * a new document on every request for `duration` seconds (default 120), its RSS read every 10 s.
 */
export async function runFlood(
  options: BenchOptions,
  log: (line: string) => void = console.log,
  /** The build to flood: `dist`, or another build's directory (`--target`). */
  target = 'dist',
): Promise<FloodResult> {
  return withBenchDevnet(async (devnet, start) => {
    const gateway = await start(target, devnet.urls);
    const pid = gateway.child.pid;
    const scenario = scenarios().find((s) => s.id === 'F1') as Scenario;
    const same = () => FLOOD_QUERY;
    await load(gateway.url, scenario, options.warmupSec, options.connections, { document: same });
    const run = (durationSec: number, document: () => string) =>
      measure(devnet.child, pid, gateway.url, scenario, { ...options, durationSec }, document);
    const repeated = await run(20, same);
    log(
      `repeated document: ${repeated.requestsPerSec} req/s, ${Math.round(repeated.cpuUsPerRequest)} µs CPU per request, RSS ${rssMb(pid)} MB`,
    );
    const curve: number[] = [];
    const sampler = setInterval(() => curve.push(rssMb(pid)), 10_000);
    const unique = await run(options.durationSec, uniqueFloodDocument).finally(() => clearInterval(sampler));
    log(
      `unique documents: ${unique.requestsPerSec} req/s, ${Math.round(unique.cpuUsPerRequest)} µs CPU per request, errors ${unique.errors}`,
    );
    log(`RSS every 10 s (MB): ${curve.join(', ')}`);
    return {
      startedAt: new Date().toISOString(),
      node: process.version,
      pinned: hasTaskset,
      repeated,
      unique,
      ratio: Number((unique.requestsPerSec / repeated.requestsPerSec).toFixed(2)),
      rssMb: curve,
      peakRssMb: peakRssMb(pid),
    };
  });
}

/** The value after `--name` on the command line, or the fallback. */
export function cliOption(name: string, fallback: string): string {
  const at = process.argv.indexOf(`--${name}`);
  return at === -1 ? fallback : (process.argv[at + 1] ?? fallback);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  const options: BenchOptions = {
    durationSec: Number(cliOption('duration', '5')),
    rounds: Number(cliOption('rounds', '2')),
    connections: Number(cliOption('connections', '16')),
    warmupSec: Number(cliOption('warmup', '2')),
    ...(process.argv.includes('--only') ? { only: cliOption('only', '').split(',') } : {}),
  };
  const mode = process.argv.includes('--scale')
    ? 'scale'
    : process.argv.includes('--flood')
      ? 'flood'
      : process.argv.includes('--live')
        ? 'live'
        : process.argv.includes('--chain')
          ? 'chain'
          : 'latest';
  const out = resolve(ROOT, cliOption('out', `test/bench/results/${mode}.json`));
  if (mode === 'flood' && !process.argv.includes('--duration')) options.durationSec = 120;
  const result =
    mode === 'scale'
      ? await runScale(options)
      : mode === 'flood'
        ? await runFlood(options, console.log, cliOption('target', 'dist'))
        : mode === 'live'
          ? await runLive(liveOptions())
          : mode === 'chain'
            ? await runChain(chainOptions())
            : await runBenchmark(options);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
  const table =
    'live' in result
      ? formatLiveTable(result)
      : 'chain' in result
        ? formatChainTable(result)
        : 'ratio' in result
          ? `unique documents at ${result.ratio} of the repeated document's req/s; peak RSS ${result.peakRssMb} MB`
          : 'peakRssMb' in result
            ? formatTable(result)
            : formatScaleTable(result);
  console.log(`\n${table}\n\nfigures written to ${out}`);
  process.exit(0);
}
