import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createGateway } from '../../src/gateway.js';
import { bytesOf, graphql, hideWarmUpsFrom, idOf, testSettings, useGatewayOnDevnet } from './helpers.js';

/**
 * Global object identification (contract.md §6), in every dialect: every entity has an opaque,
 * stable id, the same whichever dialect or address encoding the upstream used (the expected ids
 * here are computed from the devnet's canonical data, so every dialect's project checks the same
 * values), and node(id:) / nodes(ids:) fetch entities back.
 */

const env = useGatewayOnDevnet();

const bytes = bytesOf;

const richest = () =>
  [...env.devnet.data.delegations].reduce((best, entry) => (entry[1].length > best[1].length ? entry : best));

describe('ids', () => {
  it('are the same for the same chain object in every dialect, and fetch it back', async () => {
    const { data } = env.devnet;
    const [delegator, held] = richest();
    const validator = data.validators[3];
    const height = 42;
    const hash = data.txs.hash[10] as string;
    const res = await env.gql(
      `query Ids($d: String!, $h: Int!, $tx: String!, $v: String!) {
        block(height: $h) { id proposerValidator { id } }
        transaction(hash: $tx) { id }
        validator(operatorAddress: $v) { id recordId }
        delegations(delegatorAddress: $d, pageSize: 1) { nodes { id validator { id } } }
      }`,
      { variables: { d: delegator, h: height, tx: hash, v: validator?.operator_address } },
    );
    expect(res.errors).toBeUndefined();
    const proposer = data.validators[data.blocks.proposer[height - 1] as number];
    expect(res.data.block.id).toBe(idOf('Block', String(height)));
    expect(res.data.block.proposerValidator.id).toBe(
      idOf('Validator', bytes(proposer?.operator_address as string)),
    );
    expect(res.data.transaction.id).toBe(idOf('Transaction', hash));
    expect(res.data.validator).toEqual({
      id: idOf('Validator', bytes(validator?.operator_address as string)),
      recordId: validator?.id,
    });
    const first = held[0]?.delegation.validator_address as string;
    expect(res.data.delegations.nodes[0]).toEqual({
      id: idOf('Delegation', bytes(delegator), bytes(first)),
      validator: { id: idOf('Validator', bytes(first)) },
    });

    const ids = [
      res.data.block.id,
      res.data.transaction.id,
      res.data.validator.id,
      res.data.delegations.nodes[0].id,
      idOf('Address', bytes(delegator)),
    ];
    const back = await env.gql(
      `query Back($ids: [ID!]!) { nodes(ids: $ids) {
        id __typename
        ... on Block { height } ... on Transaction { hash } ... on Validator { recordId }
        ... on Delegation { shares } ... on Address { address }
      } }`,
      { variables: { ids } },
    );
    expect(back.errors).toBeUndefined();
    expect(back.data.nodes).toEqual([
      { id: ids[0], __typename: 'Block', height },
      { id: ids[1], __typename: 'Transaction', hash },
      { id: ids[2], __typename: 'Validator', recordId: validator?.id },
      { id: ids[3], __typename: 'Delegation', shares: held[0]?.delegation.shares },
      { id: ids[4], __typename: 'Address', address: delegator.toLowerCase() },
    ]);
  });

  it('resolves many validators with one read of the validator list', async () => {
    const ids = env.devnet.data.validators
      .slice(0, 30)
      .map((v) => idOf('Validator', bytes(v.operator_address)));
    // A gateway whose validator list starts cold, whatever the project's cache settings.
    const cold = env.coldGateway({ validatorCacheTtlMs: 0 });
    const res = await graphql(
      cold,
      'query V($ids: [ID!]!) { nodes(ids: $ids) { id ... on Validator { moniker } } }',
      {
        variables: { ids },
      },
    );
    expect(res.data.nodes.map((n: { id: string }) => n.id)).toEqual(ids);
    // The whole list is read once (in pages of 100), whatever the number of ids.
    expect(env.devnet.requests.filter((r) => r.service === 'stake')).toHaveLength(
      Math.ceil(env.devnet.data.validators.length / 100),
    );
  });

  it('finds contracts and failed transactions with the caller’s token, and refuses them without one', async () => {
    const page = await env.gql(
      '{ contractsBySymbol(symbol: "USDT", pageSize: 2) { nodes { id address } } failedTransactions(pageSize: 2) { nodes { id hash } } }',
      { token: env.devnet.token },
    );
    const ids = [...page.data.contractsBySymbol.nodes, ...page.data.failedTransactions.nodes].map(
      (n: { id: string }) => n.id,
    );
    const query = `query N($ids: [ID!]!) { nodes(ids: $ids) { id ... on Contract { address } ... on FailedTransaction { hash } } }`;
    const back = await env.gql(query, { variables: { ids }, token: env.devnet.token });
    expect(back.errors).toBeUndefined();
    expect(back.data.nodes).toEqual([
      ...page.data.contractsBySymbol.nodes,
      ...page.data.failedTransactions.nodes,
    ]);
    env.devnet.resetRecords();
    const refused = await env.gql(query, { variables: { ids } });
    expect(refused.data.nodes).toEqual([null, null, null, null]);
    expect(refused.errors?.map((e) => e.extensions.code)).toEqual([
      'UNAUTHENTICATED',
      'UNAUTHENTICATED',
      'UNAUTHENTICATED',
      'UNAUTHENTICATED',
    ]);
    expect(env.devnet.requests).toHaveLength(0);
  });

  it('answers null for an id of nothing, and for a buyback round (the staking service reads none back)', async () => {
    const res = await env.gql('query N($ids: [ID!]!) { nodes(ids: $ids) { id } }', {
      variables: { ids: [idOf('Block', '99999999'), idOf('BuybackRound', 'round-001')] },
    });
    expect(res.errors).toBeUndefined();
    expect(res.data.nodes).toEqual([null, null]);
  });

  it('refuses a malformed or foreign id, and more than 100, before any upstream call', async () => {
    for (const [id, argument] of [
      ['not an id', 'id'],
      [Buffer.from('User:1').toString('base64url'), 'id'],
      [idOf('Block', 'minus one'), 'id'],
      [idOf('Validator', 'biyavaloper1xyz'), 'id'],
    ] as const) {
      const res = await env.gql('query N($id: ID!) { node(id: $id) { id } }', { variables: { id } });
      expect(res.errors?.[0]?.extensions).toEqual({ code: 'BAD_USER_INPUT', argument });
    }
    const many = Array.from({ length: 101 }, (_, i) => idOf('Block', String(i + 1)));
    const res = await env.gql('query N($ids: [ID!]!) { nodes(ids: $ids) { id } }', {
      variables: { ids: many },
    });
    expect(res.errors?.[0]?.extensions).toEqual({ code: 'BAD_USER_INPUT', argument: 'ids' });
    expect(env.devnet.requests).toHaveLength(0);
  });
});

