import { type ChildProcess, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { performance as perfHooks } from 'node:perf_hooks';
import { generate } from '../../src/devnet/data.js';
import { startRedis } from '../support/redis.js';
import { cliOption, cpuSeconds, prepare, START_FLAGS, startProcess, startTarget, stopAll } from './bench.js';
import { closeAll, now, openMany, type Reader, type Stream } from './live-load.js';
import { openManyWs } from './live-ws.js';

/**
 * `npm run bench -- --live`: live updates under load, the gateway beside its floor. The floor
 * (sse-floor.ts) is bare node:http writing one pre-built frame to every open stream; both run on
 * core 0 (one at a time, each started for its measurement and stopped after it), the devnet
 * (live-devnet.ts) and this load generator on core 1. The load generator opens the streams (one
 * connection each, spread over 127.0.0.2–9), then makes the events: for the gateway it advances the
 * devnet, which the gateway finds on its next poll; for the floor it sends a tick, which the floor
 * writes at once. Figures per target:
 *
 * - RSS per open stream: (RSS with the streams open − RSS before) / streams.
 * - CPU per delivered event: the target's CPU from the first event until every stream had every
 *   event, over the frames received. It includes the target's idle work (polls, timers) over that
 *   time, reported apart as idle CPU per second with the streams open.
 * - Latency: from the poll's answer (the devnet's arrival time of the lookup of head + 1 that found
 *   the block: live-devnet.ts) or the floor's tick to the receipt at each stream; p50 / p99 over
 *   every block and every stream. Lag: from the block's creation (or the tick) to receipt.
 * - Executions per block and groups: the gateway's `live_executions_total` and
 *   `graphql_subscription_groups` (n/a when the gateway has no such metric).
 *
 * Scenarios (`--only A,B,C,D`, default all four; `R` only when named):
 * A. --subscribers (10,000) `blockAdded` subscribers of one document, --blocks (20) blocks one every
 *    --block-ms (1,000).
 * B. --subscribers over --groups (100) groups: `validatorUpdated(operatorAddress:)` for that many
 *    validators, four selections; --blocks (20) steps of 20 blocks each, whose changed validators
 *    reach the groups watching them; the floor replays, step by step, the group events the gateway
 *    delivered, with the frames it wrote.
 * C. 18,000 `blockAdded` streams on one process, 10 blocks.
 * D. Sustained: a block every 300 ms for --duration (180) s with 10,000 subscribers; the lag behind
 *    the chain, the blocks still undelivered when the chain stops, the polls and poll errors.
 * R. 1,000 subscribers over two gateways on one Redis: one poller between them, each block once each.
 *
 * --subscribers overrides every scenario's count, --blocks every scenario's events but D's,
 * --block-ms every scenario's cadence (1,000; D 300); --poll-ms sets LIVE_POLL_MS (200); --targets
 * gateway,floor; --target DIR (the gateway's build; only `dist` is built); --transports sse,ws: the
 * gateway's streams over SSE, over graphql-ws (live-ws.ts: one subscription per socket, as a
 * browser tab holds it), or both, each on a gateway of its own, the same figures side by side (the
 * floor writes SSE; R is SSE only). The targets inherit this shell's `ulimit -n`; C needs about 19,000.
 */

export interface LiveOptions {
  only: string[];
  subscribers?: number;
  blocks?: number;
  blockMs?: number;
  pollMs: number;
  durationSec: number;
  groups: number;
  targets: ('gateway' | 'floor')[];
  target: string;
  /** How the gateway's streams are opened: SSE, graphql-ws, or both (each its own run). */
  transports: Transport[];
}

export type Transport = 'sse' | 'ws';

/** The live benchmark's options from the command line. */
export function liveOptions(): LiveOptions {
  const number = (name: string) =>
    process.argv.includes(`--${name}`) ? Number(cliOption(name, '')) : undefined;
  return {
    only: cliOption('only', 'A,B,C,D').split(','),
    subscribers: number('subscribers'),
    blocks: number('blocks'),
    blockMs: number('block-ms'),
    pollMs: number('poll-ms') ?? 200,
    durationSec: number('duration') ?? 180,
    groups: number('groups') ?? 100,
    targets: cliOption('targets', 'gateway,floor').split(',') as LiveOptions['targets'],
    target: cliOption('target', 'dist'),
    transports: transportsOption(cliOption('transports', 'sse')),
  };
}

/** `--transports`: sse, ws or both, in the order given; anything else stops the run. */
export function transportsOption(value: string): Transport[] {
  const transports = value.split(',').map((t) => t.trim());
  const unknown = transports.filter((t) => t !== 'sse' && t !== 'ws');
  if (unknown.length > 0 || transports.length === 0)
    throw new Error(`--transports takes sse, ws or sse,ws; got ${value}`);
  return [...new Set(transports)] as Transport[];
}

const BLOCK_QUERY = 'subscription Bench { blockAdded { height hash proposer } }';
/** Four selections of `validatorUpdated`, one per group in turn. */
const VALIDATOR_SELECTIONS = [
  'operatorAddress tokens status jailed',
  'operatorAddress moniker tokens delegatorShares commission { rate }',
  'operatorAddress tokens uptimePercentage missed signed proposed',
  'id operatorAddress moniker description imageUrl tokens bondStatus',
];
const BLOCKS_PER_STEP = 20;

/** How a scenario runs: its subscribers and cadence, until `limit`, then at most `drainMs` to drain. */
const runOf = (
  spec: { subscribers: number; eventEveryMs: number },
  limit: { count: number } | { durationMs: number },
  drainMs: number,
) => ({ subscribers: spec.subscribers, blockMs: spec.eventEveryMs, limit, drainMs });

/** The scenarios of plain `blockAdded` streams: A (one document, 10,000) and C (18,000 on one process). */
const BLOCK_SCENARIOS: Record<string, { title: string; subscribers: number; blocks: number }> = {
  A: { title: 'blockAdded, one document', subscribers: 10_000, blocks: 20 },
  C: { title: 'blockAdded, 18,000 streams', subscribers: 18_000, blocks: 10 },
};
/** The floor's block frame when no gateway frame was sampled in the run: the same fields and sizes. */
const SYNTHETIC_BLOCK = `{"data":{"blockAdded":{"height":1,"hash":"0x${'5e'.repeat(32)}","proposer":"biyavalcons1${'q'.repeat(38)}"}}}`;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let calls = 0;
/** Asks a child over IPC; the reply carries the question's id. */
function call<T>(child: ChildProcess, message: { type: string; [key: string]: unknown }): Promise<T> {
  const id = ++calls;
  return new Promise((resolve, reject) => {
    const onMessage = (reply: { id?: number }) => {
      if (reply.id !== id) return;
      child.off('message', onMessage);
      child.off('exit', onExit);
      resolve(reply as T);
    };
    const onExit = () => reject(new Error(`a child exited while asked ${message.type}`));
    child.on('message', onMessage);
    child.once('exit', onExit);
    child.send({ ...message, id });
  });
}

async function until(
  check: () => boolean | Promise<boolean>,
  timeoutMs: number,
  everyMs = 20,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await sleep(everyMs);
  }
  return check();
}

