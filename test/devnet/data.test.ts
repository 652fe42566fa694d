import { beforeAll, describe, expect, it } from 'vitest';
import { type DevnetData, generate, ROUND_STATUS } from '../../src/devnet/data.js';
import { startDevnet } from '../../src/devnet/index.js';
import { decodeAddress } from '../../src/lib/address.js';
import { call } from './helpers.js';

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
});

describe('the generated chain', () => {
  const now = Date.UTC(2026, 10, 1, 12);
  let data: DevnetData;
  beforeAll(() => {
    data = generate({ seed: 'size', now });
  });

  it('has the promised size', () => {
    expect(data.blocks.count).toBeGreaterThanOrEqual(20_000);
    expect(data.txs.count).toBeGreaterThanOrEqual(100_000);
    expect(data.addresses.length).toBeGreaterThanOrEqual(5_000);
    expect(data.validators).toHaveLength(160);
    expect(data.contracts.length).toBeGreaterThanOrEqual(200);
    expect(new Set(data.contracts.map((c) => c.symbol)).size).toBeGreaterThanOrEqual(24);
    for (const list of data.delegations.values()) {
      expect(list.length).toBeGreaterThanOrEqual(1);
      expect(list.length).toBeLessThanOrEqual(31);
    }
    const last = data.blocks.time[data.blocks.count - 1] as number;
    expect(data.generatedAt / 1000 - last).toBeLessThan(60);
  });

  it('gives validators valid bech32 addresses whose operator shares its wallet’s bytes', () => {
    const wallets = new Set(data.validators.map((v) => v.wallet_address));
    expect(wallets.size).toBe(data.validators.length);
    const accounts = new Set(data.addresses);
    for (const v of data.validators) {
      expect(v.wallet_address).toMatch(/^0x[0-9a-f]{40}$/);
      expect(accounts.has(v.wallet_address)).toBe(true);
      expect(decodeAddress(v.operator_address)).toEqual({
        prefix: 'biyavaloper',
        hex: v.wallet_address.slice(2),
      });
      expect(decodeAddress(v.consensus_address)).toEqual({ prefix: 'biyavalcons', hex: expect.any(String) });
    }
    expect(new Set(data.validators.map((v) => v.consensus_address)).size).toBe(data.validators.length);
    const operators = new Set(data.validators.map((v) => v.operator_address));
    for (const [delegator, list] of data.delegations) {
      expect(delegator).toMatch(/^0x[0-9a-f]{40}$/);
      for (const d of list) expect(operators.has(d.delegation.validator_address)).toBe(true);
    }
  });

  it('has weekly buyback rounds: done, in progress, pending, cancelled, in 18-decimal base units', () => {
    const rounds = [...data.rounds.values()];
    const { done, inProgress, pending, cancelled } = ROUND_STATUS;
    expect(rounds.map((r) => [r.round_id, r.status])).toEqual([
      ['round-001', done],
      ['round-002', done],
      ['round-003', done],
      ['round-004', done],
      ['round-005', inProgress],
      ['round-006', pending],
      ['round-007', cancelled],
    ]);
    for (const r of rounds) {
      expect(r.min_amount).toBe('1000000000000000000');
      expect(r.max_amount).toBe('500000000000000000000');
      expect(r.total_collected).toMatch(/^\d+$/);
      expect(r.revenue_pool).toMatch(/^[1-9]\d{21,23}$/);
      const collected = BigInt(r.total_collected);
      const booked = BigInt(r.booked_slots);
      expect(collected >= booked * BigInt(r.min_amount) && collected <= booked * BigInt(r.max_amount)).toBe(
        true,
      );
      expect(r.burn_tx_hash === '').toBe(r.status !== done);
      expect(Date.parse(r.start_time) <= now).toBe(r.status === done || r.status === inProgress);
    }
  });
});
