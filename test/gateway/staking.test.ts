import { describe, expect, it } from 'vitest';
import { DelegatorPortfolioDocument, ValidatorTableDocument } from '../../operations/generated/graphql.js';
import { createGateway } from '../../src/gateway.js';
import { ValidatorCache, ValidatorDirectory } from '../../src/schema/loaders.js';
import type { ValidatorStatistics } from '../../src/upstream/models.js';
import { bytesOf, graphql, idOf, testSettings, useGatewayOnDevnet } from './helpers.js';

const env = useGatewayOnDevnet();
/** A canonical devnet address as staking sends it, and so as the graph shows it, in this dialect. */
const onWire = (canonical: string | undefined) => env.devnet.stakeAddress(canonical as string);
/** The graph's BondStatus by the devnet's status number (Cosmos SDK 0 … 3). */
const BOND_STATUSES = ['UNSPECIFIED', 'UNBONDED', 'UNBONDING', 'BONDED'] as const;

const byPower = () =>
  [...env.devnet.data.validators].sort((a, b) => {
    const d = BigInt(b.tokens) - BigInt(a.tokens);
    return d > 0n ? 1 : d < 0n ? -1 : Number(a.id) - Number(b.id);
  });

describe('validators', () => {
  it('pages the whole list in the upstream’s order, with camelCase fields and nested commission', async () => {
    const res = await env.gql(ValidatorTableDocument, { variables: { page: 2, pageSize: 30 } });
    expect(res.errors).toBeUndefined();
    const expected = byPower().slice(30, 60);
    const page = res.data?.validators;
    const { endCursor, ...pageInfo } = page?.pageInfo ?? {};
    expect(pageInfo).toEqual({
      page: 2,
      pageSize: 30,
      total: String(env.devnet.data.validators.length),
      totalPages: Math.ceil(env.devnet.data.validators.length / 30),
      hasPreviousPage: true,
      hasNextPage: true,
    });
    // The end cursor, passed back, continues after the last validator of the page.
    const next = await env.gql(
      'query($c: String) { validators(pageSize: 1, cursor: $c) { nodes { operatorAddress } } }',
      { variables: { c: endCursor } },
    );
    expect(next.data?.validators?.nodes.map((v: { operatorAddress: string }) => v.operatorAddress)).toEqual([
      onWire(byPower()[60]?.operator_address),
    ]);
    expect(page?.nodes.map((v) => v.operatorAddress)).toEqual(
      expected.map((v) => onWire(v.operator_address)),
    );
    const [first] = expected;
    expect(page?.nodes[0]).toEqual({
      id: idOf('Validator', bytesOf(first?.operator_address as string)),
      moniker: first?.moniker,
      operatorAddress: onWire(first?.operator_address),
      bondStatus: BOND_STATUSES[first?.status ?? 0],
      jailed: first?.jailed,
      tokens: first?.tokens,
      delegatorShares: first?.delegator_shares,
      uptimePercentage: first?.uptime_percentage,
      delegationCount: first?.delegation_count,
      imageUrl: first?.image_url,
      commission: {
        rate: first?.commission_rate,
        maxRate: first?.commission_max_rate,
        maxChangeRate: first?.commission_max_change_rate,
        updateTime: first?.commission_update_time,
      },
    });
    expect(res.data?.validatorStatistics).toEqual({
      totalValidators: env.devnet.data.statistics.total_validators,
      activeValidators: env.devnet.data.statistics.active_validators,
      totalStakedAmount: env.devnet.data.statistics.total_staked_amount,
      annualizedRewardRate: env.devnet.data.statistics.annualized_reward_rate,
    });
  });

  it('reads the list once per request, all pages of 100 concurrently, whatever needs it', async () => {
    const operator = env.devnet.data.validators[3]?.operator_address;
    const res = await graphql(
      env.coldGateway(),
      `{
      validators(pageSize: 1) { nodes { moniker } }
      validator(operatorAddress: "${operator}") { moniker }
      validatorStatistics { totalValidators }
      block(height: 10) { proposerValidator { moniker } }
    }`,
    );
    expect(res.errors).toBeUndefined();
    const validatorCalls = env.devnet.requests.filter((r) => r.path === '/stake/validators');
    const pages = Math.ceil(env.devnet.data.validators.length / 100);
    expect(validatorCalls.map((r) => r.query).sort()).toEqual(
      Array.from(
        { length: pages },
        (_, i) => `pagination.page=${i + 1}&pagination.page_size=100&page=${i + 1}&pageSize=100`,
      ).sort(),
    );
  });

  it('finds a validator by operator, consensus or wallet address in either encoding, and answers null for an unknown one', async () => {
    const v = env.devnet.data.validators[7];
    const addresses = [v?.operator_address, v?.consensus_address, v?.wallet_address];
    // Each in the devnet's canonical encoding and as staking sends it (the same text in `spec`).
    for (const address of addresses.flatMap((a) => [a, onWire(a)])) {
      const res = await env.gql(`{ validator(operatorAddress: "${address}") { operatorAddress } }`);
      expect(res.data?.validator).toEqual({ operatorAddress: onWire(v?.operator_address) });
    }
    const unknown = await env.gql('{ validator(operatorAddress: "stakevaloper1nobody") { moniker } }');
    expect(unknown.errors).toBeUndefined();
    expect(unknown.data?.validator).toBeNull();
  });

  const pages = [
    { query: '{ validators(page: 0) { nodes { moniker } } }', argument: 'page' },
    { query: '{ validators(pageSize: 101) { nodes { moniker } } }', argument: 'pageSize' },
    { query: '{ validators(pageSize: 0) { nodes { moniker } } }', argument: 'pageSize' },
  ];
  for (const { query, argument } of pages) {
    it(`rejects ${query} before any upstream call`, async () => {
      const res = await env.gql(query);
      expect(res.errors?.[0]?.extensions).toEqual({ code: 'BAD_USER_INPUT', argument });
      expect(env.devnet.requests).toHaveLength(0);
    });
  }
});

