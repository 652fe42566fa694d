import { describe, expect, it } from 'vitest';
import {
  BlockPageDocument,
  ExactSearchDocument,
  SearchBoxDocument,
  TransactionPageDocument,
} from '../../operations/generated/graphql.js';
import { bytesOf, idOf, useGatewayOnDevnet } from './helpers.js';

const env = useGatewayOnDevnet();

describe('searchSuggestions', () => {
  it('maps the devnet’s suggestions, enums and submit target', async () => {
    const { txs } = env.devnet.data;
    const hash = txs.hash[4242] as string;
    const res = await env.gql(SearchBoxDocument, { variables: { query: hash } });
    expect(res.errors).toBeUndefined();
    const s = res.data?.searchSuggestions;
    expect(s?.selectedCategory).toBe('TRANSACTIONS');
    expect(s?.submitTarget).toEqual({ kind: 'TRANSACTION', hash, height: null, address: null });
    expect(s?.transactions[0]).toMatchObject({ hash, blockHeight: txs.height[4242] });
    expect(s?.counts).toEqual({ transactions: 1, blocks: 0, addresses: 0 });
  });

  it('sends the text as q, percent-encoded, with no Authorization header', async () => {
    const text = 'a&b=c/../?#%2F é';
    const res = await env.gql(SearchBoxDocument, { variables: { query: text }, token: 'secret-token' });
    expect(res.data?.searchSuggestions?.query).toBe(text);
    const [req] = env.devnet.requests;
    expect(env.devnet.requests).toHaveLength(1);
    expect(req?.path).toBe('/api/v1/dex/search');
    expect(new URLSearchParams(req?.query).get('q')).toBe(text);
    expect([...new URLSearchParams(req?.query).keys()]).toEqual(['q']);
    expect(req?.headers.authorization).toBeUndefined();
  });

  const queries = [
    { label: '257 bytes of UTF-8', query: `${'é'.repeat(128)}a`, message: /257 bytes/ },
    { label: 'a NUL character', query: 'ab\u0000c', message: /NUL/ },
  ];
  for (const { label, query, message } of queries) {
    it(`rejects ${label} as BAD_USER_INPUT without calling the upstream`, async () => {
      const res = await env.gql(SearchBoxDocument, { variables: { query } });
      expect(res.data?.searchSuggestions).toBeNull();
      expect(res.errors?.[0]?.extensions).toEqual({ code: 'BAD_USER_INPUT', argument: 'query' });
      expect(res.errors?.[0]?.message).toMatch(message);
      expect(env.devnet.counts.scan).toBe(0);
    });
  }

  it('deduplicates the same text within one request', async () => {
    const res = await env.gql(
      '{ a: searchSuggestions(query: "77") { query } b: searchSuggestions(query: "77") { query } }',
    );
    expect(res.data).toEqual({ a: { query: '77' }, b: { query: '77' } });
    expect(env.devnet.counts.scan).toBe(1);
  });
});

describe('search', () => {
  it('classifies strictly and resolves each hit’s target', async () => {
    const { blocks, addresses } = env.devnet.data;
    const byHeight = await env.gql(ExactSearchDocument, { variables: { query: '321' } });
    expect(byHeight.data?.search?.results).toEqual([
      {
        kind: 'BLOCK',
        identity: '321',
        canonicalUrl: '/blocks/321',
        target: { __typename: 'Block', id: idOf('Block', '321'), height: 321, hash: blocks.hash[320] },
      },
    ]);
    const byAddress = await env.gql(ExactSearchDocument, { variables: { query: addresses[9] } });
    expect(byAddress.data?.search?.results[0]?.target).toEqual({
      __typename: 'Address',
      id: idOf('Address', bytesOf(addresses[9] as string)),
      address: addresses[9],
    });
    const nothing = await env.gql(ExactSearchDocument, { variables: { query: 'not a hash' } });
    expect(nothing.data?.search?.results).toEqual([]);
  });
});

describe('block and transaction', () => {
  it('reads a block with its proposing validator', async () => {
    const { blocks, validators } = env.devnet.data;
    const res = await env.gql(BlockPageDocument, { variables: { height: 1234 } });
    const proposer = validators[blocks.proposer[1233] as number];
    expect(res.data?.block).toEqual({
      id: idOf('Block', '1234'),
      height: 1234,
      hash: blocks.hash[1233],
      blockTime: new Date((blocks.time[1233] as number) * 1000).toISOString().replace('.000Z', 'Z'),
      transactionCount: blocks.txCount[1233],
      actionCountComplete: true,
      proposer: proposer?.consensus_address,
      proposerValidator: {
        id: idOf('Validator', bytesOf(proposer?.operator_address as string)),
        moniker: proposer?.moniker,
        operatorAddress: env.devnet.stakeAddress(proposer?.operator_address as string),
        imageUrl: proposer?.image_url,
      },
    });
  });

  it('answers null for a block past the tip', async () => {
    const res = await env.gql(BlockPageDocument, { variables: { height: 9_999_999 } });
    expect(res.errors).toBeUndefined();
    expect(res.data?.block).toBeNull();
  });

  it('reads a transaction and its block, searching each key once', async () => {
    const { txs, blocks } = env.devnet.data;
    const hash = txs.hash[99] as string;
    const res = await env.gql(TransactionPageDocument, {
      variables: { hash: hash.toUpperCase().replace('0X', '0x') },
    });
    const height = txs.height[99] as number;
    expect(res.data?.transaction).toMatchObject({
      hash,
      blockHeight: height,
      block: { hash: blocks.hash[height - 1] },
    });
    const scanPaths = env.devnet.requests
      .filter((r) => r.service === 'scan')
      .map((r) => new URLSearchParams(r.query).get('q'));
    expect(scanPaths.sort()).toEqual([String(height), hash].sort());
  });

  const lookups = [
    { query: '{ block(height: 0) { hash } }', argument: 'height' },
    { query: '{ transaction(hash: "0x1234") { hash } }', argument: 'hash' },
  ];
  for (const { query, argument } of lookups) {
    it(`rejects ${query} without calling the upstream`, async () => {
      const res = await env.gql(query);
      expect(res.errors?.[0]?.extensions).toEqual({ code: 'BAD_USER_INPUT', argument });
      expect(env.devnet.requests).toHaveLength(0);
    });
  }
});
