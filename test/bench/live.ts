import type { ChildProcess } from 'node:child_process';
import { type ClientRequest, request } from 'node:http';
import { startRedis } from '../support/redis.js';
import { advanceDevnet, cpuSeconds, devnetCounts, rssMb, withBenchDevnet } from './bench.js';

/**
 * `npm run bench -- --live`: live updates under load. The production gateway (core 0) polls the
 * benchmark's devnet (core 1, with this load generator) every LIVE_POLL_MS for 1, 40 and 10,000
 * concurrent `blockAdded` subscribers, each on a connection of its own. It reports the search
 * service's requests per poll interval at each count (the same whatever the count), and at
 * 10,000: how long each event took to reach every subscriber (from the first subscriber's receipt,
 * and the gateway's own delay from the poll's answer to each stream), the gateway's RSS with the
 * streams open, and its CPU per delivered event. Then 1,000 subscribers over two instances on one
 * Redis: the polls of both, and every event received once by each subscriber.
 */

const POLL_MS = 1_000;
const EVENTS = 5;
const QUERY = 'subscription Bench { blockAdded { height hash proposer } }';

export interface LiveResult {
  startedAt: string;
  node: string;
  pollMs: number;
  /** Search-service requests per poll interval, by number of subscribers. */
  pollsPerInterval: Record<string, number>;
  subscribers: number;
  /** Per event, ms from the first subscriber's receipt to the last's (p50, p99, max over subscribers). */
  spreadMs: { p50: number; p99: number; max: number }[];
  /** The gateway's histogram of poll answer → stream: the share of deliveries within 0.5 s. */
  deliveredWithin500Ms: number;
  rssMbWithStreams: number;
  rssMbBefore: number;
  cpuUsPerDeliveredEvent: number;
  redis: { subscribers: number; pollsPerInterval: number; eventsEachReceived: number[] };
}

interface Subscriber {
  /** Receipt time of each height. */
  received: Map<number, number>;
  /** How many times each height came. */
  times: Map<number, number>;
  req: ClientRequest;
}

/** Opens one SSE subscription on a connection of its own; resolves once its headers came. */
function open(url: string): Promise<Subscriber> {
  return new Promise((resolve, reject) => {
    const received = new Map<number, number>();
    const times = new Map<number, number>();
    const req = request(url, {
      method: 'POST',
      agent: false,
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    });
    req.on('response', (res) => {
      if (res.statusCode !== 200) reject(new Error(`subscription answered ${res.statusCode}`));
      let buffer = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        let end = buffer.indexOf('\n\n');
        while (end !== -1) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (data && block.startsWith('event: next')) {
            const height = JSON.parse(data).data.blockAdded.height as number;
            received.set(height, performance.now());
            times.set(height, (times.get(height) ?? 0) + 1);
          }
          end = buffer.indexOf('\n\n');
        }
      });
      resolve({ received, times, req });
    });
    req.on('error', reject);
    req.end(JSON.stringify({ query: QUERY }));
  });
}

async function openMany(url: string, count: number): Promise<Subscriber[]> {
  const subscribers: Subscriber[] = [];
  // In batches, so that the gateway's accept queue is never the bottleneck being measured.
  for (let i = 0; i < count; i += 500) {
    const batch = Array.from({ length: Math.min(500, count - i) }, () => open(url));
    subscribers.push(...(await Promise.all(batch)));
  }
  return subscribers;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Search-service requests per poll interval over `intervals` intervals. */
async function pollsPerInterval(devnet: ChildProcess, intervals: number): Promise<number> {
  const before = (await devnetCounts(devnet)).scan;
  await sleep(intervals * POLL_MS);
  return Number((((await devnetCounts(devnet)).scan - before) / intervals).toFixed(2));
}

/** Waits until every subscriber received `height` (or 30 s passed). */
async function receivedBy(subscribers: Subscriber[], height: number): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline && subscribers.some((s) => !s.received.has(height))) await sleep(20);
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;

