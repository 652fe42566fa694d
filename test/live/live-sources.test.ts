import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { type Devnet, startDevnet } from '../../src/devnet/index.js';
import type { LiveEvent } from '../../src/live/events.js';
import { FAILED_MAX_PAGES, type FailedState, failedSource, type PollResult } from '../../src/live/sources.js';
import { createUpstreams, type Upstreams } from '../../src/upstream/index.js';
import { type FaultUpstream, startFaultUpstream } from '../support/fault-upstream.js';

/**
 * What a poll of a live source delivers, over real HTTP, when the upstream behaves otherwise than
 * the devnet: an explorer that lists failed transactions oldest first instead of newest first, and
 * one that had more new failed transactions between two polls than one page holds.
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

/**
 * A purpose-built explorer on 127.0.0.1: a failed-24h list the test fills, newest first, paged as
 * asked (`pagination.page`, `pagination.page_size`), for one token; it records the pages asked for.
 */
async function startFailedExplorer(token: string) {
  const list: Record<string, unknown>[] = [];
  const asked: { page: number; pageSize: number }[] = [];
  let made = 0;
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://explorer.test');
    res.setHeader('content-type', 'application/json');
    if (
      url.pathname !== '/api/v1/transaction/failed-24h' ||
      req.headers.authorization !== `Bearer ${token}`
    ) {
      res.writeHead(401).end(JSON.stringify({ code: 16, message: 'unauthenticated', data: null }));
      return;
    }
    const page = Number(url.searchParams.get('pagination.page') ?? 1);
    const pageSize = Number(url.searchParams.get('pagination.page_size') ?? 20);
    asked.push({ page, pageSize });
    const pagination = {
      page,
      page_size: pageSize,
      total: String(list.length),
      total_pages: Math.ceil(list.length / pageSize),
      has_prev: page > 1,
      has_next: page * pageSize < list.length,
    };
    const transactions = list.slice((page - 1) * pageSize, page * pageSize);
    res.end(JSON.stringify({ code: 0, message: 'success', data: { transactions, pagination } }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    /** Pages asked for since the last call, as `page/pageSize`. */
    asked(): string[] {
      return asked.splice(0).map((a) => `${a.page}/${a.pageSize}`);
    },
    /** `n` new failed transactions on top of the list (four to a block); their hashes, oldest first. */
    add(n: number): string[] {
      const added: string[] = [];
      for (let i = 0; i < n; i++, made++) {
        const hash = `0x${made.toString(16).padStart(64, '0')}`;
        list.unshift({
          hash,
          tx_number: made,
          block_height: 1_000 + Math.floor(made / 4),
          action_index: 0,
          block_time: 1_700_000_000 + made,
          initiator: '0x0000000000000000000000000000000000000001',
          type: 'transfer',
          error: 'out of gas',
        });
        added.push(hash);
      }
      return added;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('failed transactions beyond one page', () => {
  const TOKEN = 'paging-token';
  let explorer: Awaited<ReturnType<typeof startFailedExplorer>>;
  let paged: Upstreams;
  beforeAll(async () => {
    explorer = await startFailedExplorer(TOKEN);
    paged = createUpstreams({
      urls: { ...devnet.urls, explorer: explorer.url },
      timeoutMs: 5_000,
      connections: 2,
      resilience: { failureThreshold: 1000, halfOpenAfterMs: 1000 },
      dialects: loadConfig({}).dialects,
    });
  });
  afterAll(async () => {
    await paged?.close();
    await explorer?.close();
  });

  const hashes = (result: PollResult<FailedState>) =>
    result.events.map((e: LiveEvent) => (e.kind === 'failedTransaction' ? e.transaction.hash : null));
  /** Pages `from` to `to`, of 100 each. */
  const pages = (from: number, to: number) =>
    Array.from({ length: to - from + 1 }, (_, i) => `${from + i}/100`);

  it('reads the following pages until a known one: 250 new between two polls are each delivered once, oldest first', async () => {
    explorer.add(30);
    const source = failedSource(paged, 'failed:paging', TOKEN);
    const first = await source.poll(null, {});
    expect(first.events).toEqual([]);
    expect(explorer.asked()).toEqual(['1/100']);
    const added = explorer.add(250);
    const second = await source.poll(first.state, {});
    expect(hashes(second)).toEqual(added);
    // Page 3 holds the last 50 new ones and the first known one: no page further.
    expect(explorer.asked()).toEqual(pages(1, 3));
    const quiet = await source.poll(second.state, {});
    expect(quiet.events).toEqual([]);
    expect(explorer.asked()).toEqual(['1/100']);
    const more = explorer.add(5);
    expect(hashes(await source.poll(quiet.state, {}))).toEqual(more);
    expect(explorer.asked()).toEqual(['1/100']);
  });

  it('reads at most FAILED_MAX_PAGES pages a poll and delivers the rest on the next polls, each once, oldest first', async () => {
    expect(FAILED_MAX_PAGES).toBe(10);
    const source = failedSource(paged, 'failed:paging-burst', TOKEN);
    let result = await source.poll(null, {});
    explorer.asked();
    const burst = explorer.add(1_250);
    // Ten pages, and the known ones not reached: nothing yet (the oldest new ones are further down).
    result = await source.poll(result.state, {});
    expect(result.events).toEqual([]);
    expect(explorer.asked()).toEqual(pages(1, 10));
    // Twenty more arrive meanwhile: the list moves down by as many, which the next poll copes with.
    const meanwhile = explorer.add(20);
    const all = [...burst, ...meanwhile];
    // It goes on from the tenth page down to the known ones, and delivers the oldest: those below
    // what now sits at the top of page 10 (the list's 901st).
    result = await source.poll(result.state, {});
    const bottom = all.length - 900;
    expect(hashes(result)).toEqual(all.slice(0, bottom));
    expect(explorer.asked()).toEqual(pages(10, 13));
    // Then the 900 above them: page 10 now holds the newest delivered.
    result = await source.poll(result.state, {});
    expect(hashes(result)).toEqual(all.slice(bottom));
    expect(explorer.asked()).toEqual(pages(1, 10));
    result = await source.poll(result.state, {});
    expect(result.events).toEqual([]);
    expect(explorer.asked()).toEqual(['1/100']);
  });
});