describe('delegations', () => {
  const richDelegator = () => {
    for (const [address, list] of env.devnet.data.delegations)
      if (list.length >= 20) return { address, list };
    throw new Error('no delegator with 20 delegations');
  };

  it('joins each delegation to its validator with exactly one delegations call and one validator list read', async () => {
    const { address, list } = richDelegator();
    const res = await graphql(env.coldGateway(), DelegatorPortfolioDocument, {
      variables: { delegator: address, first: 20 },
    });
    expect(res.errors).toBeUndefined();
    const nodes = res.data?.delegations?.nodes ?? [];
    expect(nodes).toHaveLength(20);
    nodes.forEach((node, i) => {
      const record = list[i];
      const validator = env.devnet.data.validators.find(
        (v) => v.operator_address === record?.delegation.validator_address,
      );
      const validatorBytes = bytesOf(record?.delegation.validator_address as string);
      expect(node).toEqual({
        id: idOf('Delegation', bytesOf(address), validatorBytes),
        validatorAddress: onWire(record?.delegation.validator_address),
        shares: record?.delegation.shares,
        balance: record?.balance,
        validator: {
          id: idOf('Validator', validatorBytes),
          moniker: validator?.moniker,
          bondStatus: BOND_STATUSES[validator?.status ?? 0],
          jailed: validator?.jailed,
          commission: { rate: validator?.commission_rate },
        },
      });
    });
    expect(res.data?.delegations?.pageInfo).toEqual({
      page: 1,
      pageSize: 20,
      total: String(list.length),
      totalPages: Math.ceil(list.length / 20),
      hasNextPage: list.length > 20,
      // Opaque: the cursor of the last edge.
      endCursor: res.data?.delegations?.edges.at(-1)?.cursor,
    });
    expect(res.data?.delegations?.edges).toHaveLength(20);
    const delegationCalls = env.devnet.requests.filter((r) => r.path === '/stake/delegator/delegations');
    const validatorPages = env.devnet.requests.filter((r) => r.path === '/stake/validators');
    expect(delegationCalls).toHaveLength(1);
    expect(new URLSearchParams(delegationCalls[0]?.query).get('delegator_address')).toBe(onWire(address));
    expect(validatorPages).toHaveLength(Math.ceil(env.devnet.data.validators.length / 100));
    expect(env.devnet.requests).toHaveLength(1 + validatorPages.length);
  });

  it('passes page, page size and cursor under their REST names', async () => {
    const { address, list } = richDelegator();
    // The cursor of the fifth delegation, as the gateway hands it out.
    const first = await env.gql(
      `query($a: String!) { delegations(delegatorAddress: $a, pageSize: 5) { pageInfo { endCursor } } }`,
      { variables: { a: address } },
    );
    const cursor = onWire(list[4]?.delegation.validator_address);
    env.devnet.resetRecords();
    const res = await env.gql(
      `query($a: String!, $c: String) { delegations(delegatorAddress: $a, page: 3, pageSize: 5, cursor: $c) { pageInfo { page hasPreviousPage } nodes { validatorAddress } } }`,
      { variables: { a: address, c: first.data?.delegations?.pageInfo.endCursor } },
    );
    expect(res.data?.delegations?.nodes.map((n: { validatorAddress: string }) => n.validatorAddress)).toEqual(
      list.slice(5, 10).map((d) => onWire(d.delegation.validator_address)),
    );
    const query = new URLSearchParams(env.devnet.requests[0]?.query);
    expect(Object.fromEntries(query)).toEqual({
      delegator_address: onWire(address),
      'pagination.page': '3',
      'pagination.page_size': '5',
      'pagination.cursor': cursor,
    });
  });

  it('rejects an empty or oversized delegator address before any upstream call', async () => {
    for (const a of ['', 'x'.repeat(129)]) {
      const res = await env.gql(
        'query($a: String!) { delegations(delegatorAddress: $a) { nodes { shares } } }',
        {
          variables: { a },
        },
      );
      expect(res.errors?.[0]?.extensions).toEqual({ code: 'BAD_USER_INPUT', argument: 'delegatorAddress' });
    }
    expect(env.devnet.requests).toHaveLength(0);
  });
});