/** A target as the log names it: the floor, or the gateway with its transport. */
const label = (target: { kind: string; transport: Transport }) =>
  target.kind === 'gateway' && target.transport === 'ws' ? 'gateway (graphql-ws)' : target.kind;

const status = (pid: number, field: string) =>
  Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
const openFileLimit = (pid: number) =>
  Number(/Max open files\s+(\d+)/.exec(readFileSync(`/proc/${pid}/limits`, 'utf8'))?.[1] ?? 0);

/** A counter or gauge from Prometheus text; null when the metric is not exposed at all. */
function metric(text: string, name: string, labels: Record<string, string> = {}): number | null {
  if (!text.includes(`# HELP ${name.replace(/_(bucket|count|sum)$/, '')} `)) return null;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name) || (line[name.length] !== '{' && line[name.length] !== ' ')) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) {
      return Number(line.slice(line.lastIndexOf(' ') + 1));
    }
  }
  return 0;
}
const scrape = async (url: string) => (await fetch(new URL('/metrics', url))).text();

/** A port free on 127.0.0.1 now (the target binds it a moment later). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
const delta = (after: number | null, before: number | null) =>
  after === null ? null : after - (before ?? 0);

interface Percentiles {
  p50: number;
  p99: number;
  max: number;
  samples: number;
}
function percentiles(samples: number[]): Percentiles {
  const sorted = Float64Array.from(samples).sort();
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0;
  const round = (ms: number) => Math.round(ms * 10) / 10;
  return { p50: round(at(0.5)), p99: round(at(0.99)), max: round(at(1)), samples: sorted.length };
}

interface Target {
  kind: 'gateway' | 'floor';
  /** How its streams are opened (the floor's: SSE). */
  transport: Transport;
  child: ChildProcess;
  pid: number;
  url: string;
  /** Where its `/metrics` is read: the gateway's METRICS_PORT (production's own port), else `url`. */
  metricsUrl: string;
  openFiles: number;
  /** The last lines the process wrote to stderr (why it died, when it did). */
  stderr: string[];
  /** The streams opened to it, closed when its run ends however it ends. */
  streams?: Stream[];
}

/** Keeps the last 40 lines of a child's stderr (V8's out-of-memory report is about 15). */
function stderrTail(child: ChildProcess): string[] {
  const lines: string[] = [];
  child.stderr?.on('data', (chunk: Buffer) => {
    lines.push(...chunk.toString().split('\n').filter(Boolean));
    lines.splice(0, Math.max(0, lines.length - 40));
  });
  return lines;
}

/** Throws when the target has exited: what it measured is lost, the reason goes in the results. */
function alive(target: Target): void {
  const { exitCode, signalCode } = target.child;
  if (exitCode === null && signalCode === null) return;
  // V8's own words when it ran out of heap, else the last lines.
  const fatal = target.stderr.filter((line) => /FATAL ERROR|out of memory/i.test(line));
  const said = (fatal.length > 0 ? fatal : target.stderr.slice(-3)).join(' | ').slice(0, 500);
  throw new Error(`the ${target.kind} exited (${signalCode ?? `code ${exitCode}`}): ${said}`);
}

interface Bench {
  devnet: ChildProcess;
  urls: Record<string, string>;
  options: LiveOptions;
  log: (line: string) => void;
}

const gatewayEnv = (subscribers: number, pollMs: number) => ({
  LIVE_POLL_MS: String(pollMs),
  MAX_SUBSCRIPTIONS: String(subscribers + 100),
  MAX_SUBSCRIPTIONS_PER_CLIENT: String(subscribers + 100),
  MAX_CONNECTIONS: String(subscribers + 1_024),
});

async function startGateway(
  bench: Bench,
  subscribers: number,
  env: Record<string, string> = {},
  transport: Transport = 'sse',
): Promise<Target> {
  // Production serves /metrics on a port of its own (METRICS_PORT), one the runner must know.
  const metricsPort = await freePort();
  const started = await startTarget(bench.options.target, bench.urls, {
    ...gatewayEnv(subscribers, bench.options.pollMs),
    METRICS_PORT: String(metricsPort),
    ...env,
  });
  const pid = started.child.pid as number;
  const stderr = stderrTail(started.child);
  return {
    kind: 'gateway',
    transport,
    child: started.child,
    pid,
    url: started.url,
    metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
    openFiles: openFileLimit(pid),
    stderr,
  };
}

