/**
 * `WORKERS` > 1: that many worker processes share the port through node:cluster. The primary
 * serves nothing itself: it starts the embedded devnet once (devnet mode), forks the workers,
 * replaces one that dies, drains them all on SIGTERM or SIGINT, and answers what only it knows
 * over IPC: the devnet a worker runs on, and the metrics of the whole gateway (prom-client's
 * AggregatorRegistry collects every worker's registry). Each worker runs main.ts as the single
 * process does.
 */
import cluster from 'node:cluster';
import { LRUCache } from 'lru-cache';
import { AggregatorRegistry, Counter, Registry } from 'prom-client';
import type { UpstreamUrls } from '../config.js';

/** The embedded devnet as the primary started it: what a worker needs to run on it. */
export interface DevnetHandoff {
  urls: UpstreamUrls;
  token: string;
  /** GraphiQL's tab variables (devnet/examples.ts). */
  exampleVariables: Record<string, unknown>;
}

const ASK = 'chain-gateway:ask';
const REPLY = 'chain-gateway:reply';
const DRAIN = 'chain-gateway:drain';
type Question = 'devnet' | 'metrics';
interface Ask {
  type: typeof ASK;
  id: number;
  question: Question;
}
interface Reply {
  type: typeof REPLY;
  id: number;
  value?: unknown;
  error?: string;
}
interface Drain {
  type: typeof DRAIN;
  signal: string;
}

export interface PrimaryOptions {
  workers: number;
  /** null: real upstreams. */
  devnet: DevnetHandoff | null;
  /** A worker's own drain deadline; the primary kills what is left a little after it. */
  drainMs: number;
  /** Once, when the first workers all listen. */
  listening(port: number): void;
  /** After the last worker has exited, before the primary exits. */
  close(): Promise<void>;
}

/** How long one collection of every worker's metrics answers every scrape that asks. */
const METRICS_REUSE_MS = 1_000;

/**
 * The whole gateway's metrics as the primary serves them. A collection asks every worker for its
 * registry, so scrapes share it: those that arrive while one is under way wait for it, and it
 * answers for a second after it is made. However many scrapes arrive, the workers are asked at most
 * once a second.
 */
function clusterMetrics(): LRUCache<'text', string> {
  const aggregator = new AggregatorRegistry();
  // The primary's own figures, served after the workers'.
  const own = new Registry();
  const collections = new Counter({
    name: 'cluster_metrics_collections_total',
    help: "Times the primary collected every worker's metrics for /metrics (at most one at a time, reused for a second).",
    registers: [own],
  });
  return new LRUCache<'text', string>({
    max: 1,
    ttl: METRICS_REUSE_MS,
    fetchMethod: async () => {
      collections.inc();
      return `${await aggregator.clusterMetrics()}${await own.metrics()}`;
    },
  });
}

/**
 * The primary. Exits 0 once every worker has drained after SIGTERM or SIGINT; 1 when a worker
 * could not finish its drain, or when one exits before it ever listened (a port in use, say: the
 * gateway cannot start, and replacing it would only loop).
 */
