import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generate } from '../../src/devnet/data.js';
import { createGateway, type Gateway } from '../../src/gateway.js';
import { graphql, testSettings } from './helpers.js';

/**
 * Cursors always round-trip (contract.md §6), whatever the upstream's keys look like: an upstream
 * whose validator, delegation, contract and failed-transaction keys are of forms the gateway does
 * not recognise (not addresses, not numbers) is paged through whole by the cursors the gateway
 * hands out, each upstream key passed back exactly as the upstream sent it.
 */

const data = generate({
  seed: 'odd-keys',
  now: Date.UTC(2026, 10, 24),
  blocks: 50,
  accounts: 40,
  validators: 7,
  delegators: 3,
  contracts: 5,
});
// Keys of unfamiliar forms, longer than any identifier argument the graph takes (128 characters).
const odd = (kind: string, i: number) => `${kind} #${i}/ü?&=${'~'.repeat(150)}`;
const validators = data.validators.map((v, i) => ({ ...v, operator_address: odd('operator', i) }));
const delegations = validators.map((v, i) => ({
  delegation: { validator_address: v.operator_address, shares: `${i + 1}.000000000000000000` },
  balance: { denom: 'ustake', amount: String(i + 1) },
}));
const contracts = Array.from({ length: 7 }, (_, i) => ({
  address: odd('contract', i),
  symbol: 'ODD',
  name: `Odd ${i}`,
}));
const failed = Array.from({ length: 7 }, (_, i) => ({
  hash: `0x${String(i).repeat(64)}`,
  block_height: 100 - i,
  action_index: i,
  error: 'odd',
}));

/** One page of `items` after the item whose key is `cursor` (all of them without one). */
function after<T>(items: T[], key: (item: T) => string, query: URLSearchParams) {
  const size = Number(query.get('pagination.page_size') ?? 20);
  const cursor = query.get('pagination.cursor');
  const start = cursor === null ? 0 : items.findIndex((item) => key(item) === cursor) + 1;
  if (cursor !== null && start === 0) throw new Error(`unknown cursor ${cursor}`);
  const page = items.slice(start, start + size);
  const pagination = {
    page: 1,
    page_size: size,
    total: String(items.length),
    total_pages: Math.ceil(items.length / size),
    has_prev: start > 0,
    has_next: start + size < items.length,
  };
  return { page, pagination };
}

let upstream: Server;
let gateway: Gateway;
/** Every cursor the upstream received, as it received it. */
const cursors: string[] = [];

beforeAll(async () => {
  upstream = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://upstream');
    const cursor = url.searchParams.get('pagination.cursor');
    if (cursor !== null) cursors.push(cursor);
    const send = (body: unknown) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    try {
      if (url.pathname === '/stake/validators') {
        const pagination = {
          page: 1,
          page_size: 100,
          total: '7',
          total_pages: 1,
          has_prev: false,
          has_next: false,
        };
        send({ validators, pagination, statistics: data.statistics });
      } else if (url.pathname === '/stake/delegator/delegations') {
        const { page, pagination } = after(
          delegations,
          (d) => d.delegation.validator_address,
          url.searchParams,
        );
        send({ delegation_responses: page, pagination });
      } else if (url.pathname === '/api/v1/contract/info/by-symbol') {
        const { page, pagination } = after(contracts, (c) => c.address, url.searchParams);
        send({ code: 0, message: 'ok', data: { contracts: page, pagination } });
      } else if (url.pathname === '/api/v1/transaction/failed-24h') {
        const key = (tx: (typeof failed)[number]) => `${tx.block_height}:${tx.action_index}`;
        const { page, pagination } = after(failed, key, url.searchParams);
        send({ code: 0, message: 'ok', data: { transactions: page, pagination } });
      } else res.writeHead(404).end();
    } catch {
      res.writeHead(400, { 'content-type': 'application/json' }).end('{"code":400,"message":"bad cursor"}');
    }
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  gateway = createGateway({ ...testSettings(), upstreamUrls: { scan: url, explorer: url, stake: url } });
});

afterAll(async () => {
  await gateway?.close();
  await new Promise((resolve) => upstream?.close(resolve));
});

const LISTS = [
  {
    name: 'validators',
    field: 'validators(',
    key: 'operatorAddress',
    all: validators.map((v) => v.operator_address),
  },
  {
    name: 'delegations',
    field: `delegations(delegatorAddress: "${data.addresses[0]}",`,
    key: 'validatorAddress',
    all: delegations.map((d) => d.delegation.validator_address),
  },
  {
    name: 'contractsBySymbol',
    field: 'contractsBySymbol(symbol: "ODD",',
    key: 'address',
    all: contracts.map((c) => c.address),
  },
  { name: 'failedTransactions', field: 'failedTransactions(', key: 'hash', all: failed.map((tx) => tx.hash) },
];

describe.each(LISTS)('$name with keys of an unfamiliar form', (list) => {
  it('is paged through whole by the cursors handed out, by `cursor` and by `after`', async () => {
    for (const argument of ['cursor', 'after']) {
      const seen: string[] = [];
      let cursor: string | null = null;
      for (let page = 0; page < 10; page++) {
        const paging: string = `pageSize: 2${cursor === null ? '' : `, ${argument}: ${JSON.stringify(cursor)}`}`;
        const res = await graphql(
          gateway,
          `{ ${list.field} ${paging}) { nodes { key: ${list.key} } pageInfo { hasNextPage endCursor } } }`,
          { token: 'any' },
        );
        expect(res.errors).toBeUndefined();
        const answer = res.data[list.name];
        seen.push(...answer.nodes.map((n: { key: string }) => n.key));
        if (!answer.pageInfo.hasNextPage) break;
        cursor = answer.pageInfo.endCursor;
      }
      expect(seen).toEqual(list.all);
    }
  });
});

it('passes each upstream key back exactly as the upstream sent it', () => {
  expect(cursors).toContain(odd('operator', 1));
  for (const key of cursors) expect(key).not.toMatch(/^c1\./);
});

it('gives objects with keys of an unfamiliar form ids that fetch them back, one id per key', async () => {
  const listed = await graphql(gateway, '{ validators(pageSize: 100) { nodes { id operatorAddress } } }');
  const nodes: { id: string; operatorAddress: string }[] = listed.data.validators.nodes;
  expect(new Set(nodes.map((n) => n.id)).size).toBe(validators.length);
  const fetched = await graphql(
    gateway,
    '{ nodes(ids: $ids) { ... on Validator { id operatorAddress } } }'.replace(
      '$ids',
      JSON.stringify(nodes.map((n) => n.id)),
    ),
  );
  expect(fetched.errors).toBeUndefined();
  expect(fetched.data.nodes).toEqual(nodes);
});
