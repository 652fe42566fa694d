/**
 * `npm run bench:stages`: where one request's CPU goes, stage by stage (body, lookup, parse and
 * validation, orchestration, context, execution, upstream, serialization, log, metrics…), for
 * scenario S1 (search suggestions) on the gateway and on the hand-written baseline
 * (test/bench/baseline.ts). Each target runs alone on core 0 as `npm run bench` runs it (the devnet
 * and this load generator on core 1), under `node --cpu-prof --cpu-prof-interval 100`: it is warmed
 * up, loaded by autocannon at 16 connections for --duration seconds, then stopped (SIGTERM) so that
 * V8 writes its profile. Only the samples taken during the measured window count.
 *
 * Each sample is charged to one stage by the frames of its stack and RULES: the deepest frame a
 * strong rule matches names it (a plugin's hook called from envelop's loop is the plugin's, a
 * loader's upstream call made from a resolver is `upstream`), else the deepest a weak rule matches
 * (Node's streams, events and queues with nobody's code above them: `runtime`), else `other`.
 * Natives and builtins (a socket's `writev`, JSON.parse, JSON.stringify) are their caller's, and so
 * is whatever V8 inlined into a function. A sample weighs the time until the next one; a stage's µs
 * per request is its samples' time over the requests completed in the window. `idle` is reported
 * and left out of the totals; `other` lists its heaviest frames, so that the rules can be refined.
 * The profiler slows the target (req/s read lower than in `npm run bench`), and some costs per
 * request grow as req/s falls (wake-ups, socket writes, the event loop's turns): `--rate` loads a
 * target at a fixed req/s, to compare the baseline with the gateway at the gateway's rate.
 *
 * Options: --scenario S2 (another scenario of bench.ts than S1), --duration S (10), --warmup S (3), --connections N (16), --rate R (requests per second,
 * default unlimited), --target DIR (the gateway's build, default dist; this tool never builds),
 * --only gateway|baseline, --out FILE (default test/bench/results/stages.json), --keep DIR (where
 * the profiles go, default a new temporary directory; they are kept), --analyse DIR (charge again
 * the profiles a previous run left in DIR, running nothing: to try new rules).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  cliOption,
  entryPoint,
  load,
  START_FLAGS,
  scenarios,
  startBenchDevnet,
  startProcess,
  stopAll,
  treeCpuSeconds,
} from './bench.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** The stages, in the order the table lists them. */
export const STAGES = [
  'body',
  'lookup',
  'parse+validate',
  'orchestration',
  'context',
  'pricing',
  'rate limit',
  'limits',
  'execution',
  'upstream',
  'serialization',
  'socket write',
  'log',
  'metrics',
  'trace',
  'runtime',
  'gc',
  'other',
  'idle',
] as const;
export type Stage = (typeof STAGES)[number];

/**
 * One rule: a frame matches when its script's URL contains `url` (or matches it; '' is an empty
 * URL: V8's natives and builtins, and code made by `new Function`), its function's name is `fn`
 * (or matches it; '' is an anonymous function) and, when given, its caller's name is `caller`.
 * A weak rule names a stage only when no frame above is matched by a strong one: Node's plumbing
 * (streams, events, a socket's writes) belongs to the code that set it going, when there is one.
 */
interface Rule {
  stage: Stage;
  url?: string | RegExp;
  fn?: string | RegExp;
  caller?: string;
  weak?: true;
}

const pkg = (name: string) => `/node_modules/${name}`;
/** A module of the gateway, in its build (dist/…, dist-x/…) or its sources (src/…, under tsx). */
const own = (path: string) => new RegExp(`/(?:dist|src)(?:-[\\w.-]+)?/${path.replaceAll('.', '\\.')}`);
const BASELINE = 'test/bench/baseline.ts';

/**
 * The rules. A sample's stage is that of the deepest frame of its stack matched by a strong rule,
 * else of the deepest matched by a weak one, else `other`; on each frame, the first rule that
 * matches counts, so a module's particular functions come before the module's own rule.
 */
