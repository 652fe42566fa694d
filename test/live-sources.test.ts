import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { type Devnet, startDevnet } from '../src/devnet/index.js';
import { failedSource } from '../src/live/sources.js';
import { createUpstreams, type Upstreams } from '../src/upstream/index.js';
import { type FaultUpstream, startFaultUpstream } from './support/fault-upstream.js';

/**
 * What a poll of a live source delivers, over real HTTP, when the upstream behaves otherwise than
 * the devnet: here an explorer that lists failed transactions oldest first instead of newest first.
 */

let devnet: Devnet;
let explorer: FaultUpstream;
let upstreams: Upstreams;

beforeAll(async () => {
  devnet = await startDevnet({ seed: 'live-sources' });
  explorer = await startFaultUpstream(devnet.urls.explorer);
  const config = loadConfig({});
  upstreams = createUpstreams({
    urls: { ...devnet.urls, explorer: explorer.url },
    timeoutMs: 5_000,
    connections: 2,
    resilience: { failureThreshold: 1000, halfOpenAfterMs: 1000 },
    dialects: config.dialects,
  });
});

afterAll(async () => {
  await upstreams?.close();
  await explorer?.close();
  await devnet?.close();
});

describe('failed transactions', () => {
  it('are delivered oldest first whichever way the explorer sorts its page', async () => {
    explorer.set('/api/v1/transaction/failed-24h', 'reversedLists');
    const source = failedSource(upstreams, 'failed:test', devnet.token);
    const first = await source.poll(null, {});
    expect(first.events).toEqual([]);
    const added: string[] = [];
    while (added.length < 3) added.push(...devnet.advance(1).failedTxs);
    // The page as this explorer sends it: the oldest first.
    const page = await upstreams.explorer.failedTransactions(
      { page: 1, pageSize: 100, cursor: null },
      devnet.token,
      {},
    );
    const heights = page.nodes.map((tx) => tx.blockHeight as number);
    expect(heights).toEqual([...heights].sort((a, b) => a - b));
    const second = await source.poll(first.state, {});
    expect(second.events.map((e) => (e.kind === 'failedTransaction' ? e.transaction.hash : null))).toEqual(
      added,
    );
  });
});