async function startFloor(): Promise<Target> {
  const started = startProcess(0, [...START_FLAGS, 'test/bench/sse-floor.ts'], { PORT: '0' }, true);
  const output = await started.ready.catch((error) => {
    started.child.kill('SIGTERM');
    throw error;
  });
  const pid = started.child.pid as number;
  const url = /listening on (\S+)/.exec(output)?.[1] as string;
  const stderr = stderrTail(started.child);
  return {
    kind: 'floor',
    transport: 'sse',
    child: started.child,
    pid,
    url,
    metricsUrl: url,
    openFiles: openFileLimit(pid),
    stderr,
  };
}

/** Waits for the gateway's first good poll of `source` (the head found), up to 30 s. */
async function firstPoll(target: Target, source: string): Promise<void> {
  if (target.kind !== 'gateway') return;
  await until(
    async () =>
      (metric(await scrape(target.metricsUrl), 'live_polls_total', { source, result: 'ok' }) ?? 0) >= 1,
    30_000,
    100,
  );
}

/** What both kinds of run measure around their events. */
interface Common {
  streams: number;
  refused: number;
  firstRefusal?: string;
  openFileLimit: number;
  rssMbBefore: number;
  rssMbWithStreams: number;
  rssKbPerStream: number;
  peakRssMb: number;
  /** The target's CPU per second with the streams open and no event (polls, timers). */
  idleCpuMsPerSec: number;
  cpuSec: number;
  /** From the first event until every stream had every event (or the wait ended). */
  windowSec: number;
  delivered: number;
  expected: number;
  cpuUsPerDeliveredEvent: number;
  cpuUsPerDeliveredEventNetOfIdle: number;
  /** The load generator's event-loop utilization over the events (near 1: it was the bottleneck). */
  loadGeneratorBusy: number;
  groups: number | null;
}

/** Opens the streams and takes the figures before the events: RSS, idle CPU, groups. */
async function openPhase(
  bench: Bench,
  target: Target,
  reader: Reader,
  count: number,
  bodies: string[],
  source: string,
) {
  await sleep(1_000);
  // The targets inherit this shell's `ulimit -n`: too low, and streams are refused, not measured.
  const files = Math.min(target.openFiles, openFileLimit(process.pid));
  if (files < count + 100) bench.log(`  open-file limit ${files} for ${count} streams: raise it (ulimit -n)`);
  const rssKbBefore = status(target.pid, 'VmRSS');
  const opened = await (target.transport === 'ws' ? openManyWs : openMany)(reader, target.url, count, bodies);
  target.streams = opened.streams;
  alive(target);
  if (opened.refused > 0) bench.log(`  ${opened.refused} streams refused, first: ${opened.firstRefusal}`);
  await firstPoll(target, source);
  await sleep(2_000);
  const rssKbWith = status(target.pid, 'VmRSS');
  const idleBefore = cpuSeconds(target.pid);
  await sleep(3_000);
  const idleCpuMsPerSec = Math.round(((cpuSeconds(target.pid) - idleBefore) * 1000) / 3);
  const text = target.kind === 'gateway' ? await scrape(target.metricsUrl) : '';
  const common = {
    streams: opened.streams.length,
    refused: opened.refused,
    ...(opened.firstRefusal ? { firstRefusal: opened.firstRefusal } : {}),
    openFileLimit: target.openFiles,
    rssMbBefore: Math.round(rssKbBefore / 1024),
    rssMbWithStreams: Math.round(rssKbWith / 1024),
    rssKbPerStream: Number(((rssKbWith - rssKbBefore) / Math.max(1, opened.streams.length)).toFixed(1)),
    idleCpuMsPerSec,
    // A build that declares the gauge but does not group leaves it at 0: not a figure.
    groups: target.kind === 'gateway' ? metric(text, 'graphql_subscription_groups') || null : null,
  };
  bench.log(
    `  ${label(target)}: ${common.streams} streams open, RSS ${common.rssMbBefore} → ${common.rssMbWithStreams} MB ` +
      `(${common.rssKbPerStream} KB per stream), idle CPU ${idleCpuMsPerSec} ms/s, groups ${common.groups ?? 'n/a'}`,
  );
  return { streams: opened.streams, common, metricsBefore: text };
}

/** Fires `fire(i)` every `everyMs`, on a schedule that does not drift, `count` times or for `durationMs`. */
async function drive(
  everyMs: number,
  limit: { count?: number; durationMs?: number },
  fire: (i: number) => Promise<void>,
) {
  const start = now();
  for (let i = 0; ; i++) {
    if (limit.count !== undefined && i >= limit.count) break;
    if (limit.durationMs !== undefined && i * everyMs >= limit.durationMs) break;
    const wait = start + i * everyMs - now();
    if (wait > 0) await sleep(wait);
    await fire(i);
  }
}

/** The window over which CPU is counted: the target's, and the load generator's busy share. */
function cpuWindow(pid: number) {
  const cpu = cpuSeconds(pid);
  const elu = perfHooks.eventLoopUtilization();
  const start = now();
  return () => ({
    cpuSec: Number((cpuSeconds(pid) - cpu).toFixed(2)),
    windowSec: Number(((now() - start) / 1000).toFixed(2)),
    loadGeneratorBusy: Number(perfHooks.eventLoopUtilization(elu).utilization.toFixed(2)),
  });
}

/** CPU per delivered event (µs), and the same without the target's idle CPU over the window. */
function perEvent(cpu: { cpuSec: number; windowSec: number }, idleCpuMsPerSec: number, delivered: number) {
  const per = (sec: number) => Number(((Math.max(0, sec) * 1e6) / Math.max(1, delivered)).toFixed(1));
  return {
    cpuUsPerDeliveredEvent: per(cpu.cpuSec),
    cpuUsPerDeliveredEventNetOfIdle: per(cpu.cpuSec - (idleCpuMsPerSec / 1000) * cpu.windowSec),
  };
}

