/**
 * `npm run bench:compare -- dist ../other/dist baseline`: what a change costs, as CPU time per
 * request. Builds the project, starts the devnet and every target given (a compiled gateway
 * directory, or `baseline` for the hand-written BFF), all pinned to core 0 and all idle but one at
 * any time; then, per scenario, runs rounds of load against one target after the other, in an
 * order that alternates from round to round. It reports each target's median CPU µs per request
 * and, per round, its CPU per request relative to the first target's, as the median over rounds.
 *
 * Why this shape: on a shared VM the machine's speed drifts by ±30 % within minutes, so a figure
 * from one run says little. Comparing targets within each short round, and taking the median of
 * those ratios over many rounds, cancels most of the drift (a build against itself read 0.966 and
 * 0.994 over 12 rounds). To measure what a part of the gateway costs, build a variant without
 * it into a directory of the repository, where its packages resolve (`npx tsc -p
 * tsconfig.build.json --outDir dist-variant` after an edit; `dist-*` is ignored by git), then
 * `npm run bench:compare -- dist dist-variant`.
 *
 * Options: --only S4 (scenarios, default every scenario of `npm run bench`: S1 to S6), --rounds N (12), --duration S (3),
 * --connections N (16), --warmup S (2).
 */
import type { ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  ask,
  cliOption,
  cpuSeconds,
  load,
  prepare,
  scenarios,
  startBenchDevnet,
  startTarget,
  stopAll,
} from './bench.js';

export interface CompareOptions {
  targets: string[];
  only: string[];
  rounds: number;
  durationSec: number;
  connections: number;
  warmupSec: number;
}

export interface TargetComparison {
  target: string;
  /** Median over rounds of CPU µs per request. */
  cpuUsPerRequest: number;
  /** Median over rounds of req/s. */
  requestsPerSec: number;
  /** Median over rounds of this target's CPU per request divided by the first target's. */
  relativeCpu: number;
  errors: number;
}

export interface ScenarioComparison {
  id: string;
  targets: TargetComparison[];
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
};

export async function compareTargets(
  options: CompareOptions,
  log: (line: string) => void = console.log,
): Promise<ScenarioComparison[]> {
  prepare();
  const devnet = await startBenchDevnet();
  const children: ChildProcess[] = [devnet.child];
  try {
    const started: { child: ChildProcess; url: string }[] = [];
    for (const target of options.targets) {
      const running = await startTarget(target, devnet.urls);
      children.push(running.child);
      started.push(running);
    }
    const results: ScenarioComparison[] = [];
    const chosen = scenarios().filter((s) =>
      options.only.length > 0 ? options.only.includes(s.id) : !s.namedOnly,
    );
    for (const scenario of chosen) {
      // S6's upstreams answer in 10 ms, as in `npm run bench`; the others at once.
      await ask(devnet.child, { type: 'latency', ms: scenario.latencyMs ?? 0 });
      for (const { url } of started) await load(url, scenario, options.warmupSec, options.connections);
      const rounds = started.map(() => ({ cpu: [] as number[], rps: [] as number[], errors: 0 }));
      for (let round = 0; round < options.rounds; round++) {
        const order = started.map((_, i) => i);
        if (round % 2 === 1) order.reverse();
        for (const i of order) {
          const { child, url } = started[i] as (typeof started)[number];
          const before = cpuSeconds(child.pid);
          const r = await load(url, scenario, options.durationSec, options.connections);
          const figures = rounds[i] as (typeof rounds)[number];
          figures.cpu.push(
            r.requests.total > 0 ? ((cpuSeconds(child.pid) - before) * 1e6) / r.requests.total : 0,
          );
          figures.rps.push(r.requests.average);
          figures.errors += r.errors + r.non2xx;
        }
      }
      const first = rounds[0] as (typeof rounds)[number];
      const targets = rounds.map((figures, i) => ({
        target: options.targets[i] as string,
        cpuUsPerRequest: Math.round(median(figures.cpu)),
        requestsPerSec: Math.round(median(figures.rps)),
        relativeCpu: Number(
          median(
            figures.cpu.map((cpu, round) => (first.cpu[round] ? cpu / (first.cpu[round] as number) : 0)),
          ).toFixed(3),
        ),
        errors: figures.errors,
      }));
      results.push({ id: scenario.id, targets });
      for (const t of targets)
        log(
          `${scenario.id} ${t.target}: ${t.cpuUsPerRequest} µs CPU per request, ${t.requestsPerSec} req/s, ` +
            `CPU relative to ${options.targets[0]} ${t.relativeCpu}, errors ${t.errors}`,
        );
    }
    return results;
  } finally {
    await stopAll(children);
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  const args = process.argv.slice(2);
  const targets = args.filter((a, i) => !a.startsWith('--') && !args[i - 1]?.startsWith('--'));
  if (targets.length < 2) {
    console.error(
      'usage: npm run bench:compare -- TARGET TARGET... (a compiled gateway directory, or baseline)',
    );
    process.exit(2);
  }
  await compareTargets({
    targets,
    only: cliOption('only', '').split(',').filter(Boolean),
    rounds: Number(cliOption('rounds', '12')),
    durationSec: Number(cliOption('duration', '3')),
    connections: Number(cliOption('connections', '16')),
    warmupSec: Number(cliOption('warmup', '2')),
  });
  process.exit(0);
}
