import { parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { operationCost } from '../../src/graphql/plugins/cost.js';
import { encodeBech32 } from '../../src/lib/address.js';
import { schema } from '../../src/schema/index.js';
import { bytesOf, graphql, idOf, useGatewayOnDevnet } from '../gateway/helpers.js';

/**
 * A global id is an argument (contract.md §7): `node(id:)` and `nodes(ids:)` apply the rules of
 * the field the id stands for, and refuse an id that breaks them (BAD_USER_INPUT) before any
 * upstream call; and they are priced by the reads their ids make, so that a list of ids cannot buy
 * a hundred upstream reads for the price of one.
 */

const env = useGatewayOnDevnet();

const NODE = 'query N($id: ID!) { node(id: $id) { id ... on Address { delegations { nodes { shares } } } } }';
const NODES = 'query N($ids: [ID!]!) { nodes(ids: $ids) { id } }';

/** The first delegation of each of `count` delegators: [delegator, its validator's operator address]. */
const delegations = (count: number) =>
  [...env.devnet.data.delegations]
    .slice(0, count)
    .map(([delegator, held]) => [delegator, held[0]?.delegation.validator_address as string] as const);

const operator = () => env.devnet.data.validators[0]?.operator_address as string;

/** A bech32 address with its last character changed: the checksum fails. */
const badChecksum = (address: string) => `${address.slice(0, -1)}${address.endsWith('q') ? 'p' : 'q'}`;

/** Ids a client could forge, each breaking a rule of the field it stands for. */
const hostile = (): [string, string, RegExp][] => {
  const [[delegator, validator]] = delegations(1) as [readonly [string, string]];
  const validatorHex = bytesOf(validator);
  return [
    ['a validator id wrapping a 10 KB address', idOf('Validator', `~${'q'.repeat(10_000)}`), /not an id/],
    ['a validator id holding a NUL', idOf('Validator', '~biyavaloper1\u0000x'), /operatorAddress/],
    [
      'a validator id holding a control character',
      idOf('Validator', '~biyavaloper1\u001fx'),
      /operatorAddress/,
    ],
    [
      'a validator id holding a bech32 address instead of its bytes',
      idOf('Validator', badChecksum(encodeBech32('biyavaloper', validatorHex))),
      /not an id/,
    ],
    [
      'a delegation id whose delegator is a bad bech32',
      idOf('Delegation', `~${badChecksum(encodeBech32('biya', bytesOf(delegator)))}`, validatorHex),
      /delegatorAddress/,
    ],
    [
      'a contract id with a 300-byte symbol',
      idOf('Contract', 'U'.repeat(300), '1', '1'.repeat(40)),
      /symbol/,
    ],
    [
      'a contract id with a NUL in its chain id',
      idOf('Contract', 'USDT', '1\u0000', '1'.repeat(40)),
      /chainId/,
    ],
    ['a block id beyond the heights block(height:) takes', idOf('Block', '2147483648'), /height/],
    ['a failed transaction id with a control character', idOf('FailedTransaction', '12', 'ab\u0007'), /hash/],
    ['an address id that is not an address', idOf('Address', '~biya1\u0000'), /address/],
  ];
};

describe('a global id is an argument', () => {
  it('node(id:) refuses an id that breaks its field’s rules, with no upstream call', async () => {
    for (const [name, id, message] of hostile()) {
      const res = await graphql(env.gateway, NODE, { variables: { id }, token: env.devnet.token });
      expect({ name, data: res.data, errors: res.errors?.map((e) => e.extensions) }).toEqual({
        name,
        data: { node: null },
        errors: [{ code: 'BAD_USER_INPUT', argument: 'id' }],
      });
      expect(res.errors?.[0]?.message).toMatch(message);
    }
    expect(env.devnet.requests).toEqual([]);
  });

  it('nodes(ids:) refuses the whole list for one such id, before reading any of the others', async () => {
    const good = [idOf('Block', '42'), idOf('Validator', bytesOf(operator()))];
    for (const [name, id] of hostile()) {
      const res = await graphql(env.gateway, NODES, {
        variables: { ids: [...good, id] },
        token: env.devnet.token,
      });
      expect({ name, data: res.data, errors: res.errors?.map((e) => e.extensions) }).toEqual({
        name,
        data: null,
        errors: [{ code: 'BAD_USER_INPUT', argument: 'ids' }],
      });
      expect(res.errors?.[0]?.message).toMatch(/ids\[2\]/);
      expect(res.errors?.[0]?.message).toMatch(/none of the ids was read/);
    }
    expect(env.devnet.requests).toEqual([]);
  });

  it('reads an id that keeps the rules (the positive control)', async () => {
    // A key of an unfamiliar form, longer than any argument takes, is one an upstream may name a validator by.
    const ids = [
      idOf('Block', '42'),
      idOf('Validator', '~biyavaloper-unknown'),
      idOf('Validator', `~${'v'.repeat(300)}`),
    ];
    const res = await graphql(env.gateway, NODES, { variables: { ids } });
    expect(res.errors).toBeUndefined();
    expect(res.data.nodes).toEqual([{ id: ids[0] }, null, null]);
    const paths = env.devnet.requests.map((r) => `${r.service} ${r.path}`);
    expect(paths.filter((p) => p.startsWith('scan'))).toEqual(['scan /api/v1/dex/search']);
    expect(paths.filter((p) => p.startsWith('stake'))).toHaveLength(
      Math.ceil(env.devnet.data.validators.length / 100),
    );
  });
});

describe('node(id:) and nodes(ids:) are priced by the reads their ids make', () => {
  const price = (query: string, variables: Record<string, unknown>) =>
    operationCost(schema, parse(query), null, variables);
  const one = (id: string) => price('query N($id: ID!) { node(id: $id) { id } }', { id });
  const many = (ids: unknown[]) => price(NODES, { ids });

  it('charges each kind of id the read it needs', () => {
    const [[delegator, validator]] = delegations(1) as [readonly [string, string]];
    // What the read costs, and 1 for the `id` selected.
    expect(one(idOf('Block', '42'))).toBe(10 + 1);
    expect(one(idOf('Transaction', `0x${'a'.repeat(64)}`))).toBe(10 + 1);
    expect(one(idOf('Validator', bytesOf(operator())))).toBe(10 + 1);
    // A page of 100 delegations: 10 for the call and 1 for each delegation it reads.
    expect(one(idOf('Delegation', bytesOf(delegator), bytesOf(validator)))).toBe(110 + 1);
    expect(one(idOf('Contract', 'USDT', '1', '1'.repeat(40)))).toBe(110 + 1);
    // A failed transaction by its number reads a page of one; by its hash alone, up to 5 pages of 100.
    expect(one(idOf('FailedTransaction', '12', '0xab'))).toBe(11 + 1);
    expect(one(idOf('FailedTransaction', null, '0xab'))).toBe(550 + 1);
    // Nothing is read for an address or a buyback round.
    expect(one(idOf('Address', '1'.repeat(40)))).toBe(1 + 1);
    expect(one(idOf('BuybackRound', 'round-001'))).toBe(1 + 1);
  });

  it('charges an id that cannot be decoded as the dearest read, and never throws', () => {
    for (const id of ['not an id', idOf('Validator', '~\u0000'), idOf('Block'), 'Zm9v', 'x'.repeat(5_000)]) {
      expect(one(id)).toBe(550 + 1);
    }
    expect(many(['not an id', 'not an id either'])).toBe(2 * 550 + 2);
  });

  it('charges a read that several ids share once, as the loaders make it once', () => {
    const [[delegator]] = delegations(1) as [readonly [string, string]];
    const held = env.devnet.data.delegations.get(delegator) ?? [];
    const ids = held.map((d) =>
      idOf('Delegation', bytesOf(delegator), bytesOf(d.delegation.validator_address)),
    );
    expect(many(ids)).toBe(110 + ids.length);
    const validators = env.devnet.data.validators
      .slice(0, 30)
      .map((v) => idOf('Validator', bytesOf(v.operator_address)));
    expect(many(validators)).toBe(10 + 30);
  });

  it('refuses 100 delegators’ delegations under a MAX_COMPLEXITY their old price passed, with no upstream call', async () => {
    // Before: 10 for the field and 1 per id, 110 in all, for 100 staking calls.
    const gateway = env.coldGateway({ limits: loadConfig({ MAX_COMPLEXITY: '1000' }).limits });
    const ids = delegations(100).map(([delegator, validator]) =>
      idOf('Delegation', bytesOf(delegator), bytesOf(validator)),
    );
    const res = await graphql(gateway, NODES, { variables: { ids } });
    expect(res.data).toBeUndefined();
    expect(res.errors?.map((e) => e.extensions)).toEqual([
      { code: 'BAD_USER_INPUT', limit: 'complexity', cost: 100 * 110 + 100 },
    ]);
    expect(env.devnet.requests).toEqual([]);
  });

  it('answers one delegator’s delegations by id under the same limit, with one read of its list', async () => {
    const gateway = env.coldGateway({ limits: loadConfig({ MAX_COMPLEXITY: '1000' }).limits });
    const [[delegator]] = delegations(1) as [readonly [string, string]];
    const held = env.devnet.data.delegations.get(delegator) ?? [];
    const ids = held.map((d) =>
      idOf('Delegation', bytesOf(delegator), bytesOf(d.delegation.validator_address)),
    );
    const res = await graphql(gateway, NODES, { variables: { ids } });
    expect(res.errors).toBeUndefined();
    expect(res.data.nodes.map((n: { id: string }) => n.id)).toEqual(ids);
    expect(env.devnet.requests.filter((r) => r.path.endsWith('/delegations'))).toHaveLength(1);
  });
});