/** The share of `live_delivery_seconds` observations within 0.5 s, from the gateway's /metrics. */
async function withinHalfSecond(url: string): Promise<number> {
  const text = await (await fetch(new URL('/metrics', url))).text();
  const bucket = (le: string) =>
    Number(new RegExp(`^live_delivery_seconds_bucket\\{le="${le}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
  const all = bucket('\\+Inf');
  return all === 0 ? 0 : Number((bucket('0.5') / all).toFixed(4));
}

function close(subscribers: Subscriber[]): void {
  for (const s of subscribers) s.req.destroy();
}

const gatewayEnv = {
  LIVE_POLL_MS: String(POLL_MS),
  MAX_SUBSCRIPTIONS: '20000',
  MAX_SUBSCRIPTIONS_PER_CLIENT: '20000',
};

export async function runLive(
  count: number,
  log: (line: string) => void = console.log,
  target = 'dist',
): Promise<LiveResult> {
  return withBenchDevnet(async (devnet, start) => {
    const gateway = await start(target, devnet.urls, gatewayEnv);
    const pid = gateway.child.pid;
    const pollsAt: Record<string, number> = {};
    for (const n of [1, 40]) {
      const subs = await openMany(gateway.url, n);
      await sleep(2 * POLL_MS);
      pollsAt[n] = await pollsPerInterval(devnet.child, 5);
      log(`${n} subscribers: ${pollsAt[n]} search requests per poll interval`);
      close(subs);
    }
    const rssMbBefore = rssMb(pid);
    const subs = await openMany(gateway.url, count);
    await sleep(2 * POLL_MS);
    pollsAt[count] = await pollsPerInterval(devnet.child, 5);
    const rssMbWithStreams = rssMb(pid);
    log(
      `${count} subscribers: ${pollsAt[count]} search requests per poll interval; RSS ${rssMbWithStreams} MB (${rssMbBefore} MB before)`,
    );
    const cpuBefore = cpuSeconds(pid);
    const spreadMs: LiveResult['spreadMs'] = [];
    for (let e = 0; e < EVENTS; e++) {
      const { heights } = await advanceDevnet(devnet.child, 1);
      const height = heights[0] as number;
      await receivedBy(subs, height);
      const times = subs.map((s) => s.received.get(height) ?? Number.POSITIVE_INFINITY).sort((a, b) => a - b);
      const first = times[0] as number;
      const spread = times.map((t) => t - first);
      spreadMs.push({
        p50: Math.round(percentile(spread, 50)),
        p99: Math.round(percentile(spread, 99)),
        max: Math.round(spread.at(-1) as number),
      });
      log(`event ${e + 1}: reached all ${count} within ${JSON.stringify(spreadMs.at(-1))} ms of the first`);
    }
    const delivered = subs.reduce((n, s) => n + s.received.size, 0);
    const cpuUsPerDeliveredEvent = Number((((cpuSeconds(pid) - cpuBefore) * 1e6) / delivered).toFixed(1));
    const deliveredWithin500Ms = await withinHalfSecond(gateway.url);
    log(
      `CPU ${cpuUsPerDeliveredEvent} µs per delivered event; ${deliveredWithin500Ms * 100} % within 0.5 s of the poll's answer`,
    );
    close(subs);
    const redis = await runRedis(devnet.child, devnet.urls, start, log);
    return {
      startedAt: new Date().toISOString(),
      node: process.version,
      pollMs: POLL_MS,
      pollsPerInterval: pollsAt,
      subscribers: count,
      spreadMs,
      deliveredWithin500Ms,
      rssMbWithStreams,
      rssMbBefore,
      cpuUsPerDeliveredEvent,
      redis,
    };
  });
}

/** 1,000 subscribers over two instances on one Redis: one poller between them, every event once each. */
async function runRedis(
  devnet: ChildProcess,
  urls: Record<string, string>,
  start: Parameters<Parameters<typeof withBenchDevnet>[0]>[1],
  log: (line: string) => void,
): Promise<LiveResult['redis']> {
  const redis = await startRedis();
  try {
    const env = { ...gatewayEnv, REDIS_URL: redis.url, REDIS_TIMEOUT_MS: '1000' };
    const [a, b] = await Promise.all([start('dist', urls, env, 0), start('dist', urls, env, 0)]);
    const subs = [...(await openMany(a.url, 500)), ...(await openMany(b.url, 500))];
    await sleep(2 * POLL_MS);
    const polls = await pollsPerInterval(devnet, 5);
    const heights: number[] = [];
    for (let e = 0; e < EVENTS; e++) {
      const [height] = (await advanceDevnet(devnet, 1)).heights as [number];
      heights.push(height);
      await receivedBy(subs, height);
    }
    // Per event, the subscribers that received it exactly once: all of them when nothing was lost
    // or sent twice.
    const eventsEachReceived = heights.map((h) => subs.filter((s) => s.times.get(h) === 1).length);
    log(
      `Redis, 2 × 500 subscribers: ${polls} search requests per poll interval; each event reached ${eventsEachReceived.join(', ')}`,
    );
    close(subs);
    return { subscribers: subs.length, pollsPerInterval: polls, eventsEachReceived };
  } finally {
    await redis.close();
  }
}
