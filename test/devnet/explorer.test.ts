import { describe, expect, it } from 'vitest';
import type { Devnet } from '../../src/devnet/index.js';
import { bearer, call, errorBody, useDevnet, VARIANTS } from './helpers.js';

/**
 * How each dialect lays out a page inside the envelope's `data`, so that one suite reads both:
 * spec `{ contracts | transactions, pagination }` in snake_case; kratos `{ data, pagination }` with
 * camelCase pagination, contract items in explorer.yaml's names and TransactionDTO items.
 */
const LAYOUTS = {
  spec: {
    items: (data: any, list: string) => data[list],
    hasNext: (data: any) => data.pagination.has_next,
    contractAddress: (c: any) => c.address,
    txNumber: (tx: any) => tx.tx_number as number,
    blockTime: (tx: any) => tx.block_time as number,
  },
  kratos: {
    items: (data: any) => data.data,
    hasNext: (data: any) => data.pagination.hasNext,
    contractAddress: (c: any) => c.contractAddress,
    txNumber: (tx: any) => Number(tx.tx_number),
    blockTime: (tx: any) => Number(tx.block_unix_timestamp) / 1000,
  },
};

let clock = Date.UTC(2026, 10, 1, 12);

describe.each(VARIANTS)('explorer, $label', ({ options }) => {
  const devnet = useDevnet({ ...options, now: () => clock });
  const layout = () => LAYOUTS[devnet().dialect.name];
  const explorer = (path: string, token: string | null = devnet().token) =>
    call(`${devnet().urls.explorer}${path}`, { headers: token === null ? {} : bearer(token) });
  /** A successful answer's `data`, the envelope checked. */
  const data = async (path: string) => {
    const res = await explorer(path);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body)).toEqual(['code', 'message', 'data']);
    expect(res.body).toMatchObject({ code: devnet().dialect.explorerSuccessCode, message: 'success' });
    return res.body.data;
  };
  const contracts = async (path: string) => layout().items(await data(path), 'contracts');
  const transactions = async (path: string) => layout().items(await data(path), 'transactions');
  const error = (d: Devnet, status: number, message: RegExp) =>
    errorBody(d, 'explorer', status, expect.stringMatching(message));

  describe('authentication', () => {
    const callers = [
      { label: 'no Authorization header', token: null, message: /missing bearer token/ },
      { label: 'a wrong token', token: 'not-the-token', message: /invalid access token/ },
    ];
    for (const { label, token, message } of callers) {
      it(`answers ${label} with 401 and a non-zero code`, async () => {
        for (const path of [
          '/api/v1/contract/info/by-symbol?symbol=USDT',
          '/api/v1/transaction/failed-24h',
        ]) {
          const res = await explorer(path, token);
          expect(res.status).toBe(401);
          expect(res.headers.get('www-authenticate')).toBe('Bearer');
          expect(res.body).toEqual(error(devnet(), 401, message));
        }
      });
    }
  });

  describe('contracts by symbol (4.4)', () => {
    const popular = () => {
      const counts = new Map<string, number>();
      for (const c of devnet().data.contracts) counts.set(c.symbol, (counts.get(c.symbol) ?? 0) + 1);
      return [...counts].sort((a, b) => b[1] - a[1])[0] as [string, number];
    };
    const addresses = (items: any[]) => items.map(layout().contractAddress);

    it('answers in the envelope with the symbol’s contracts, case-insensitively', async () => {
      const [symbol, count] = popular();
      expect(count).toBeGreaterThan(20);
      const page = await data(`/api/v1/contract/info/by-symbol?symbol=${symbol.toLowerCase()}`);
      const all = devnet().data.contracts.filter((c) => c.symbol === symbol);
      expect(addresses(layout().items(page, 'contracts'))).toEqual(all.slice(0, 20).map((c) => c.address));
      expect(page.pagination).toMatchObject({ total: String(count), page: 1 });
      expect(layout().hasNext(page)).toBe(true);
    });

    it('filters by chain and type, and pages with a cursor', async () => {
      const [symbol] = popular();
      const all = devnet().data.contracts.filter((c) => c.symbol === symbol);
      const chainId = all[0]?.chain_id as string;
      const base = `/api/v1/contract/info/by-symbol?symbol=${symbol}`;
      const onChain = await contracts(`${base}&chainId=${chainId}&pagination.page_size=100`);
      expect(addresses(onChain)).toEqual(all.filter((c) => c.chain_id === chainId).map((c) => c.address));
      const erc20 = await contracts(`${base}&contractType=erc20&pagination.page_size=100`);
      expect(addresses(erc20)).toEqual(all.filter((c) => c.contract_type === 'ERC20').map((c) => c.address));

      const cursor = all[4]?.address as string;
      const next = await contracts(`${base}&pagination.page_size=5&pagination.cursor=${cursor}`);
      expect(addresses(next)).toEqual(all.slice(5, 10).map((c) => c.address));
    });

    it('rejects a missing symbol and an oversized page with a non-zero code', async () => {
      const missing = await explorer('/api/v1/contract/info/by-symbol');
      expect(missing.status).toBe(400);
      expect(missing.body).toEqual(error(devnet(), 400, /symbol is required/));
      const big = await explorer('/api/v1/contract/info/by-symbol?symbol=USDT&pagination.page_size=1000');
      expect(big.status).toBe(400);
      expect(big.body).toEqual(error(devnet(), 400, /between 1 and 100/));
    });
  });

  describe('failed transactions of the last 24 hours (4.5)', () => {
    const readAll = async () => {
      const seen: any[] = [];
      for (let page = 1; ; page++) {
        const body = await data(
          `/api/v1/transaction/failed-24h?pagination.page_size=100&pagination.page=${page}`,
        );
        seen.push(...layout().items(body, 'transactions'));
        if (!layout().hasNext(body)) return { seen, total: Number(body.pagination.total) };
      }
    };

    it('lists a few hundred failures, newest first, all inside the window', async () => {
      const { seen, total } = await readAll();
      const { txs } = devnet().data;
      expect(seen).toHaveLength(total);
      expect(total).toBeGreaterThan(200);
      const since = clock / 1000 - 86_400;
      for (const tx of seen) {
        expect(layout().blockTime(tx)).toBeGreaterThanOrEqual(since);
        const i = layout().txNumber(tx) - 1;
        expect(tx.hash).toBe(txs.hash[i]);
        expect(txs.failure[i]).toBeGreaterThan(0);
      }
      const numbers = seen.map(layout().txNumber);
      for (let i = 1; i < numbers.length; i++) expect(numbers[i - 1]).toBeGreaterThan(numbers[i] as number);
    });

    it('pages with a tx_number cursor or a height:index cursor', async () => {
      const { txs } = devnet().data;
      const tenth = (await transactions('/api/v1/transaction/failed-24h?pagination.page_size=10'))[9];
      const i = layout().txNumber(tenth) - 1;
      const second = await transactions(
        '/api/v1/transaction/failed-24h?pagination.page_size=10&pagination.page=2',
      );
      const base = '/api/v1/transaction/failed-24h?pagination.page_size=10&pagination.cursor=';
      expect(await transactions(`${base}${i + 1}`)).toEqual(second);
      expect(await transactions(`${base}${txs.height[i]}:${txs.actionIndex[i]}`)).toEqual(second);
      const bad = await explorer(`${base}abc`);
      expect(bad.status).toBe(400);
      expect(bad.body).toEqual(error(devnet(), 400, /tx_number or block_height:action_index/));
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
});
