import { createServer } from 'node:net';
import {
  cliOption,
  devnetCounts,
  load,
  prepare,
  type Scenario,
  startProcess,
  startTarget,
  stopAll,
} from './bench.js';

/**
 * `npm run bench -- --chain`: answers that follow the chain (issue 51) on a devnet that makes a
 * block every `--block-ms` (6000, the production chain's pace): the frontends' public latest-state
 * reads (the validator table and its statistics) at `--rate` requests per second for
 * `--duration` seconds against `dist`, and what reached the upstreams: the share of requests the
 * response cache answered (with no upstream read; a miss may read nothing either, from the
 * validator list's cache, so this is a floor), and the upstream reads per minute and per block
 * (the block poller's included: the head is what renews the answers). Out: chain.json.
 */

export interface ChainOptions {
  durationSec: number;
  blockMs: number;
  rate: number;
  connections: number;
  target: string;
}

export interface ChainResult {
  chain: ChainOptions;
  requests: number;
  errors: number;
  fromCache: number;
  /** fromCache / requests. */
  answeredWithoutUpstream: number;
  upstreamReads: Record<string, number>;
  upstreamReadsPerMinute: number;
  blocks: number;
  /** The Chain-Height of an answer before and after the load (0: none). */
  heads: [number, number];
  upstreamReadsPerBlock: number | null;
}

export const chainOptions = (): ChainOptions => ({
  durationSec: Number(cliOption('duration', '60')),
  blockMs: Number(cliOption('block-ms', '6000')),
  rate: Number(cliOption('rate', '200')),
  connections: Number(cliOption('connections', '16')),
  target: cliOption('target', 'dist'),
});

/** What a page of the explorer reads again and again: the same public latest state for everyone. */
const LATEST: Scenario = {
  id: 'Latest',
  title: 'validators and their statistics',
  query: `query Latest {
  validatorStatistics { activeValidators totalStakedAmount }
  validators(pageSize: 20) { nodes { moniker tokens } }
}`,
  variables: () => ({}),
} as Scenario;

const freePort = () =>
  new Promise<number>((resolvePort) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolvePort(port));
    });
  });

const counter = (text: string, name: string, labels: string) =>
  Number(new RegExp(`^${name}\\{${labels}\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0);

const sum = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);

export async function runChain(options: ChainOptions): Promise<ChainResult> {
  prepare();
  const devnet = startProcess(
    1,
    ['src/devnet/main.ts'],
    {
      DEVNET_SEED: 'bench',
      DEVNET_TOKEN: 'bench-token',
      SCAN_PORT: '0',
      EXPLORER_PORT: '0',
      STAKE_PORT: '0',
      DEVNET_BLOCK_MS: String(options.blockMs),
    },
    true,
  );
  const children = [devnet.child];
  try {
    const output = await devnet.ready;
    const urls = Object.fromEntries([...output.matchAll(/(\w+_URL)=(\S+)/g)].map((m) => [m[1], m[2]]));
    const metricsPort = await freePort();
    const gateway = await startTarget(options.target, urls as Record<string, string>, {
      METRICS_PORT: String(metricsPort),
    });
    children.push(gateway.child);
    const metrics = async () => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const head = async () =>
      Number(
        (
          await fetch(gateway.url, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ query: '{ validatorStatistics { activeValidators } }' }),
          })
        ).headers.get('chain-height') ?? 0,
      );
    await head();
    const before = { counts: await devnetCounts(devnet.child), text: await metrics(), head: await head() };
    const run = await load(gateway.url, LATEST, options.durationSec, options.connections, {
      rate: options.rate,
    });
    const after = { counts: await devnetCounts(devnet.child), text: await metrics(), head: await head() };
    const hits = (text: string) => counter(text, 'cache_requests_total', 'cache="responses",result="hit"');
    const upstreamReads = Object.fromEntries(
      Object.entries(after.counts).map(([service, n]) => [
        service,
        n - (before.counts[service as 'scan'] ?? 0),
      ]),
    );
    const reads = sum(upstreamReads);
    // The blocks the gateway's poller found meanwhile (its head: the answers' Chain-Height).
    const found = (text: string) => counter(text, 'live_events_total', 'source="blocks"');
    const blocks = found(after.text) - found(before.text);
    const requests = run.requests.total;
    const fromCache = hits(after.text) - hits(before.text);
    return {
      chain: options,
      requests,
      errors: run.errors + run.non2xx,
      fromCache,
      answeredWithoutUpstream: requests > 0 ? Math.round((fromCache / requests) * 1000) / 1000 : 0,
      upstreamReads,
      upstreamReadsPerMinute: Math.round((reads * 60) / options.durationSec),
      blocks,
      heads: [before.head, after.head],
      upstreamReadsPerBlock: blocks > 0 ? Math.round((reads / blocks) * 10) / 10 : null,
    };
  } finally {
    await stopAll(children);
  }
}

export function formatChainTable(result: ChainResult): string {
  const { chain } = result;
  return [
    `a block every ${chain.blockMs} ms, ${chain.rate} req/s for ${chain.durationSec} s against ${chain.target}`,
    `requests ${result.requests} (errors ${result.errors}), answered without an upstream read ${result.fromCache} (${(result.answeredWithoutUpstream * 100).toFixed(1)}%)`,
    `upstream reads ${JSON.stringify(result.upstreamReads)}: ${result.upstreamReadsPerMinute}/min, ${result.upstreamReadsPerBlock ?? '-'} per block over ${result.blocks} blocks (Chain-Height ${result.heads.join(' to ')})`,
  ].join('\n');
}