export function runPrimary(options: PrimaryOptions): void {
  const metrics = clusterMetrics();
  const answer = (question: Question): Promise<unknown> =>
    question === 'devnet' ? Promise.resolve(options.devnet) : metrics.forceFetch('text');
  cluster.on('message', (worker, message: Ask | undefined) => {
    if (message?.type !== ASK) return;
    answer(message.question)
      .then(
        (value) => ({ value }),
        (error: Error) => ({ error: error.message }),
      )
      .then((reply) => {
        if (worker.isConnected()) worker.send({ type: REPLY, id: message.id, ...reply } satisfies Reply);
      });
  });

  const alive = new Set<number>();
  const listened = new Set<number>();
  let started = false;
  let stopping = false;
  let failed = false;
  const fork = () => alive.add(cluster.fork().id);
  const name = (worker: { id: number; process: { pid?: number } }) =>
    `worker ${worker.id} (pid ${worker.process.pid})`;

  const finish = async () => {
    await options.close();
    process.exit(failed ? 1 : 0);
  };
  const stop = (reason: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`${reason}: draining ${alive.size} workers`);
    // A listening worker drains as the single process does on SIGTERM (main.ts). Asked over IPC,
    // not by a signal: a worker may get the same signal from its process group (a terminal's
    // Ctrl-C, systemd), and a second one would kill it as it does the single process.
    for (const worker of Object.values(cluster.workers ?? {})) {
      if (!worker?.isConnected()) continue;
      if (listened.has(worker.id)) worker.send({ type: DRAIN, signal: reason } satisfies Drain);
      else worker.process.kill('SIGTERM');
    }
    setTimeout(() => {
      console.error('workers still running after the drain deadline: killing them');
      for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGKILL');
      process.exit(1);
    }, options.drainMs + 5_000).unref();
    if (alive.size === 0) void finish();
  };

  cluster.on('listening', (worker, address) => {
    console.log(`${name(worker)} listening`);
    listened.add(worker.id);
    if (!started && listened.size === options.workers) {
      started = true;
      options.listening(address.port);
    }
  });
  cluster.on('exit', (worker, code, signal) => {
    alive.delete(worker.id);
    const how = signal ? `signal ${signal}` : `code ${code}`;
    if (stopping) {
      // One killed before it listened had nothing to drain.
      if (code !== 0 && listened.has(worker.id)) failed = true;
      console.log(`${name(worker)} exited (${how})`);
      if (alive.size === 0) void finish();
    } else if (!listened.has(worker.id)) {
      console.error(`${name(worker)} exited (${how}) before listening: stopping the gateway`);
      failed = true;
      stop('a worker failed to start');
    } else {
      console.error(`${name(worker)} exited unexpectedly (${how}): starting a replacement`);
      fork();
    }
  });
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
  for (let i = 0; i < options.workers; i++) fork();
}

export interface WorkerLink {
  /** cluster.worker.id: 1, 2, … in the order the primary forked them. */
  id: number;
  /** The primary's devnet, or null on real upstreams. */
  devnet: DevnetHandoff | null;
  /** The whole gateway's metrics (every worker's, aggregated by the primary), as Prometheus text. */
  metrics(): Promise<string>;
  /** The registry the primary collects from this worker. */
  share(registry: Registry): void;
  /** Calls `drain` (at most once) when the primary asks this worker to drain, with the signal it got. */
  onDrain(drain: (signal: string) => void): void;
}

/** In a worker: opens the IPC link to the primary and learns the devnet from it. */
export async function joinPrimary(): Promise<WorkerLink> {
  const worker = cluster.worker;
  if (!worker) throw new Error('joinPrimary() outside a cluster worker');
  // Answers the primary's metric collection from now on (with no registry until share()): a
  // worker that never answered would hold every scrape for prom-client's 5 s timeout.
  new AggregatorRegistry();
  const pending = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>();
  let next = 0;
  let drainAsked: string | null = null;
  let drain: ((signal: string) => void) | null = null;
  process.on('message', (message: Reply | Drain | undefined) => {
    if (message?.type === DRAIN) {
      drainAsked ??= message.signal;
      drain?.(drainAsked);
      drain = null;
      return;
    }
    if (message?.type !== REPLY) return;
    const waiting = pending.get(message.id);
    pending.delete(message.id);
    if (message.error !== undefined) waiting?.reject(new Error(message.error));
    else waiting?.resolve(message.value);
  });
  const ask = (question: Question) =>
    new Promise<unknown>((resolve, reject) => {
      const id = next++;
      pending.set(id, { resolve, reject });
      worker.send({ type: ASK, id, question } satisfies Ask, undefined, (error) => {
        if (!error) return;
        pending.delete(id);
        reject(error);
      });
    });
  AggregatorRegistry.setRegistries([]);
  return {
    id: worker.id,
    devnet: (await ask('devnet')) as DevnetHandoff | null,
    metrics: () => ask('metrics') as Promise<string>,
    share: (registry) => AggregatorRegistry.setRegistries(registry),
    onDrain: (callback) => {
      if (drainAsked) callback(drainAsked);
      else drain = callback;
    },
  };
}