export interface BlockFigures extends Common {
  blocks: number;
  /** From the poll's answer (gateway) or the tick (floor) to each stream's receipt. */
  latencyMs: Percentiles;
  /** From the block's creation (gateway) or the tick (floor) to each stream's receipt. */
  lagMs: Percentiles;
  /** Blocks made that some stream had not received when the chain stopped. */
  undeliveredAtEnd: number;
  /** From the chain's stop until every stream had every block (null: not within the wait). */
  drainMs: number | null;
  /** Streams that missed a block, and receipts that were repeats or out of order. */
  streamsMissingBlocks: number;
  disorder: number;
  executionsPerBlock: number | null;
  blocksFound: number | null;
  polls: number | null;
  pollErrors: number | null;
  /** The gateway's own `live_delivery_seconds`: the share of its observations within 0.5 s. */
  gatewayDeliveryWithin500Ms: number | null;
  /**
   * The floor's loop over the streams for one tick (ms): res.write queues, the kernel writes follow
   * on the next tick, so this is not the time the writes took (its CPU figure is).
   */
  floorWriteMs: Percentiles | null;
}

interface BlockRun {
  subscribers: number;
  blockMs: number;
  limit: { count?: number; durationMs?: number };
  drainMs: number;
}

/** The gateway's block-source counters that a block run reads before and after. */
function blockCounters(text: string) {
  return {
    executions: metric(text, 'live_executions_total', { source: 'blocks' }),
    events: metric(text, 'live_events_total', { source: 'blocks' }),
    polls: metric(text, 'live_polls_total', { source: 'blocks', result: 'ok' }),
    errors: metric(text, 'live_polls_total', { source: 'blocks', result: 'error' }),
    within: metric(text, 'live_delivery_seconds_bucket', { le: '0.5' }),
    all: metric(text, 'live_delivery_seconds_count'),
  };
}

/**
 * One target under `blockAdded` load: the streams opened, the blocks made (the devnet advanced, or
 * the floor ticked with `frame`), every receipt stamped, then the figures.
 */
async function blockRun(
  bench: Bench,
  target: Target,
  run: BlockRun,
  frame: string,
): Promise<{ figures: BlockFigures; sample?: string }> {
  const reader: Reader = { heights: true, receipts: new Map() };
  const body = JSON.stringify({ query: BLOCK_QUERY });
  const { streams, common, metricsBefore } = await openPhase(
    bench,
    target,
    reader,
    run.subscribers,
    [body],
    'blocks',
  );
  const made = new Map<number, number>();
  const writing: number[] = [];
  const window = cpuWindow(target.pid);
  await drive(run.blockMs, run.limit, async (i) => {
    alive(target);
    if (target.kind === 'gateway') {
      const { advance, at } = await call<{ advance: { heights: number[] }; at: number }>(bench.devnet, {
        type: 'advance',
        blocks: 1,
      });
      for (const height of advance.heights) made.set(height, at);
    } else {
      const data = frame.replace(/"height":\d+/, `"height":${i + 1}`);
      const { at, writeMs } = await call<{ at: number; writeMs: number }>(target.child, {
        type: 'tick',
        writes: [{ frame: `event: next\ndata: ${data}\n\n` }],
      });
      made.set(i + 1, at);
      writing.push(writeMs);
    }
  });
  const stoppedAt = now();
  const heights = [...made.keys()];
  const everywhere = (h: number) => (reader.receipts.get(h)?.length ?? 0) >= streams.length;
  const undeliveredAtEnd = heights.filter((h) => !everywhere(h)).length;
  const drained = await until(() => {
    alive(target);
    return heights.every(everywhere);
  }, run.drainMs);
  const drainMs = drained ? Math.round(now() - stoppedAt) : null;
  const cpu = window();
  const metricsAfter = target.kind === 'gateway' ? await scrape(target.metricsUrl) : '';
  const peakRssMb = Math.round(status(target.pid, 'VmHWM') / 1024);
  const sample = sampledFrame(streams);
  closeAll(streams);

  const answered = new Map(made);
  if (target.kind === 'gateway') {
    const times = await call<{ found: (number | null)[] }>(bench.devnet, { type: 'times', heights });
    heights.forEach((h, i) => {
      const found = times.found[i];
      if (found) answered.set(h, found);
      else answered.delete(h);
    });
  }
  const latency: number[] = [];
  const lag: number[] = [];
  for (const [height, times] of reader.receipts) {
    const from = answered.get(height);
    const madeAt = made.get(height);
    for (const t of times) {
      if (from !== undefined) latency.push(t - from);
      if (madeAt !== undefined) lag.push(t - madeAt);
    }
  }
  const before = blockCounters(metricsBefore);
  const after = blockCounters(metricsAfter);
  const executions = delta(after.executions, before.executions);
  const found = delta(after.events, before.events);
  const within = delta(after.within, before.within);
  const all = delta(after.all, before.all);
  const delivered = lag.length;
  const figures: BlockFigures = {
    ...common,
    peakRssMb,
    ...cpu,
    delivered,
    expected: heights.length * streams.length,
    ...perEvent(cpu, common.idleCpuMsPerSec, delivered),
    blocks: heights.length,
    latencyMs: percentiles(latency),
    lagMs: percentiles(lag),
    undeliveredAtEnd,
    drainMs,
    streamsMissingBlocks: streams.filter((s) => s.frames < heights.length).length,
    disorder: streams.reduce((n, s) => n + s.disorder, 0),
    // No execution counted while blocks were delivered: a build that does not count them (n/a).
    executionsPerBlock: !executions || !found ? null : Number((executions / found).toFixed(2)),
    blocksFound: found,
    polls: delta(after.polls, before.polls),
    pollErrors: delta(after.errors, before.errors),
    gatewayDeliveryWithin500Ms: within === null || !all ? null : Number((within / all).toFixed(4)),
    floorWriteMs: writing.length > 0 ? percentiles(writing) : null,
  };
  bench.log(
    `  ${label(target)}: ${figures.delivered}/${figures.expected} delivered, ${figures.cpuUsPerDeliveredEvent} µs CPU per delivered event, ` +
      `latency p50 ${figures.latencyMs.p50} p99 ${figures.latencyMs.p99} max ${figures.latencyMs.max} ms, ` +
      `lag p99 ${figures.lagMs.p99} max ${figures.lagMs.max} ms, undelivered at the end ${undeliveredAtEnd}, ` +
      `drained in ${drainMs ?? 'never'} ms, executions per block ${figures.executionsPerBlock ?? 'n/a'}, ` +
      `load generator busy ${Math.round(cpu.loadGeneratorBusy * 100)} %`,
  );
  await sleep(1_000);
  return { figures, ...(sample ? { sample } : {}) };
}

