import { describe, expect, it } from 'vitest';
import { call, useDevnet } from './helpers.js';

const devnet = useDevnet();
const suggest = (q: string) => call(`${devnet().urls.scan}/api/v1/dex/search?q=${encodeURIComponent(q)}`);
const exact = (q: string) => call(`${devnet().urls.scan}/api/v1/search?q=${encodeURIComponent(q)}`);

describe('search suggestions (4.1)', () => {
  it('puts the exact transaction first, caps every category at 10 and counts all matches', async () => {
    const { txs } = devnet().data;
    const hash = txs.hash[777] as string;
    const prefix = hash.slice(0, 4);
    const expectedCount = txs.hash.filter((h) => h.startsWith(prefix)).length;
    const byPrefix = await suggest(prefix);
    expect(byPrefix.status).toBe(200);
    expect(byPrefix.body.counts.transactions).toBe(expectedCount);
    expect(expectedCount).toBeGreaterThan(10);
    expect(byPrefix.body.transactions).toHaveLength(10);
    expect(byPrefix.body.blocks.length).toBeLessThanOrEqual(10);
    for (const t of byPrefix.body.transactions) expect(t.hash.startsWith(prefix)).toBe(true);
    expect(byPrefix.body.submitTarget).toBeNull();

    const full = await suggest(hash);
    expect(full.body.transactions[0]).toEqual({
      hash,
      blockHeight: txs.height[777],
      blockActionIndex: txs.actionIndex[777],
      blockTime: devnet().data.blocks.time[(txs.height[777] as number) - 1],
      initiator: devnet().data.addresses[txs.initiator[777] as number],
      type: expect.any(String),
    });
    expect(full.body.selectedCategory).toBe('transactions');
    expect(full.body.submitTarget).toEqual({ kind: 'transaction', hash });
  });

  it('matches block heights by decimal prefix, exact height first, then newest', async () => {
    const { body } = await suggest('12');
    const heights = body.blocks.map((b: { height: number }) => b.height);
    expect(heights[0]).toBe(12);
    expect(heights).toHaveLength(10);
    for (const h of heights) expect(String(h).startsWith('12')).toBe(true);
    expect(heights.slice(1)).toEqual([...heights.slice(1)].sort((a, b) => b - a));
    // 12, 120..129, 1200..1299, 12000..12999 on a 20,000-block chain.
    expect(body.counts).toEqual({ transactions: 0, blocks: 1 + 10 + 100 + 1000, addresses: 0 });
    expect(body.selectedCategory).toBe('blocks');
    expect(body.submitTarget).toEqual({ kind: 'block', height: 12 });
    expect(body.blocks[0]).toMatchObject({
      hash: devnet().data.blocks.hash[11],
      transactionCount: devnet().data.blocks.txCount[11],
      actionCountComplete: true,
    });
  });

  it('suggests addresses case-insensitively and targets a single match', async () => {
    const address = devnet().data.addresses[42] as string;
    const { body } = await suggest(address.toUpperCase().replace('0X', '0x'));
    expect(body.addresses[0]).toEqual({ address });
    expect(body.selectedCategory).toBe('addresses');
    expect(body.submitTarget).toEqual({ kind: 'address', address });
  });

  it('answers text that names nothing with empty categories and an open panel', async () => {
    const { status, body } = await suggest('hello world');
    expect(status).toBe(200);
    expect(body).toMatchObject({
      query: 'hello world',
      transactions: [],
      blocks: [],
      addresses: [],
      counts: { transactions: 0, blocks: 0, addresses: 0 },
      submitTarget: null,
    });
  });

  const refusals = [
    { label: 'text over 256 bytes', query: `q=${encodeURIComponent('é'.repeat(129))}`, message: /256 bytes/ },
    { label: 'a null byte', query: 'q=12%00', message: /null byte/ },
    { label: 'an unknown parameter', query: 'q=12&limit=50', message: /unknown query parameter: limit/ },
    { label: 'a repeated parameter', query: 'q=12&q=13', message: /more than once/ },
    { label: 'no search text', query: '', message: /q is required/ },
  ];
  for (const { label, query, message } of refusals) {
    it(`rejects ${label} with 400 and { error }`, async () => {
      const res = await call(`${devnet().urls.scan}/api/v1/dex/search?${query}`);
      expect(res.status).toBe(400);
      expect(Object.keys(res.body)).toEqual(['error']);
      expect(res.body.error).toMatch(message);
    });
  }

  it('accepts exactly 256 bytes', async () => {
    expect((await suggest('a'.repeat(256))).status).toBe(200);
  });
});

describe('exact search (4.2)', () => {
  it('classifies digits as a block height', async () => {
    const { body } = await exact('500');
    expect(body).toEqual({
      query: '500',
      results: [{ kind: 'block', identity: '500', matched: '500', canonicalUrl: '/blocks/500' }],
    });
  });

  it('finds blocks and transactions by 0x+64 hex, and addresses by 0x+40 hex', async () => {
    const { blocks, txs, addresses } = devnet().data;
    const block = await exact(blocks.hash[99] as string);
    expect(block.body.results).toEqual([
      expect.objectContaining({ kind: 'block', identity: '100', canonicalUrl: '/blocks/100' }),
    ]);
    const tx = await exact((txs.hash[5] as string).toUpperCase().replace('0X', '0x'));
    expect(tx.body.results).toEqual([
      expect.objectContaining({ kind: 'transaction', identity: txs.hash[5] }),
    ]);
    const address = await exact(addresses[7] as string);
    expect(address.body.results).toEqual([
      expect.objectContaining({ kind: 'address', identity: addresses[7] }),
    ]);
  });

  const unmatched = [
    { label: 'a height past the tip', q: '999999' },
    { label: 'zero', q: '0' },
    { label: 'an unknown address', q: `0x${'0'.repeat(40)}` },
    { label: '39 hex characters', q: `0x${'a'.repeat(39)}` },
    { label: 'a hash prefix', q: '0xabc' },
    { label: 'hex without 0x', q: 'ab'.repeat(32) },
    { label: 'digits with spaces', q: ' 12' },
  ];
  for (const { label, q } of unmatched) {
    it(`never guesses: ${label} gives no result`, async () => {
      const { status, body } = await exact(q);
      expect(status).toBe(200);
      expect(body.results).toEqual([]);
    });
  }

  it('rejects a null byte and unknown parameters', async () => {
    expect((await call(`${devnet().urls.scan}/api/v1/search?q=%00`)).body).toEqual({
      error: 'search text contains a null byte',
    });
    expect((await call(`${devnet().urls.scan}/api/v1/search?q=1&x=1`)).status).toBe(400);
  });
});
