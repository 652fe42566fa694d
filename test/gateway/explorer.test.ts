import { describe, expect, it } from 'vitest';
import { ContractsBySymbolDocument, FailedTransactionsDocument } from '../../operations/generated/graphql.js';
import { createGateway } from '../../src/gateway.js';
import { bytesOf, graphql, idOf, testSettings, useGatewayOnDevnet } from './helpers.js';

const env = useGatewayOnDevnet();

const usdt = () => env.devnet.data.contracts.filter((c) => c.symbol === 'USDT');

describe('contractsBySymbol', () => {
  it('forwards the caller’s token and maps the envelope', async () => {
    const res = await env.gql(ContractsBySymbolDocument, {
      variables: { symbol: 'USDT', pageSize: 5 },
      token: env.devnet.token,
    });
    expect(res.errors).toBeUndefined();
    const expected = usdt().slice(0, 5);
    expect(res.data?.contractsBySymbol?.nodes).toEqual(
      expected.map((c) => ({
        id: idOf('Contract', c.symbol, c.chain_id, bytesOf(c.address)),
        address: c.address,
        symbol: c.symbol,
        name: c.name,
        chainId: c.chain_id,
        contractType: c.contract_type,
        decimals: c.decimals,
        totalSupply: c.total_supply,
        holders: c.holders,
        verified: c.verified,
      })),
    );
    expect(res.data?.contractsBySymbol?.pageInfo).toMatchObject({
      total: String(usdt().length),
      pageSize: 5,
    });
    const [req] = env.devnet.requests;
    expect(env.devnet.requests).toHaveLength(1);
    expect(req?.headers.authorization).toBe(`Bearer ${env.devnet.token}`);
    expect(Object.fromEntries(new URLSearchParams(req?.query))).toEqual({
      symbol: 'USDT',
      'pagination.page': '1',
      'pagination.page_size': '5',
    });
  });

  it('exposes the untouched item as raw', async () => {
    const res = await env.gql('{ contractsBySymbol(symbol: "USDT", pageSize: 1) { nodes { raw } } }', {
      token: env.devnet.token,
    });
    // The item as the explorer sent it, read again straight from the devnet with the same request.
    const [req] = env.devnet.requests;
    const direct = await fetch(`${env.devnet.urls.explorer}${req?.path}?${req?.query}`, {
      headers: { authorization: `Bearer ${env.devnet.token}` },
    });
    const { data } = (await direct.json()) as { data: { contracts?: unknown[]; data?: unknown[] } };
    const [sent] = data.contracts ?? data.data ?? [];
    expect(sent).toMatchObject({ name: usdt()[0]?.name });
    expect(res.data?.contractsBySymbol?.nodes[0]?.raw).toEqual(sent);
  });

  it('answers UNAUTHENTICATED without a token and calls no upstream', async () => {
    const res = await env.gql(ContractsBySymbolDocument, { variables: { symbol: 'USDT' } });
    expect(res.data?.contractsBySymbol).toBeNull();
    expect(res.errors?.[0]?.extensions).toEqual({ code: 'UNAUTHENTICATED' });
    expect(env.devnet.requests).toHaveLength(0);
  });

  it('answers UNAUTHENTICATED when the explorer rejects the token, without echoing it', async () => {
    const res = await env.gql(ContractsBySymbolDocument, {
      variables: { symbol: 'USDT' },
      token: 'stolen-token',
    });
    expect(res.errors?.[0]?.extensions).toEqual({ code: 'UNAUTHENTICATED', upstream: 'explorer' });
    expect(JSON.stringify(res)).not.toContain('stolen-token');
  });

  it('falls back to EXPLORER_TOKEN for explorer reads only', async () => {
    const gateway = createGateway({
      ...testSettings({ explorerToken: env.devnet.token }),
      upstreamUrls: env.devnet.urls,
    });
    try {
      const res = await graphql(
        gateway,
        '{ failedTransactions(pageSize: 1) { nodes { hash } } searchSuggestions(query: "1") { query } }',
      );
      expect(res.errors).toBeUndefined();
      const explorer = env.devnet.requests.find((r) => r.service === 'explorer');
      const scan = env.devnet.requests.find((r) => r.service === 'scan');
      expect(explorer?.headers.authorization).toBe(`Bearer ${env.devnet.token}`);
      expect(scan?.headers.authorization).toBeUndefined();
      const write = await graphql(
        gateway,
        'mutation { updateBuybackRound(input: { roundId: "round-006" }) { round { roundId } } }',
      );
      expect(write.errors?.[0]?.extensions).toEqual({ code: 'UNAUTHENTICATED', applied: false });
      expect(env.devnet.requests.filter((r) => r.method === 'PUT')).toHaveLength(0);
    } finally {
      await gateway.close();
    }
  });

  const refusals = [
    { label: 'an empty symbol', variables: { symbol: '' }, argument: 'symbol' },
    { label: 'a symbol with CR/LF', variables: { symbol: 'USDT\r\nX-Injected: 1' }, argument: 'symbol' },
    {
      label: 'a 10 KB chain id',
      variables: { symbol: 'USDT', chainId: 'x'.repeat(10_000) },
      argument: 'chainId',
    },
    { label: 'page 0', variables: { symbol: 'USDT', page: 0 }, argument: 'page' },
    { label: 'pageSize 500', variables: { symbol: 'USDT', pageSize: 500 }, argument: 'pageSize' },
  ];
  for (const { label, variables, argument } of refusals) {
    it(`rejects ${label} before any upstream call`, async () => {
      const res = await env.gql(ContractsBySymbolDocument, { variables, token: env.devnet.token });
      expect(res.errors?.[0]?.extensions).toEqual({ code: 'BAD_USER_INPUT', argument });
      expect(env.devnet.requests).toHaveLength(0);
    });
  }
});

describe('failedTransactions', () => {
  it('lists the devnet’s failures of the last 24 hours, newest first, and follows a cursor', async () => {
    const first = await env.gql(FailedTransactionsDocument, {
      variables: { pageSize: 10 },
      token: env.devnet.token,
    });
    expect(first.errors).toBeUndefined();
    const nodes = first.data?.failedTransactions?.nodes ?? [];
    expect(nodes).toHaveLength(10);
    const { txs } = env.devnet.data;
    for (const n of nodes) {
      const i = (n.txNumber as number) - 1;
      expect(n.hash).toBe(txs.hash[i]);
      expect(txs.failure[i]).toBeGreaterThan(0);
      expect(n.error).toEqual(expect.any(String));
    }
    // The cursor is opaque (contract.md §6): the one the first page handed out, sent back.
    const next = await env.gql(FailedTransactionsDocument, {
      variables: { pageSize: 10, cursor: first.data?.failedTransactions?.pageInfo.endCursor },
      token: env.devnet.token,
    });
    const second = await env.gql(FailedTransactionsDocument, {
      variables: { pageSize: 10, page: 2 },
      token: env.devnet.token,
    });
    expect(next.data?.failedTransactions?.nodes).toEqual(second.data?.failedTransactions?.nodes);
    expect(Number(first.data?.failedTransactions?.pageInfo.total)).toBeGreaterThan(100);
  });
});