/** A block frame the gateway wrote in this run (the floor writes frames of the same bytes). */
const sampledFrame = (streams: Stream[] | undefined) => streams?.find((s) => s.last)?.last;

export interface ValidatorFigures extends Common {
  steps: number;
  /** Validator events the gateway's polls found (`live_events_total{source="validators"}`). */
  eventsFound: number | null;
  /** Events × the groups each reached: the frames the first member of each group received, summed. */
  groupEvents: number;
  executions: number | null;
  executionsPerGroupEvent: number | null;
  /** Groups whose members did not all receive the same number of frames. */
  unevenGroups: number;
}

/** Per step, the frames each group's first member received in it (the floor replays them). */
type Replay = number[][];

function validatorBodies(groups: number): string[] {
  const validators = generate({ seed: 'bench', now: Date.now() }).validators;
  if (groups > validators.length) throw new Error(`--groups at most ${validators.length}`);
  return Array.from({ length: groups }, (_, g) => {
    const selection = VALIDATOR_SELECTIONS[g % VALIDATOR_SELECTIONS.length] as string;
    const name = `V${g % VALIDATOR_SELECTIONS.length}`;
    return JSON.stringify({
      query: `subscription ${name}($a: String!) { validatorUpdated(operatorAddress: $a) { ${selection} } }`,
      operationName: name,
      variables: { a: validators[g]?.operator_address },
    });
  });
}

/** Frames per group: each group's first member (the stream that keeps its frames) and all members. */
function groupFrames(streams: Stream[], bodies: string[]) {
  const first: number[] = new Array(bodies.length).fill(0);
  const min: number[] = new Array(bodies.length).fill(Number.POSITIVE_INFINITY);
  const max: number[] = new Array(bodies.length).fill(0);
  for (const s of streams) {
    const g = s.group;
    if (s.keep) first[g] = s.frames;
    min[g] = Math.min(min[g] as number, s.frames);
    max[g] = Math.max(max[g] as number, s.frames);
  }
  return { first, min, max };
}

/**
 * B for one target: the streams over the groups; the gateway sees BLOCKS_PER_STEP blocks per step
 * (and the validators they change), the floor replays what the gateway delivered step by step.
 */
async function validatorRun(
  bench: Bench,
  target: Target,
  run: BlockRun & { bodies: string[] },
  replay: Replay,
  frames: string[],
): Promise<{ figures: ValidatorFigures; replay: Replay; frames: string[] }> {
  const reader: Reader = { heights: false, receipts: new Map() };
  const { bodies } = run;
  const { streams, common, metricsBefore } = await openPhase(
    bench,
    target,
    reader,
    run.subscribers,
    bodies,
    'validators',
  );
  const window = cpuWindow(target.pid);
  const steps = run.limit.count ?? 20;
  const observed: Replay = [];
  let last = groupFrames(streams, bodies).first;
  const snapshot = () => {
    const next = groupFrames(streams, bodies).first;
    observed.push(next.map((n, g) => n - (last[g] as number)));
    last = next;
  };
  const expected: number[] = new Array(bodies.length).fill(0);
  await drive(run.blockMs, { count: steps }, async (i) => {
    alive(target);
    if (i > 0) snapshot();
    if (target.kind === 'gateway') {
      await call(bench.devnet, { type: 'advance', blocks: BLOCKS_PER_STEP });
      return;
    }
    const writes: { body: string; frame: string }[] = [];
    const step = replay[i] ?? bodies.map(() => 1);
    step.forEach((count, g) => {
      expected[g] = (expected[g] as number) + count;
      const data = frames[g] ?? SYNTHETIC_BLOCK;
      for (let k = 0; k < count; k++)
        writes.push({ body: bodies[g] as string, frame: `event: next\ndata: ${data}\n\n` });
    });
    await call(target.child, { type: 'tick', writes });
  });
  // The gateway's last events come on its next polls: wait until no frame came for a while.
  const total = () => streams.reduce((n, s) => n + s.frames, 0);
  const quietMs = Math.max(2_000, 3 * bench.options.pollMs);
  let seen = total();
  let since = now();
  await until(
    () => {
      alive(target);
      const frames = groupFrames(streams, bodies);
      if (target.kind === 'floor') return frames.min.every((n, g) => n >= (expected[g] as number));
      const t = total();
      if (t !== seen) [seen, since] = [t, now()];
      return now() - since >= quietMs && frames.min.every((n, g) => n === frames.max[g]);
    },
    run.drainMs,
    50,
  );
  snapshot();
  const cpu = window();
  const metricsAfter = target.kind === 'gateway' ? await scrape(target.metricsUrl) : '';
  const peakRssMb = Math.round(status(target.pid, 'VmHWM') / 1024);
  const sampled = streams.filter((s) => s.keep).map((s) => s.last ?? '');
  const perGroup = groupFrames(streams, bodies);
  closeAll(streams);
  const executions = delta(
    metric(metricsAfter, 'live_executions_total', { source: 'validators' }),
    metric(metricsBefore, 'live_executions_total', { source: 'validators' }),
  );
  const eventsFound = delta(
    metric(metricsAfter, 'live_events_total', { source: 'validators' }),
    metric(metricsBefore, 'live_events_total', { source: 'validators' }),
  );
  const groupEvents = perGroup.max.reduce((a, b) => a + b, 0);
  const delivered = total();
  const figures: ValidatorFigures = {
    ...common,
    peakRssMb,
    ...cpu,
    delivered,
    expected:
      target.kind === 'floor'
        ? expected.reduce((a, b) => a + b, 0) * (streams.length / bodies.length)
        : delivered,
    ...perEvent(cpu, common.idleCpuMsPerSec, delivered),
    steps,
    eventsFound: target.kind === 'gateway' ? eventsFound : null,
    groupEvents,
    executions: target.kind === 'gateway' && executions ? executions : null,
    executionsPerGroupEvent:
      target.kind === 'gateway' && executions && groupEvents > 0
        ? Number((executions / groupEvents).toFixed(2))
        : null,
    unevenGroups: perGroup.min.filter((n, g) => n !== perGroup.max[g]).length,
  };
  bench.log(
    `  ${label(target)}: ${delivered} frames delivered over ${groupEvents} group events` +
      `${target.kind === 'gateway' ? ` (${eventsFound ?? 'n/a'} validator events found, ${executions ?? 'n/a'} executions)` : ''}, ` +
      `${figures.cpuUsPerDeliveredEvent} µs CPU per delivered event, ${figures.unevenGroups} groups uneven, ` +
      `load generator busy ${Math.round(cpu.loadGeneratorBusy * 100)} %`,
  );
  await sleep(1_000);
  return { figures, replay: observed, frames: sampled };
}

