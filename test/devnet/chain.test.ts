import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { blockIndex, type DevnetData } from '../../src/devnet/data.js';
import { DEVNET_GENESIS, type Devnet, startDevnet } from '../../src/devnet/index.js';
import { blockSource } from '../../src/live/sources.js';
import { createUpstreams } from '../../src/upstream/index.js';
import { until } from '../support/until.js';
import { bearer, call, camelKeys, useDevnet, VARIANTS } from './helpers.js';

/**
 * The devnet's chain moves on (src/devnet/chain.ts): each advance appends a block, now and then a
 * failed transaction, and moves the validator set; every service answers from the new state, in
 * every dialect, and the same seed with the same advances gives the same chain.
 */

/** The validator list as the gateway's staking client would read it, whatever the dialect. */
async function validatorList(stake: string) {
  type Page = {
    validators: {
      operatorAddress: string;
      tokens: string;
      jailed: boolean;
      commissionRate: string;
      proposed: string | number;
    }[];
    statistics: { totalStakedAmount: string; timestamp: string };
  };
  const page = async (n: number) => {
    const { body } = await call(`${stake}/stake/validators?pagination.page_size=100&pagination.page=${n}`);
    const list = camelKeys(body) as { data?: unknown };
    return (list.data ?? list) as Page;
  };
  const [first, second] = await Promise.all([page(1), page(2)]);
  return { validators: [...first.validators, ...second.validators], statistics: first.statistics };
}