describe('shared validator cache', () => {
  it('lets a warm gateway answer the portfolio with the delegations call alone', async () => {
    const gateway = createGateway({
      ...testSettings({ validatorCacheTtlMs: 60_000 }),
      upstreamUrls: env.devnet.urls,
    });
    try {
      const [address] = [...env.devnet.data.delegations.keys()];
      const run = (cold?: boolean) =>
        graphql(gateway, DelegatorPortfolioDocument, { variables: { delegator: address }, cold });
      const cold = await run(true);
      const coldCalls = env.devnet.requests.length;
      env.devnet.resetRecords();
      const warm = await run();
      expect(warm.data).toEqual(cold.data);
      expect(coldCalls).toBe(1 + Math.ceil(env.devnet.data.validators.length / 100));
      expect(env.devnet.requests.map((r) => r.path)).toEqual(['/stake/delegator/delegations']);
    } finally {
      await gateway.close();
    }
  });

  it('shares one fetch among concurrent misses, expires after its TTL and never keeps a failure', async () => {
    let now = 0;
    const cache = new ValidatorCache(5_000, () => now);
    let fetches = 0;
    let fail = false;
    const fetch = async () => {
      fetches++;
      if (fail) throw new Error('upstream down');
      return { validators: [], statistics: {} as ValidatorStatistics };
    };
    await Promise.all([cache.get(fetch), cache.get(fetch), cache.get(fetch)]);
    expect(fetches).toBe(1);
    now = 4_999;
    // Once fetched, a fresh list is handed out as it is: a join answers its rows synchronously.
    expect(cache.get(fetch)).toBeInstanceOf(ValidatorDirectory);
    expect(fetches).toBe(1);
    now = 5_001;
    fail = true;
    await expect(cache.get(fetch)).rejects.toThrow('upstream down');
    fail = false;
    await cache.get(fetch);
    expect(fetches).toBe(3);
  });
});

describe('public response cache', () => {
  it('reuses whole public responses (search suggestions too, until the next block), never token-bound ones', async () => {
    const gateway = createGateway({
      ...testSettings({ responseCacheTtlMs: 60_000 }),
      upstreamUrls: env.devnet.urls,
    });
    try {
      const table =
        '{ validators(pageSize: 3) { nodes { moniker } } validatorStatistics { totalValidators } }';
      const first = await graphql(gateway, table, { cold: true });
      const reads = env.devnet.requests.length;
      expect(reads).toBeGreaterThan(0);
      expect(await graphql(gateway, table)).toEqual(first);
      expect(env.devnet.requests).toHaveLength(reads);

      env.devnet.resetRecords();
      for (const token of ['token-a', 'token-b']) {
        await graphql(gateway, '{ contractsBySymbol(symbol: "USDT") { nodes { address } } }', { token });
      }
      await graphql(gateway, '{ searchSuggestions(query: "12") { query } }', { cold: true });
      await graphql(gateway, '{ searchSuggestions(query: "12") { query } }');
      expect(env.devnet.requests.map((r) => [r.service, r.headers.authorization ?? null])).toEqual([
        ['explorer', 'Bearer token-a'],
        ['explorer', 'Bearer token-b'],
        ['scan', null],
      ]);
    } finally {
      await gateway.close();
    }
  });
});