export interface LiveScenarioResult {
  id: string;
  title: string;
  subscribers: number;
  events: number;
  eventEveryMs: number;
  pollMs: number;
  /** The gateway's figures over SSE (`--transports` with sse). */
  gateway?: BlockFigures | ValidatorFigures;
  /** The same over graphql-ws (`--transports` with ws). */
  gatewayWs?: BlockFigures | ValidatorFigures;
  floor?: BlockFigures | ValidatorFigures;
  /** Why a target has no figures (it exited during the run). */
  failed?: { gateway?: string; gatewayWs?: string; floor?: string };
  /** Gateway (SSE) / floor. */
  ratio: Ratios;
  /** Gateway over graphql-ws / over SSE. */
  wsOverSse?: Ratios;
}

interface Ratios {
  rssKbPerStream?: number;
  cpuUsPerDeliveredEvent?: number;
  latencyP99?: number;
}

type Figures = BlockFigures | ValidatorFigures;

export interface RedisFigures {
  subscribers: number;
  /** Search-service requests per poll interval, between both gateways. */
  searchRequestsPerPoll: number;
  /** Per block, its receipts over all streams (one per stream when none was lost or repeated). */
  receiptsPerBlock: number[];
  /** Receipts of a height at or below one the stream had: repeats. */
  repeats: number;
}

export interface LiveResult {
  startedAt: string;
  node: string;
  pinned: boolean;
  options: LiveOptions;
  /** How far apart the devnet's, the floor's and this process's clocks can be (ms): a round trip. */
  clockCheckMs: number;
  live: LiveScenarioResult[];
  redis?: RedisFigures;
}

const ratio = (a: number | undefined, b: number | undefined) =>
  a === undefined || b === undefined || b === 0 ? undefined : Number((a / b).toFixed(2));

/** The three headline figures of `a` over `b`'s. */
const ratios = (a: Figures | undefined, b: Figures | undefined): Ratios => ({
  rssKbPerStream: ratio(a?.rssKbPerStream, b?.rssKbPerStream),
  cpuUsPerDeliveredEvent: ratio(a?.cpuUsPerDeliveredEvent, b?.cpuUsPerDeliveredEvent),
  latencyP99:
    a && b && 'latencyMs' in a && 'latencyMs' in b ? ratio(a.latencyMs.p99, b.latencyMs.p99) : undefined,
});

/** The runs of a scenario in order: the gateway once per transport (SSE first), then the floor. */
function runsOf(options: LiveOptions): { kind: Target['kind']; transport: Transport }[] {
  const gateway = (['sse', 'ws'] as const).filter((t) => options.transports.includes(t));
  return options.targets.flatMap((kind): { kind: Target['kind']; transport: Transport }[] =>
    kind === 'gateway' ? gateway.map((transport) => ({ kind, transport })) : [{ kind, transport: 'sse' }],
  );
}

/** Runs one scenario's targets in turn (the gateway first: the floor writes the frames it sampled). */
async function scenario(
  bench: Bench,
  spec: Spec,
  run: (target: Target) => Promise<Figures>,
): Promise<LiveScenarioResult> {
  bench.log(
    `${spec.id} ${spec.title}: ${spec.subscribers} subscribers, ${spec.events} events, one every ${spec.eventEveryMs} ms`,
  );
  const result: LiveScenarioResult = { ...spec, ratio: {} };
  for (const { kind, transport } of runsOf(bench.options)) {
    const key = kind === 'gateway' && transport === 'ws' ? 'gatewayWs' : kind;
    const target =
      kind === 'gateway' ? await startGateway(bench, spec.subscribers, {}, transport) : await startFloor();
    try {
      result[key] = await run(target);
    } catch (error) {
      // A target that dies (a gateway out of heap) is a result: the run goes on with the next.
      const message = (error as Error).message;
      bench.log(`  ${label(target)} failed: ${message}`);
      result.failed = { ...result.failed, [key]: message };
    } finally {
      closeAll(target.streams ?? []);
      await stopAll([target.child]);
    }
  }
  result.ratio = ratios(result.gateway, result.floor);
  if (result.gatewayWs) result.wsOverSse = ratios(result.gatewayWs, result.gateway);
  return result;
}

type Spec = Omit<LiveScenarioResult, 'gateway' | 'floor' | 'ratio' | 'failed'>;

/** A block scenario (A, C, D): the floor writes frames of the bytes the gateway wrote in the same run. */
function blockScenario(bench: Bench, spec: Spec, run: BlockRun): Promise<LiveScenarioResult> {
  let frame = SYNTHETIC_BLOCK;
  let sampled = false;
  return scenario(bench, spec, async (target) => {
    const { figures, sample } = await blockRun(bench, target, run, frame);
    // The first gateway run's bytes (either transport writes the same payload).
    if (target.kind === 'gateway' && sample && !sampled) [frame, sampled] = [sample, true];
    return figures;
  });
}