/**
 * An explorer on 127.0.0.1 that answers as the devnet's does, with every `tx_number` taken out of
 * its answers (upstream-api.md's `data` is free-form: nothing promises one), recording each request.
 * Made `endless`, it says of every page that another follows.
 */
async function explorerWithoutTxNumbers(target: string) {
  const requests: { url: string; headers: IncomingHttpHeaders }[] = [];
  let endless = false;
  const strip = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(strip);
    if (value === null || typeof value !== 'object') return value;
    return Object.fromEntries(
      Object.entries(value)
        .filter(([name]) => name !== 'tx_number' && name !== 'txNumber')
        .map(([name, inner]) => [name, endless && /^has_?next$/i.test(name) ? true : strip(inner)]),
    );
  };
  const server = createServer(async (req, res) => {
    requests.push({ url: req.url ?? '', headers: req.headers });
    const authorization = req.headers.authorization;
    const upstream = await fetch(
      target + (req.url ?? '/'),
      authorization ? { headers: { authorization } } : {},
    );
    const body = strip(await upstream.json());
    res.writeHead(upstream.status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  hideWarmUpsFrom({ requests });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    makeEndless: () => {
      endless = true;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('a failed transaction without a tx_number', () => {
  it('is found by its id: its hash, in the 24-hour list, read with the caller’s token', async () => {
    const explorer = await explorerWithoutTxNumbers(env.devnet.urls.explorer);
    const gateway = createGateway({
      ...testSettings(),
      upstreamUrls: { ...env.devnet.urls, explorer: explorer.url },
    });
    const token = env.devnet.token;
    try {
      const list = await graphql(
        gateway,
        '{ failedTransactions(pageSize: 3) { nodes { id hash txNumber } pageInfo { total } } }',
        { token },
      );
      const target = list.data.failedTransactions.nodes[2];
      expect(target.txNumber).toBeNull();
      expect(target.id).toBe(idOf('FailedTransaction', null, target.hash));
      explorer.requests.length = 0;

      const query = 'query N($id: ID!) { node(id: $id) { id ... on FailedTransaction { hash } } }';
      const res = await graphql(gateway, query, { variables: { id: target.id }, token });
      expect(res.errors).toBeUndefined();
      expect(res.data.node).toEqual({ id: target.id, hash: target.hash });
      // The first page of 100 holds it: one read, with the caller's token.
      expect(explorer.requests.map((r) => [r.url.split('?')[0], r.headers.authorization])).toEqual([
        ['/api/v1/transaction/failed-24h', `Bearer ${token}`],
      ]);

      // A hash that is not in the list: the newest pages are read (at most 5 of 100), then null.
      explorer.requests.length = 0;
      const missing = idOf('FailedTransaction', null, `0x${'f'.repeat(64)}`);
      const none = await graphql(gateway, query, { variables: { id: missing }, token });
      expect(none.errors).toBeUndefined();
      expect(none.data.node).toBeNull();
      const pages = Math.min(5, Math.ceil(Number(list.data.failedTransactions.pageInfo.total) / 100));
      expect(explorer.requests).toHaveLength(pages);

      // However long the list: 5 pages, no more.
      explorer.makeEndless();
      explorer.requests.length = 0;
      const endless = await graphql(gateway, query, { variables: { id: missing }, token });
      expect(endless.data.node).toBeNull();
      expect(
        explorer.requests.map((r) => new URL(r.url, explorer.url).searchParams.get('pagination.page')),
      ).toEqual(['1', '2', '3', '4', '5']);

      // Without a token: UNAUTHENTICATED, and the explorer is not called.
      explorer.requests.length = 0;
      const refused = await graphql(gateway, query, { variables: { id: target.id } });
      expect(refused.data.node).toBeNull();
      expect(refused.errors?.map((e) => e.extensions.code)).toEqual(['UNAUTHENTICATED']);
      expect(explorer.requests).toEqual([]);
    } finally {
      await gateway.close();
      await explorer.close();
    }
  });
});