export const RULES: Rule[] = [
  // V8's pseudo-frames: waiting for the event loop, the collector, native code outside JavaScript
  // (libuv, node:http's parser before it calls back).
  { stage: 'idle', fn: '(idle)' },
  { stage: 'gc', fn: '(garbage collector)' },
  { stage: 'runtime', fn: '(program)' },
  // The request read: node:http's parser and IncomingMessage, then the listener's closures, which
  // gather the body, JSON.parse it and check it (the fast path's; the baseline's).
  {
    stage: 'body',
    url: own('http/fast-path.'),
    fn: /^(|readable|pathOf|sentParams|isObject|wantsEventStream)$/,
  },
  { stage: 'body', url: BASELINE, fn: '' },
  { stage: 'body', url: 'node:_http_incoming' },
  {
    stage: 'socket write',
    url: 'node:_http_server',
    fn: /^(ServerResponse|writeHead|_finish|resOnFinish|emitCloseNT|onServerResponseClose|assignSocket|detachSocket)$/,
  },
  { stage: 'body', url: 'node:_http_server' },
  { stage: 'body', url: 'node:_http_common', weak: true },
  // Finding the prepared document of a query text: the document cache's onParse and its LRU.
  { stage: 'lookup', url: pkg('lru-cache/') },
  {
    stage: 'lookup',
    url: own('graphql/pipeline/'),
    fn: /^(onParse|get|preparedOperation|preparedRequest|of)$/,
  },
  // What is left of parse and validation for a prepared document (its validation hook), and the
  // real ones when a document is new.
  { stage: 'parse+validate', url: /\/node_modules\/graphql\/(language|validation)\// },
  {
    stage: 'parse+validate',
    url: own('graphql/pipeline/'),
    fn: /^(onValidate|inParallel|enter|leave)$/,
  },
  { stage: 'parse+validate', url: own('graphql/pipeline/'), fn: '', caller: 'onValidate' },
  { stage: 'context', url: own('graphql/yoga.'), fn: 'context' },
  { stage: 'context', url: own('schema/context.') },
  { stage: 'context', url: own('schema/loaders.'), fn: 'Loaders' },
  { stage: 'pricing', url: own('graphql/plugins/cost.') },
  { stage: 'rate limit', url: own('scale/rate-limit.') },
  { stage: 'rate limit', url: pkg('rate-limiter-flexible/') },
  { stage: 'limits', url: own('graphql/plugins/limits.') },
  { stage: 'limits', url: pkg('@escape.tech/') },
  // Calls to the upstreams: the gateway's client (resilience by cockatiel), undici and its wasm
  // parser; the baseline's `get`.
  { stage: 'upstream', url: pkg('undici/') },
  { stage: 'upstream', url: 'node:internal/deps/undici' },
  { stage: 'upstream', url: pkg('cockatiel/') },
  { stage: 'upstream', url: own('upstream/') },
  { stage: 'upstream', url: BASELINE, fn: 'get' },
  // Execution: graphql-jit's compiled plan (code of `new Function`, named after the fields), graphql
  // execution helpers, Pothos and its plugins' wrappers, valibot (Pothos' validation), DataLoader,
  // the schema's resolvers, the loaders, the prepared document's execute hook; the baseline's mapping.
  { stage: 'execution', url: pkg('graphql-jit/') },
  { stage: 'execution', url: '', fn: /Handler$|^(query|getVariables|getGraphQLResolveInfo)$|__context/ },
  { stage: 'execution', url: /\/node_modules\/graphql\/(execution|type|jsutils|utilities|error)\// },
  { stage: 'execution', url: pkg('@pothos/') },
  { stage: 'execution', url: pkg('valibot/') },
  { stage: 'execution', url: pkg('dataloader/') },
  { stage: 'execution', url: own('schema/') },
  { stage: 'execution', url: own('schema/loaders.') },
  { stage: 'execution', url: own('graphql/pipeline/') },
  { stage: 'execution', url: BASELINE, fn: /^S\d$/ },
  // The answer's JSON (JSON.stringify is a builtin: its time is its caller's).
  { stage: 'serialization', url: own('http/fast-path.'), fn: 'write' },
  { stage: 'serialization', url: pkg('graphql-yoga/'), fn: /^(processRegularResult|jsonStringifyResult.*)$/ },
  { stage: 'serialization', url: BASELINE, fn: 'send' },
  // The response: node:http's ServerResponse (headers, end, finish, close) and the socket's writes;
  // a write from undici is the upstream call's.
  { stage: 'socket write', url: 'node:_http_outgoing' },
  { stage: 'socket write', url: /^node:(internal\/stream_base_commons|net)$/, weak: true },
  { stage: 'log', url: pkg('pino') },
  { stage: 'log', url: pkg('@pinojs/') },
  { stage: 'log', url: pkg('sonic-boom/') },
  { stage: 'log', url: pkg('quick-format-unescaped/') },
  { stage: 'log', url: own('ops/logger.') },
  { stage: 'metrics', url: pkg('prom-client/') },
  { stage: 'metrics', url: own('ops/metrics.') },
  { stage: 'metrics', url: own('gateway.'), fn: 'observe' },
  { stage: 'trace', url: own('ops/request-trace.') },
  { stage: 'trace', url: own('ops/tracing.') },
  { stage: 'trace', url: own('graphql/plugins/telemetry.') },
  { stage: 'trace', url: pkg('@opentelemetry/') },
  // The pipeline around the stages: envelop's hook loops, Yoga and its plugins (@defer/@stream's
  // validation hook), @whatwg-node's promise helpers, the fast path's `answer` and `run`, the
  // gateway's other plugins (response cache, APQ, CSRF…) and HTTP helpers.
  { stage: 'orchestration', url: pkg('@envelop/') },
  { stage: 'orchestration', url: pkg('graphql-yoga/') },
  { stage: 'orchestration', url: pkg('@graphql-yoga/') },
  { stage: 'orchestration', url: pkg('@whatwg-node/') },
  { stage: 'orchestration', url: own('http/') },
  { stage: 'orchestration', url: own('graphql/') },
  { stage: 'orchestration', url: own('gateway.') },
  // prom-client's garbage-collection metrics, fed by a PerformanceObserver.
  { stage: 'metrics', url: /^node:internal\/perf\/(observe|performance_entry)$/, weak: true },
  // Node's machinery when no owner is above it: the microtask queue (its native runMicrotasks is
  // its caller's, processTicksAndRejections), nextTick, timers and immediates, events, streams,
  // buffers, async hooks. Natives without a rule are their caller's.
  {
    stage: 'runtime',
    url: /^node:(internal\/(process|timers|streams|per_context|async_hooks|buffer|util|validators|errors)|timers|events|buffer|async_hooks)\b/,
    weak: true,
  },
];

const matches = (pattern: string | RegExp | undefined, value: string, exact: boolean) =>
  pattern === undefined ||
  (typeof pattern === 'string'
    ? exact || pattern === ''
      ? value === pattern
      : value.includes(pattern)
    : pattern.test(value));

/** The first rule that matches a frame called by `caller` (null at the root), if any. */
export const ruleOf = (frame: CallFrame, caller: CallFrame | null): Rule | undefined =>
  RULES.find(
    (rule) =>
      matches(rule.fn, frame.functionName, true) &&
      matches(rule.url, frame.url, false) &&
      (rule.caller === undefined || caller?.functionName === rule.caller),
  );

// --- Profiles -----------------------------------------------------------------------------------

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber?: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

/** What `node --cpu-prof` writes (times in µs of the machine's monotonic clock). */
export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** A frame as the report names it: function, then the file within its package or the repository. */
export function frameName(frame: CallFrame): string {
  const file = frame.url
    .replace(/^file:\/\//, '')
    .replace(/^.*\/node_modules\//, '')
    .replace(`${ROOT}/`, '');
  return `${frame.functionName || '(anonymous)'} ${file ? `${file}:${frame.lineNumber + 1}` : '(native)'}`;
}

/** Per node of a profile: its stage, the frame that named it (null for `other`), and how. */
interface Charged {
  stage: Stage;
  by: CallFrame | null;
  weak: boolean;
}

const OTHER: Charged = { stage: 'other', by: null, weak: true };

/**
 * Every node's stage: its own frame's when a strong rule matches it; else its caller's when a strong
 * rule names that; else its own frame's when a weak rule matches it; else its caller's (a walk from
 * each leaf up, done once per node).
 */
function chargeNodes(profile: CpuProfile): Map<number, Charged> {
  const parent = new Map<number, ProfileNode>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node);
  const charged = new Map<number, Charged>();
  const chargeOf = (node: ProfileNode): Charged => {
    const known = charged.get(node.id);
    if (known) return known;
    const up = parent.get(node.id);
    const rule = ruleOf(node.callFrame, up?.callFrame ?? null);
    const above = up ? chargeOf(up) : OTHER;
    const result: Charged =
      rule && !rule.weak
        ? { stage: rule.stage, by: node.callFrame, weak: false }
        : !above.weak || !rule
          ? above
          : { stage: rule.stage, by: node.callFrame, weak: true };
    charged.set(node.id, result);
    return result;
  };
  // The profile lists parents before their children: the recursion stays shallow.
  for (const node of profile.nodes) chargeOf(node);
  return charged;
}

/** Time (µs) per key, heaviest first, the first `count`. */
const top = (times: Map<string, number>, count: number, per: number) =>
  [...times]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([frame, us]) => ({ frame, usPerRequest: round(us / per) }));

const round = (value: number) => Math.round(value * 10) / 10;
const add = (map: Map<string, number>, key: string, value: number) =>
  map.set(key, (map.get(key) ?? 0) + value);

export interface StageBreakdown {
  /** µs of profiled time per request, by stage (`idle` included, but not in `totalUs`). */
  usPerRequest: Record<Stage, number>;
  /** Every stage but idle. */
  totalUs: number;
  /** Per stage, the frames where its time was spent (self time of the sample's leaf). */
  selfFrames: Record<Stage, { frame: string; usPerRequest: number }[]>;
  /** Per stage, the frames whose rule named it (the deepest matching frame of each sample). */
  namedBy: Record<Stage, { frame: string; usPerRequest: number }[]>;
  samples: number;
}

/** Charges the samples of `profile` taken within [fromUs, toUs] to stages, per request. */
export function breakdown(profile: CpuProfile, window: { fromUs: number; toUs: number }, requests: number) {
  const charged = chargeNodes(profile);
  const leaf = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
  const time = new Map<Stage, number>();
  const self = new Map<Stage, Map<string, number>>(STAGES.map((s) => [s, new Map()]));
  const named = new Map<Stage, Map<string, number>>(STAGES.map((s) => [s, new Map()]));
  let at = profile.startTime;
  let samples = 0;
  profile.samples.forEach((id, i) => {
    at += profile.timeDeltas[i] ?? 0;
    // A sample stands for the time until the next one.
    const weight = profile.timeDeltas[i + 1] ?? 0;
    if (at < window.fromUs || at > window.toUs) return;
    const { stage, by } = charged.get(id) as Charged;
    samples++;
    time.set(stage, (time.get(stage) ?? 0) + weight);
    add(self.get(stage) as Map<string, number>, frameName(leaf.get(id) as CallFrame), weight);
    add(named.get(stage) as Map<string, number>, by ? frameName(by) : '(none)', weight);
  });
  const per = Math.max(requests, 1);
  const figures = (make: (stage: Stage) => unknown) =>
    Object.fromEntries(STAGES.map((stage) => [stage, make(stage)])) as never;
  const usPerRequest: Record<Stage, number> = figures((s) => round((time.get(s) ?? 0) / per));
  return {
    usPerRequest,
    totalUs: round(STAGES.filter((s) => s !== 'idle').reduce((sum, s) => sum + usPerRequest[s], 0)),
    selfFrames: figures((s) => top(self.get(s) as Map<string, number>, 15, per)),
    namedBy: figures((s) => top(named.get(s) as Map<string, number>, 15, per)),
    samples,
  } satisfies StageBreakdown;
}

// --- Runs ---------------------------------------------------------------------------------------

/** What a profiled run measured, written beside its profile so that `--analyse` can read it again. */
interface RunRecord {
  name: 'gateway' | 'baseline';
  /** The gateway's build directory, or `baseline`. */
  target: string;
  startedAt: string;
  options: RunOptions;
  /** The measured window, on the profile's clock (µs of CLOCK_MONOTONIC, as process.hrtime). */
  fromUs: number;
  toUs: number;
  requests: number;
  requestsPerSec: number;
  errors: number;
  /** The process's CPU time over the window (/proc), per request: what the stages should add up to. */
  procCpuUsPerRequest: number;
}

interface RunOptions {
  /** The scenario of bench.ts that loads the target (S1 unless --scenario says). */
  scenario: string;
  durationSec: number;
  warmupSec: number;
  connections: number;
  /** Requests per second over the measured window (autocannon's overallRate); none: as fast as it goes. */
  rate?: number;
}

const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);

const profilerFlags = (dir: string) => ['--cpu-prof', `--cpu-prof-dir=${dir}`, '--cpu-prof-interval', '100'];

/**
 * Exits on SIGTERM, so that V8 writes the profile: a process killed by the signal writes nothing.
 * The baseline has no handler of its own; the gateway drains and exits by itself.
 */
const EXIT_ON_SIGTERM = 'data:text/javascript,process.once("SIGTERM",()=>process.exit(0))';

/**
 * Starts a target on core 0 with the profiler on, its profile to go into `dir`: the gateway as
 * startTarget() starts it (npm start's flags, NODE_ENV=production, no rate limit), the baseline
 * under tsx. The profiler's flags go on the command line: Node 20 refuses them in NODE_OPTIONS.
 */
async function startProfiled(
  name: RunRecord['name'],
  target: string,
  urls: Record<string, string>,
  dir: string,
) {
  const started =
    name === 'gateway'
      ? startProcess(0, [...START_FLAGS, ...profilerFlags(dir), entryPoint(target)], {
          ...urls,
          PORT: '0',
          NODE_ENV: 'production',
          RATE_LIMIT_POINTS: '0',
          CURSOR_SECRET: 'bench-cursor-secret-0123456789abcdef',
          // /metrics on a free port of its own (production's 9464 may be taken).
          METRICS_PORT: '0',
          // Stopped at once after the measurement: its drain need not wait for a load balancer.
          SHUTDOWN_DELAY_MS: '0',
        })
      : startProcess(0, [...profilerFlags(dir), '--import', EXIT_ON_SIGTERM, 'test/bench/baseline.ts'], {
          ...urls,
          PORT: '0',
        });
  const output = await started.ready.catch((error) => {
    started.child.kill('SIGTERM');
    throw error;
  });
  return { child: started.child, url: /listening on (\S+)/.exec(output)?.[1] as string };
}

/** Warms a target up, measures its scenario on it over the window, stops it: the record of the run. */
async function profileRun(
  name: RunRecord['name'],
  target: string,
  urls: Record<string, string>,
  dir: string,
  options: RunOptions,
): Promise<RunRecord> {
  mkdirSync(dir, { recursive: true });
  const scenario = scenarios().find((s) => s.id === options.scenario);
  if (!scenario) throw new Error(`no scenario ${options.scenario}`);
  const started = await startProfiled(name, target, urls, dir);
  const startedAt = new Date().toISOString();
  try {
    await load(started.url, scenario, options.warmupSec, options.connections);
    const cpuBefore = treeCpuSeconds(started.child.pid);
    const fromUs = monotonicUs();
    // At a fixed rate (--rate) some costs per request grow as the load falls (socket writes,
    // wake-ups, the event loop's turns): to compare a target with another at the same req/s.
    const result = await load(started.url, scenario, options.durationSec, options.connections, {
      rate: options.rate,
    });
    const toUs = monotonicUs();
    const cpu = treeCpuSeconds(started.child.pid) - cpuBefore;
    const requests = result.requests.total;
    return {
      name,
      target: name === 'gateway' ? target : 'baseline',
      startedAt,
      options,
      fromUs,
      toUs,
      requests,
      requestsPerSec: Math.round(requests / ((toUs - fromUs) / 1e6)),
      errors: result.errors + result.non2xx,
      procCpuUsPerRequest: round((cpu * 1e6) / Math.max(requests, 1)),
    };
  } finally {
    await stopAll([started.child]);
  }
}

/** The one profile a run left in `dir`, and its record. */
function readRun(dir: string): { record: RunRecord; profile: CpuProfile } {
  // CPU.<date>.<time>.<pid>.<thread>.<n>.cpuprofile: the main thread's is thread 0 (tsx's loader
  // runs in a thread of its own, which writes a profile too).
  const files = readdirSync(dir).filter((f) => /\.\d+\.0\.\d+\.cpuprofile$/.test(f));
  if (files.length !== 1)
    throw new Error(`expected one main-thread .cpuprofile in ${dir}, found ${files.length}`);
  const record = JSON.parse(readFileSync(join(dir, 'run.json'), 'utf8')) as RunRecord;
  const profile = JSON.parse(readFileSync(join(dir, files[0] as string), 'utf8')) as CpuProfile;
  if (record.fromUs < profile.startTime || record.toUs > profile.endTime) {
    throw new Error(`${dir}: the measured window is not within the profile (not the same clock?)`);
  }
  return { record, profile };
}

export interface TargetStages extends Omit<RunRecord, 'fromUs' | 'toUs'> {
  profileDir: string;
  stages: StageBreakdown;
}

const analyse = (dir: string): TargetStages => {
  const { record, profile } = readRun(dir);
  const { fromUs, toUs, ...rest } = record;
  return { ...rest, profileDir: dir, stages: breakdown(profile, { fromUs, toUs }, record.requests) };
};

// --- Report -------------------------------------------------------------------------------------

export interface StagesResult {
  node: string;
  scenario: string;
  profilerIntervalUs: 100;
  rules: { stage: Stage; url?: string; fn?: string; caller?: string; weak?: true }[];
  targets: TargetStages[];
}

/**
 * The table: µs per request by stage for the gateway and the baseline, and their difference; then
 * the totals (without idle), the CPU /proc counted over the same window, and the load.
 */
export function formatStages(result: StagesResult): string {
  const gateway = result.targets.find((t) => t.name === 'gateway');
  const baseline = result.targets.find((t) => t.name === 'baseline');
  const line = (label: string, g: string, b: string, d = '') =>
    `${label.padEnd(16)} ${g.padStart(10)} ${b.padStart(10)} ${d.padStart(10)}`;
  const pick = (f: (t: TargetStages) => string) =>
    [gateway ? f(gateway) : '-', baseline ? f(baseline) : '-'] as const;
  const difference = (f: (t: TargetStages) => number) =>
    gateway && baseline ? (f(gateway) - f(baseline)).toFixed(1) : '';
  const row = (label: string, f: (t: TargetStages) => number) =>
    line(label, ...pick((t) => f(t).toFixed(1)), difference(f));
  return [
    line('µs per request', 'gateway', 'baseline', 'difference'),
    ...STAGES.filter((s) => s !== 'idle').map((stage) => row(stage, (t) => t.stages.usPerRequest[stage])),
    row('total (no idle)', (t) => t.stages.totalUs),
    row('idle', (t) => t.stages.usPerRequest.idle),
    row('/proc CPU', (t) => t.procCpuUsPerRequest),
    line(
      'other / total',
      ...pick((t) => `${((100 * t.stages.usPerRequest.other) / t.stages.totalUs).toFixed(1)} %`),
    ),
    line('requests/s', ...pick((t) => String(t.requestsPerSec))),
    line('requests', ...pick((t) => String(t.requests))),
    line('errors', ...pick((t) => String(t.errors))),
    line('load', ...pick(({ options: o }) => `${o.connections} conn${o.rate ? ` ${o.rate}/s` : ''}`)),
  ].join('\n');
}

/** The heaviest frames of some stages of one target, by self time. */
export function formatFrames(target: TargetStages, stages: Stage[], count = 15): string {
  return stages
    .map((stage) => {
      const frames = target.stages.selfFrames[stage].slice(0, count);
      const named = target.stages.namedBy[stage].slice(0, 8);
      return [
        `${target.name}, ${stage} (${target.stages.usPerRequest[stage]} µs/request): self time by frame`,
        ...frames.map((f) => `  ${f.usPerRequest.toFixed(1).padStart(7)}  ${f.frame}`),
        ...(stage === 'other'
          ? []
          : [
              '  charged through:',
              ...named.map((f) => `  ${f.usPerRequest.toFixed(1).padStart(7)}  ${f.frame}`),
            ]),
      ].join('\n');
    })
    .join('\n\n');
}

const describeRule = (rule: Rule) => ({
  stage: rule.stage,
  ...(rule.url !== undefined ? { url: String(rule.url) } : {}),
  ...(rule.fn !== undefined ? { fn: String(rule.fn) } : {}),
  ...(rule.caller !== undefined ? { caller: rule.caller } : {}),
  ...(rule.weak ? { weak: rule.weak } : {}),
});

// --- Command line -------------------------------------------------------------------------------

/** Profiles each target named, one after the other, on one devnet; their profiles go into `root`. */
async function runTargets(names: RunRecord['name'][], target: string, root: string, options: RunOptions) {
  if (!existsSync(resolve(ROOT, target))) throw new Error(`no build at ${target}: run npm run build`);
  // This process (autocannon) on core 1 beside the devnet, as `npm run bench` has it.
  spawnSync('taskset', ['-p', '-c', '1', String(process.pid)]);
  const devnet = await startBenchDevnet();
  try {
    for (const name of names) {
      const dir = join(root, name);
      const record = await profileRun(name, target, devnet.urls, dir, options);
      writeFileSync(join(dir, 'run.json'), `${JSON.stringify(record)}\n`);
      console.log(`${name}: ${record.requests} requests, ${record.requestsPerSec} req/s, profile in ${dir}`);
    }
  } finally {
    await stopAll([devnet.child]);
  }
}

async function main(): Promise<void> {
  const options: RunOptions = {
    scenario: cliOption('scenario', 'S1'),
    durationSec: Number(cliOption('duration', '10')),
    warmupSec: Number(cliOption('warmup', '3')),
    connections: Number(cliOption('connections', '16')),
    ...(process.argv.includes('--rate') ? { rate: Number(cliOption('rate', '0')) } : {}),
  };
  const only = cliOption('only', '');
  const names = (['gateway', 'baseline'] as const).filter((n) => !only || n === only);
  const analysed = cliOption('analyse', '');
  const root = analysed || cliOption('keep', '') || mkdtempSync(join(tmpdir(), 'stages-'));
  if (!analysed) await runTargets([...names], cliOption('target', 'dist'), root, options);
  const targets = names
    .filter((n) => existsSync(join(root, n, 'run.json')))
    .map((n) => analyse(join(root, n)));
  const result: StagesResult = {
    node: process.version,
    // An analysed run's own scenario (runs older than --scenario measured S1).
    scenario: targets[0]?.options.scenario ?? options.scenario,
    profilerIntervalUs: 100,
    rules: RULES.map(describeRule),
    targets,
  };
  const out = resolve(ROOT, cliOption('out', 'test/bench/results/stages.json'));
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
  console.log(`\n${formatStages(result)}\n`);
  for (const t of targets) {
    const stages: Stage[] =
      t.name === 'gateway'
        ? ['other', 'runtime', 'orchestration', 'execution', 'upstream', 'socket write']
        : ['other', 'upstream', 'socket write'];
    console.log(`${formatFrames(t, stages)}\n`);
  }
  console.log(`figures written to ${out}`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  await main();
  process.exit(0);
}