/** B: the floor replays the group events the gateway delivered, with the frames it wrote. */
function validatorScenario(bench: Bench, spec: Spec, run: BlockRun & { bodies: string[] }) {
  let replay: Replay = [];
  let frames: string[] = [];
  return scenario(bench, spec, async (target) => {
    const done = await validatorRun(bench, target, run, replay, frames);
    // The floor replays the first gateway run's group events.
    if (target.kind === 'gateway' && replay.length === 0) [replay, frames] = [done.replay, done.frames];
    return done.figures;
  });
}

/** R: subscribers over two gateways on one Redis: one poller between them, every block once each. */
async function redisScenario(bench: Bench, subscribers: number): Promise<RedisFigures> {
  const redis = await startRedis();
  const env = { REDIS_URL: redis.url, REDIS_TIMEOUT_MS: '1000' };
  const gateways = await Promise.all([
    startGateway(bench, subscribers, env),
    startGateway(bench, subscribers, env),
  ]);
  try {
    const reader: Reader = { heights: true, receipts: new Map() };
    const body = JSON.stringify({ query: BLOCK_QUERY });
    const half = Math.ceil(subscribers / 2);
    const streams = [
      ...(await openMany(reader, gateways[0]?.url as string, half, [body])).streams,
      ...(await openMany(reader, gateways[1]?.url as string, subscribers - half, [body])).streams,
    ];
    await Promise.all(gateways.map((g) => firstPoll(g, 'blocks')));
    await sleep(2 * bench.options.pollMs);
    const intervals = 10;
    const before = (await call<{ counts: { scan: number } }>(bench.devnet, { type: 'counts' })).counts.scan;
    await sleep(intervals * bench.options.pollMs);
    const after = (await call<{ counts: { scan: number } }>(bench.devnet, { type: 'counts' })).counts.scan;
    const heights: number[] = [];
    for (let e = 0; e < 5; e++) {
      const { advance } = await call<{ advance: { heights: number[] } }>(bench.devnet, {
        type: 'advance',
        blocks: 1,
      });
      heights.push(...advance.heights);
      await until(
        () => heights.every((h) => (reader.receipts.get(h)?.length ?? 0) >= streams.length),
        30_000,
      );
    }
    await sleep(3 * bench.options.pollMs);
    const receiptsPerBlock = heights.map((h) => reader.receipts.get(h)?.length ?? 0);
    const repeats = streams.reduce((n, s) => n + s.disorder, 0);
    closeAll(streams);
    const figures = {
      subscribers: streams.length,
      searchRequestsPerPoll: Number(((after - before) / intervals).toFixed(2)),
      receiptsPerBlock,
      repeats,
    };
    bench.log(
      `R: ${streams.length} subscribers over two gateways on one Redis: ${figures.searchRequestsPerPoll} search requests ` +
        `per poll interval between them; receipts per block ${receiptsPerBlock.join(', ')}, repeats ${repeats}`,
    );
    return figures;
  } finally {
    await stopAll(gateways.map((g) => g.child));
    await redis.close();
  }
}

/** How far apart a child's clock and this process's can be: the round trip of a question. */
async function clockCheck(child: ChildProcess): Promise<number> {
  let best = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 5; i++) {
    const sent = now();
    const { now: theirs } = await call<{ now: number }>(child, { type: 'clock' });
    const back = now();
    if (theirs < sent - 1 || theirs > back + 1)
      throw new Error(`clocks differ: ${theirs} not within ${sent}–${back}`);
    best = Math.min(best, back - sent);
  }
  return best;
}

/**
 * Builds the gateway (`dist` only), moves this process to core 1, starts the live devnet there (live-devnet.ts),
 * runs the scenarios asked for, and stops every process it started.
 */
export async function runLive(
  options: LiveOptions,
  log: (line: string) => void = console.log,
): Promise<LiveResult> {
  // Another build (--target) is run as it is: only `dist` is built from the working tree.
  if (options.target === 'dist') prepare();
  else spawnSync('taskset', ['-p', '-c', '1', String(process.pid)]);
  const started = startProcess(1, ['test/bench/live-devnet.ts'], {}, true);
  const output = await started.ready;
  const urls = Object.fromEntries(
    [...output.matchAll(/(\w+_URL)=(\S+)/g)].map((m) => [m[1], m[2]]),
  ) as Record<string, string>;
  const bench: Bench = { devnet: started.child, urls, options, log };
  const result: LiveResult = {
    startedAt: new Date().toISOString(),
    node: process.version,
    pinned: readFileSync(`/proc/${process.pid}/status`, 'utf8').includes('Cpus_allowed_list:\t1\n'),
    options,
    clockCheckMs: Number((await clockCheck(started.child)).toFixed(2)),
    live: [],
  };
  const count = (fallback: number) => options.subscribers ?? fallback;
  const { pollMs } = options;
  try {
    for (const id of options.only) {
      const plain = BLOCK_SCENARIOS[id];
      if (plain) {
        const blocks = options.blocks ?? plain.blocks;
        const every = options.blockMs ?? 1_000;
        const spec = {
          id,
          title: plain.title,
          subscribers: count(plain.subscribers),
          events: blocks,
          eventEveryMs: every,
          pollMs,
        };
        result.live.push(await blockScenario(bench, spec, runOf(spec, { count: blocks }, 60_000)));
      } else if (id === 'B') {
        const steps = options.blocks ?? 20;
        const every = options.blockMs ?? 1_000;
        const title = `validatorUpdated over ${options.groups} groups, ${BLOCKS_PER_STEP} blocks per step`;
        const spec = { id, title, subscribers: count(10_000), events: steps, eventEveryMs: every, pollMs };
        const run = runOf(spec, { count: steps }, 60_000);
        result.live.push(
          await validatorScenario(bench, spec, { ...run, bodies: validatorBodies(options.groups) }),
        );
      } else if (id === 'D') {
        const every = options.blockMs ?? 300;
        const durationMs = options.durationSec * 1_000;
        const events = Math.ceil(durationMs / every);
        const spec = {
          id,
          title: `sustained, ${options.durationSec} s`,
          subscribers: count(10_000),
          events,
          eventEveryMs: every,
          pollMs,
        };
        result.live.push(await blockScenario(bench, spec, runOf(spec, { durationMs }, 120_000)));
      } else if (id === 'R') {
        result.redis = await redisScenario(bench, count(1_000));
      } else throw new Error(`no live scenario ${id}`);
    }
  } finally {
    await stopAll([started.child]);
  }
  return result;
}