describe('the moving chain', () => {
  it('is the same for the same seed and the same advances, block by block', async () => {
    const now = () => Date.UTC(2026, 10, 24, 12);
    const [a, b] = await Promise.all([
      startDevnet({ seed: 'moving', now }),
      startDevnet({ seed: 'moving', now }),
    ]);
    try {
      const fromA = [a.advance(3), a.advance(20)];
      const fromB = [b.advance(3), b.advance(20)];
      expect(fromA).toEqual(fromB);
      expect(fromA[0]?.heights).toEqual([20_001, 20_002, 20_003]);
      expect(a.data.blocks.hash.slice(-23)).toEqual(b.data.blocks.hash.slice(-23));
      expect(a.data.validators).toEqual(b.data.validators);
      expect(a.data.statistics).toEqual(b.data.statistics);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('gives every new block a time after the last one, and its transactions their heights', async () => {
    const devnet = await startDevnet({ seed: 'moving' });
    try {
      const before = devnet.data.blocks.count;
      const { heights } = devnet.advance(10);
      const { blocks, txs } = devnet.data;
      expect(blocks.count).toBe(before + 10);
      expect(blocks.time.length).toBe(blocks.count);
      for (const height of heights) {
        const gap = (blocks.time[height - 1] as number) - (blocks.time[height - 2] as number);
        expect(gap).toBeGreaterThanOrEqual(5);
        expect(gap).toBeLessThanOrEqual(7);
        const first = blocks.firstTx[height - 1] as number;
        for (let k = 0; k < (blocks.txCount[height - 1] as number); k++) {
          expect(txs.height[first + k]).toBe(height);
          expect(txs.actionIndex[first + k]).toBe(k);
        }
      }
      expect(txs.hash).toHaveLength(txs.count);
    } finally {
      await devnet.close();
    }
  });
});

describe.each(VARIANTS)('the services on the moving chain ($label)', ({ options }) => {
  const devnet = useDevnet({ seed: 'moving-services', ...options });

  it('finds a new block by height and by hash, and the tip is the only incomplete block', async () => {
    const { urls, data } = devnet();
    const [height] = devnet().advance(1).heights as [number];
    const hash = data.blocks.hash[height - 1] as string;
    const byHeight = await call(`${urls.scan}/api/v1/dex/search?q=${height}`);
    expect(byHeight.body.blocks[0]).toMatchObject({ height, hash, actionCountComplete: false });
    const exact = await call(`${urls.scan}/api/v1/search?q=${hash}`);
    expect(exact.body.results).toEqual([
      { kind: 'block', identity: String(height), matched: hash, canonicalUrl: `/blocks/${height}` },
    ]);
    devnet().advance(1);
    const again = await call(`${urls.scan}/api/v1/dex/search?q=${height}`);
    expect(again.body.blocks[0]).toMatchObject({ height, actionCountComplete: true });
    const missing = await call(`${urls.scan}/api/v1/dex/search?q=${height + 2}`);
    expect(missing.body.blocks).toEqual([]);
  });

  it('lists new failed transactions first, newest first', async () => {
    const { urls, token } = devnet();
    const added: string[] = [];
    while (added.length < 2) added.push(...devnet().advance(1).failedTxs);
    const { body } = await call(`${urls.explorer}/api/v1/transaction/failed-24h?pagination.page_size=5`, {
      headers: bearer(token),
    });
    const items = (body.data.transactions ?? body.data.data) as { hash: string }[];
    expect(items.slice(0, added.length).map((tx) => tx.hash)).toEqual([...added].reverse());
  });

  it('answers the validator set as it moved, each block counted for its proposer, and statistics that follow it', async () => {
    const { urls } = devnet();
    const before = await validatorList(urls.stake);
    let moved: string[] = [];
    let blocks = 0;
    while (moved.length === 0) {
      moved = devnet().advance(1).validators;
      blocks++;
    }
    const after = await validatorList(urls.stake);
    const key = (v: { operatorAddress: string }) => devnet().stakeAddress(v.operatorAddress);
    // Each block's proposer counts it, as on a live chain; that is no move of the validator's own.
    const proposals = (list: typeof before) =>
      list.validators.reduce((sum, v) => sum + Number(v.proposed), 0);
    expect(proposals(after) - proposals(before)).toBe(blocks);
    const own = ({ proposed: _proposed, ...rest }: (typeof before.validators)[number]) =>
      JSON.stringify(rest);
    const changed = after.validators.filter((v) => {
      const was = before.validators.find((w) => w.operatorAddress === v.operatorAddress);
      return was === undefined || own(was) !== own(v);
    });
    expect(changed.map((v) => v.operatorAddress).sort()).toEqual(
      moved.map((v) => key({ operatorAddress: v })).sort(),
    );
    expect(after.statistics.timestamp).not.toBe(before.statistics.timestamp);
  });

  it('moves on through its control endpoint, and accepts the tokens granted to it', async () => {
    const { urls } = devnet();
    const height = devnet().data.blocks.count;
    const res = await call(`${urls.scan}/_devnet/advance?blocks=2`, { method: 'POST' });
    expect(res.status).toBe(200);
    expect(res.body.heights).toEqual([height + 1, height + 2]);
    const refused = await call(`${urls.scan}/_devnet/advance?blocks=0`, { method: 'POST' });
    expect(refused.status).toBe(400);

    const failed = `${urls.explorer}/api/v1/transaction/failed-24h?pagination.page_size=1`;
    expect((await call(failed, { headers: bearer('second-caller') })).status).toBe(401);
    devnet().grantToken('second-caller');
    expect((await call(failed, { headers: bearer('second-caller') })).status).toBe(200);
    devnet().revokeToken('second-caller');
    expect((await call(failed, { headers: bearer('second-caller') })).status).toBe(401);
  });
});

/** Block `height` as `data` holds it: what makes it the same block on another start. */
function blockOf(data: DevnetData, height: number) {
  const { blocks, txs, validators } = data;
  const i = blockIndex(blocks, height);
  const first = blocks.firstTx[i] as number;
  const count = blocks.txCount[i] as number;
  return {
    hash: blocks.hash[i],
    time: blocks.time[i],
    proposer: validators[blocks.proposer[i] as number]?.operator_address,
    txs: txs.hash.slice(first, first + count),
    failures: Array.from(txs.failure.slice(first, first + count)),
  };
}

describe('the chain on the clock', () => {
  const at = (ms: number, blockIntervalMs = 6_000) => ({
    seed: 'clock',
    genesis: DEVNET_GENESIS,
    blockIntervalMs,
    now: () => ms,
  });
  const started: Devnet[] = [];
  const start = async (options: Parameters<typeof startDevnet>[0]) => {
    const devnet = await startDevnet(options);
    started.push(devnet);
    return devnet;
  };

  it('goes on across restarts: the head is where the clock is since genesis, the same block at each height', async () => {
    const t = Date.UTC(2026, 10, 29, 6);
    try {
      const before = await start(at(t));
      const head = Math.floor((t - DEVNET_GENESIS) / 6_000);
      expect(before.data.blocks.count).toBe(head);
      // The last 20,000 blocks are held, each at its time on the clock.
      expect(before.data.blocks.first).toBe(head - 19_999);
      expect(before.data.blocks.time.at(-1)).toBe((DEVNET_GENESIS + head * 6_000) / 1000);
      // Started again ten minutes later: a hundred blocks on, the blocks it holds of the first's alike,
      // and the hundred it made the ones the first made as the clock moved on.
      const after = await start(at(t + 600_000));
      expect(after.data.blocks.count).toBe(head + 100);
      expect(before.advance(100).heights.at(-1)).toBe(head + 100);
      for (const height of [after.data.blocks.first, head - 1, head, head + 1, head + 57, head + 100]) {
        expect(blockOf(after.data, height), `block ${height}`).toEqual(blockOf(before.data, height));
      }
      const search = await call(`${after.urls.scan}/api/v1/dex/search?q=${head}`);
      expect(search.body.blocks[0]).toMatchObject({ height: head, hash: blockOf(before.data, head).hash });
      // Below the window a block is answered by its exact height alone, as an archive serves it:
      // the same record the window held (so a client finds the head by galloping from height 1).
      const below = after.data.blocks.first - 1;
      expect(below).toBeGreaterThanOrEqual(before.data.blocks.first);
      const archived = await call(`${after.urls.scan}/api/v1/dex/search?q=${below}`);
      const held = blockOf(before.data, below);
      expect(archived.body.blocks[0]).toMatchObject({
        height: below,
        hash: held.hash,
        blockTime: held.time,
        transactionCount: held.txs.length,
        actionCountComplete: true,
      });
      expect((await call(`${after.urls.scan}/api/v1/search?q=${below}`)).body.results).toEqual([
        { kind: 'block', identity: String(below), matched: String(below), canonicalUrl: `/blocks/${below}` },
      ]);
      expect((await call(`${after.urls.scan}/api/v1/dex/search?q=1`)).body.blocks[0]).toMatchObject({
        height: 1,
      });
    } finally {
      await Promise.all(started.splice(0).map((d) => d.close()));
    }
  });

  it("has its head found by the gateway's block poller (a gallop from height 1), 4.8 million blocks in", async () => {
    try {
      const devnet = await start(at(Date.UTC(2026, 10, 29, 6)));
      const upstreams = createUpstreams({
        urls: devnet.urls,
        timeoutMs: 5_000,
        connections: 2,
        resilience: { failureThreshold: 1000, halfOpenAfterMs: 1000 },
        dialects: loadConfig({}).dialects,
      });
      try {
        const found = await blockSource(upstreams, 10, () => 0).poll(null, {});
        expect(found.state).toEqual({ head: devnet.data.blocks.count });
      } finally {
        await upstreams.close();
      }
    } finally {
      await Promise.all(started.splice(0).map((d) => d.close()));
    }
  });

  it('appends each block as the clock reaches its height, and catches up after a pause', async () => {
    let clock = Date.UTC(2026, 10, 29, 6);
    try {
      const devnet = await start({ ...at(clock, 50), now: () => clock });
      const head = devnet.data.blocks.count;
      expect(head).toBe(Math.floor((clock - DEVNET_GENESIS) / 50));
      clock += 50 * 7;
      await until(() => devnet.data.blocks.count === head + 7, { what: 'the seven blocks the clock passed' });
      const times = Array.from(devnet.data.blocks.time.slice(-8), (s) => s * 1000);
      expect(times).toEqual(
        Array.from({ length: 8 }, (_, i) => Math.floor((DEVNET_GENESIS + (head + i) * 50) / 1000) * 1000),
      );
    } finally {
      await Promise.all(started.splice(0).map((d) => d.close()));
    }
  });
});
