import { describe, expect, it } from 'vitest';
import { startDevnet } from '../../src/devnet/index.js';
import { bearer, call, useDevnet } from './helpers.js';

let clock = Date.UTC(2026, 10, 1, 12);
const devnet = useDevnet({ now: () => clock });
const explorer = (path: string, token: string | null = devnet().token) =>
  call(`${devnet().urls.explorer}${path}`, { headers: token === null ? {} : bearer(token) });

describe('explorer authentication', () => {
  it.each([
    ['no Authorization header', null],
    ['a wrong token', 'not-the-token'],
  ])('answers %s with 401 and a non-zero envelope code', async (_label, token) => {
    for (const path of ['/api/v1/contract/info/by-symbol?symbol=USDT', '/api/v1/transaction/failed-24h']) {
      const res = await explorer(path, token);
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
      expect(res.body).toEqual({ code: 401, message: expect.any(String), data: null });
    }
  });
});

describe('contracts by symbol (4.4)', () => {
  const popular = () => {
    const counts = new Map<string, number>();
    for (const c of devnet().data.contracts) counts.set(c.symbol, (counts.get(c.symbol) ?? 0) + 1);
    return [...counts].sort((a, b) => b[1] - a[1])[0] as [string, number];
  };

  it('answers in the envelope with the symbol’s contracts, case-insensitively', async () => {
    const [symbol, count] = popular();
    expect(count).toBeGreaterThan(20);
    const res = await explorer(`/api/v1/contract/info/by-symbol?symbol=${symbol.toLowerCase()}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ code: 0, message: 'success' });
    const { contracts, pagination } = res.body.data;
    expect(contracts).toHaveLength(20);
    expect(pagination).toMatchObject({ total: String(count), page: 1, has_next: true });
    for (const c of contracts) {
      expect(c).toMatchObject({
        symbol,
        address: expect.stringMatching(/^0x[0-9a-f]{40}$/),
        chain_id: expect.any(String),
      });
    }
  });

  it('filters by chain and type, and pages with a cursor', async () => {
    const [symbol] = popular();
    const all = devnet().data.contracts.filter((c) => c.symbol === symbol);
    const chainId = all[0]?.chain_id as string;
    const onChain = await explorer(
      `/api/v1/contract/info/by-symbol?symbol=${symbol}&chainId=${chainId}&pagination.page_size=100`,
    );
    expect(onChain.body.data.contracts).toEqual(all.filter((c) => c.chain_id === chainId));
    const erc20 = await explorer(
      `/api/v1/contract/info/by-symbol?symbol=${symbol}&contractType=erc20&pagination.page_size=100`,
    );
    expect(erc20.body.data.contracts).toEqual(all.filter((c) => c.contract_type === 'ERC20'));

    const cursor = all[4]?.address as string;
    const next = await explorer(
      `/api/v1/contract/info/by-symbol?symbol=${symbol}&pagination.page_size=5&pagination.cursor=${cursor}`,
    );
    expect(next.body.data.contracts).toEqual(all.slice(5, 10));
  });

  it('rejects a missing symbol and an oversized page with a non-zero code', async () => {
    const missing = await explorer('/api/v1/contract/info/by-symbol');
    expect(missing.status).toBe(400);
    expect(missing.body.code).not.toBe(0);
    const big = await explorer('/api/v1/contract/info/by-symbol?symbol=USDT&pagination.page_size=1000');
    expect(big.status).toBe(400);
  });
});

describe('failed transactions of the last 24 hours (4.5)', () => {
  const readAll = async () => {
    const seen: any[] = [];
    for (let page = 1; ; page++) {
      const { body } = await explorer(
        `/api/v1/transaction/failed-24h?pagination.page_size=100&pagination.page=${page}`,
      );
      seen.push(...body.data.transactions);
      if (!body.data.pagination.has_next) return { seen, total: Number(body.data.pagination.total) };
    }
  };

  it('lists a few hundred failures, newest first, all inside the window', async () => {
    const { seen, total } = await readAll();
    expect(seen).toHaveLength(total);
    expect(total).toBeGreaterThan(200);
    const since = clock / 1000 - 86_400;
    for (const tx of seen) {
      expect(tx.block_time).toBeGreaterThanOrEqual(since);
      expect(tx).toMatchObject({
        hash: expect.stringMatching(/^0x[0-9a-f]{64}$/),
        error: expect.any(String),
      });
    }
    for (let i = 1; i < seen.length; i++) expect(seen[i - 1].tx_number).toBeGreaterThan(seen[i].tx_number);
  });

  it('pages with a tx_number cursor or a height:index cursor', async () => {
    const first = await explorer('/api/v1/transaction/failed-24h?pagination.page_size=10');
    const tenth = first.body.data.transactions[9];
    const second = await explorer('/api/v1/transaction/failed-24h?pagination.page_size=10&pagination.page=2');
    const byNumber = await explorer(
      `/api/v1/transaction/failed-24h?pagination.page_size=10&pagination.cursor=${tenth.tx_number}`,
    );
    const byHeight = await explorer(
      `/api/v1/transaction/failed-24h?pagination.page_size=10&pagination.cursor=${tenth.block_height}:${tenth.action_index}`,
    );
    expect(byNumber.body.data.transactions).toEqual(second.body.data.transactions);
    expect(byHeight.body.data.transactions).toEqual(second.body.data.transactions);
    expect((await explorer('/api/v1/transaction/failed-24h?pagination.cursor=abc')).status).toBe(400);
  });

  it('moves the window with the devnet clock', async () => {
    const before = (await readAll()).total;
    clock += 12 * 3_600_000;
    try {
      const after = (await readAll()).total;
      expect(after).toBeLessThan(before);
      expect(after).toBeGreaterThan(0);
    } finally {
      clock -= 12 * 3_600_000;
    }
  });
});

describe('determinism', () => {
  it('answers identically for the same seed and clock, differently for another seed', async () => {
    const now = () => Date.UTC(2026, 0, 1);
    const [a, b, c] = await Promise.all([
      startDevnet({ seed: 'same', now }),
      startDevnet({ seed: 'same', now }),
      startDevnet({ seed: 'other', now }),
    ]);
    try {
      const paths = [
        (u: typeof a.urls) => `${u.scan}/api/v1/dex/search?q=0x1`,
        (u: typeof a.urls) => `${u.stake}/stake/validators?pagination.page_size=100`,
      ];
      for (const path of paths) {
        const [x, y, z] = await Promise.all([call(path(a.urls)), call(path(b.urls)), call(path(c.urls))]);
        expect(x.body).toEqual(y.body);
        expect(x.body).not.toEqual(z.body);
      }
      expect(a.data.blocks.hash).toEqual(b.data.blocks.hash);
      expect(a.data.contracts).toEqual(b.data.contracts);
    } finally {
      await Promise.all([a.close(), b.close(), c.close()]);
    }
  });

  it('generates a chain of the promised size', async () => {
    const devnet = await startDevnet({ seed: 'size' });
    await devnet.close();
    const { data } = devnet;
    expect(data.blocks.count).toBeGreaterThanOrEqual(20_000);
    expect(data.txs.count).toBeGreaterThanOrEqual(100_000);
    expect(data.addresses.length).toBeGreaterThanOrEqual(5_000);
    expect(data.validators.length).toBeGreaterThanOrEqual(150);
    expect(data.contracts.length).toBeGreaterThanOrEqual(200);
    expect(new Set(data.contracts.map((c) => c.symbol)).size).toBeGreaterThanOrEqual(24);
    for (const list of data.delegations.values()) {
      expect(list.length).toBeGreaterThanOrEqual(1);
      expect(list.length).toBeLessThanOrEqual(31);
    }
    const last = data.blocks.time[data.blocks.count - 1] as number;
    expect(data.generatedAt / 1000 - last).toBeLessThan(60);
  });
});