const cell = (value: number | null | undefined, unit = '') =>
  value === null || value === undefined ? 'n/a' : `${value}${unit}`;

type AllFigures = BlockFigures & ValidatorFigures;

/** One scenario's rows: one per figure, each target's value and the headline figures' ratios. */
function scenarioRows(s: LiveScenarioResult, ws: boolean): string[] {
  const rows: string[] = [];
  const [g, f, w] = [s.gateway, s.floor, s.gatewayWs] as (AllFigures | undefined)[];
  const row = (name: string, pick: (x: AllFigures) => string, key?: keyof Ratios) => {
    const line = [s.id, name, g ? pick(g) : '–', f ? pick(f) : '–', key ? cell(s.ratio[key]) : ''];
    if (ws) line.push(w ? pick(w) : '–', key ? cell(s.wsOverSse?.[key]) : '');
    rows.push(line.join(' | '));
  };
  if (s.failed) {
    const line = [s.id, `${s.title}: FAILED`, s.failed.gateway ?? '', s.failed.floor ?? '', ''];
    rows.push([...line, ...(ws ? [s.failed.gatewayWs ?? '', ''] : [])].join(' | '));
  }
  row(`${s.title}: streams open (refused)`, (x) => `${x.streams} (${x.refused})`);
  row('RSS before / with streams (MB)', (x) => `${x.rssMbBefore} / ${x.rssMbWithStreams}`);
  row('RSS per open stream (KB)', (x) => `${x.rssKbPerStream}`, 'rssKbPerStream');
  row('CPU per delivered event (µs)', (x) => `${x.cpuUsPerDeliveredEvent}`, 'cpuUsPerDeliveredEvent');
  row('the same net of idle CPU (µs)', (x) => `${x.cpuUsPerDeliveredEventNetOfIdle}`);
  row('idle CPU with the streams open (ms/s)', (x) => `${x.idleCpuMsPerSec}`);
  row('delivered / expected', (x) => `${x.delivered} / ${x.expected}`);
  const any = g ?? w ?? f;
  if (any && 'latencyMs' in any && any.latencyMs) {
    row(
      'latency p50 / p99 / max (ms), poll answer or tick → receipt',
      (x) => `${x.latencyMs.p50} / ${x.latencyMs.p99} / ${x.latencyMs.max}`,
      'latencyP99',
    );
    row(
      'lag p50 / p99 / max (ms), block made or tick → receipt',
      (x) => `${x.lagMs.p50} / ${x.lagMs.p99} / ${x.lagMs.max}`,
    );
    row(
      'blocks undelivered when the chain stopped; drain (ms)',
      (x) => `${x.undeliveredAtEnd}; ${cell(x.drainMs)}`,
    );
    row(
      'streams missing a block; repeats or out of order',
      (x) => `${x.streamsMissingBlocks}; ${x.disorder}`,
    );
    row('executions per block; groups', (x) => `${cell(x.executionsPerBlock)}; ${cell(x.groups)}`);
    row('polls (errors)', (x) => `${cell(x.polls)} (${cell(x.pollErrors)})`);
    row("the gateway's live_delivery_seconds within 0.5 s", (x) => {
      const within = x.gatewayDeliveryWithin500Ms;
      return cell(within == null ? null : Math.round(within * 1000) / 10, ' %');
    });
  } else {
    row(
      'group events; executions; validator events found; groups',
      (x) => `${x.groupEvents}; ${cell(x.executions)}; ${cell(x.eventsFound)}; ${cell(x.groups)}`,
    );
    row(
      'executions per group event; groups uneven',
      (x) => `${cell(x.executionsPerGroupEvent)}; ${x.unevenGroups}`,
    );
  }
  row('load generator busy (event loop)', (x) => `${Math.round(x.loadGeneratorBusy * 100)} %`);
  return rows;
}

/**
 * The printed table: per scenario, one row per figure, the gateway (over SSE), the floor and their
 * ratio; with `--transports` naming ws, the gateway over graphql-ws and its ratio to SSE beside them.
 */
export function formatLiveTable(result: LiveResult): string {
  const ws = result.options.transports?.includes('ws') ?? false;
  const rows = result.live.flatMap((s) => scenarioRows(s, ws));
  const redis = result.redis
    ? `\nRedis (R): ${result.redis.subscribers} subscribers over two gateways, ${result.redis.searchRequestsPerPoll} search requests per poll interval, receipts per block ${result.redis.receiptsPerBlock.join(', ')}, repeats ${result.redis.repeats}`
    : '';
  return [
    `scenario | figure | gateway | floor | gateway / floor${ws ? ' | gateway (graphql-ws) | graphql-ws / SSE' : ''}`,
    `---|---|---|---|---${ws ? '|---|---' : ''}`,
    ...rows,
    '',
    `LIVE_POLL_MS=${result.options.pollMs}; ${result.pinned ? 'targets on core 0, devnet and load generator on core 1' : 'not pinned (no taskset)'}; ` +
      `clocks checked within ${result.clockCheckMs} ms; Node ${result.node}${redis}`,
  ].join('\n');
}
