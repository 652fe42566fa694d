import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateway, type Gateway } from '../../src/gateway.js';
import {
  kratosPagination,
  kratosRound,
  kratosStatistics,
  kratosValidator,
  realContract,
} from '../support/dialect-fixtures.js';
import { graphql, testSettings } from './helpers.js';

/**
 * What the graph makes of upstream values a frontend should not have to decode: statuses as enums
 * (a value the gateway does not know yet is UNSPECIFIED and counted, never an error), and times
 * as DateTime (null when the explorer's text is no RFC 3339 time). The upstreams are a
 * purpose-built server answering in the production services' protojson.
 */

let server: Server;
let gateway: Gateway;

const validators = [
  { ...kratosValidator, id: '1', status: 'BOND_STATUS_BONDED' },
  { ...kratosValidator, id: '2', status: 2 },
  { ...kratosValidator, id: '3', status: '1' },
  { ...kratosValidator, id: '4', status: 7 },
  { ...kratosValidator, id: '5', status: 'BOND_STATUS_RETIRED' },
];

const routes: Record<string, unknown> = {
  '/stake/validators': {
    validators,
    statistics: kratosStatistics,
    pagination: { ...kratosPagination, total: String(validators.length) },
  },
  '/stake/buyback/rounds': { round: { ...kratosRound, status: 9 } },
  '/api/v1/contract/info/by-symbol': {
    code: 0,
    message: 'success',
    data: {
      data: [realContract, { ...realContract, createdAt: 'last Tuesday', updatedAt: undefined }],
      pagination: { ...kratosPagination, total: '2' },
    },
  },
};

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    const body = routes[new URL(req.url ?? '/', 'http://x').pathname];
    res.writeHead(body ? 200 : 404, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body ?? { code: 404, reason: 'NOT_FOUND', message: 'no route', metadata: {} }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  gateway = createGateway({
    ...testSettings(),
    upstreamUrls: { scan: origin, explorer: origin, stake: origin },
  });
});

afterAll(async () => {
  await gateway.close();
  server.closeAllConnections();
  server.close();
});

const unknownCount = async (enumName: string) => {
  const text = await (await gateway.yoga.fetch('http://gateway.test/metrics')).text();
  const line = new RegExp(`^upstream_enum_unknown_values_total\\{enum="${enumName}"\\} (\\d+)$`, 'm').exec(
    text,
  );
  return Number(line?.[1] ?? 0);
};

describe('statuses as enums', () => {
  it('reads bond statuses by number or name; one outside the enum is UNSPECIFIED and counted', async () => {
    const before = await unknownCount('BondStatus');
    const res = await graphql(gateway, '{ validators(pageSize: 10) { nodes { status bondStatus } } }');
    expect(res.errors).toBeUndefined();
    expect(res.data?.validators.nodes).toEqual([
      { status: 3, bondStatus: 'BONDED' },
      { status: 2, bondStatus: 'UNBONDING' },
      { status: 1, bondStatus: 'UNBONDED' },
      { status: 7, bondStatus: 'UNSPECIFIED' },
      { status: 0, bondStatus: 'UNSPECIFIED' },
    ]);
    expect((await unknownCount('BondStatus')) - before).toBe(2);
  });

  it('answers a round state outside the enum as UNSPECIFIED after a write, and counts it', async () => {
    const res = await graphql(
      gateway,
      'mutation { updateBuybackRound(input: { roundId: "round-001", totalSlots: 150 }) { round { status state } } }',
      { token: 'operator-token' },
    );
    expect(res.errors).toBeUndefined();
    expect(res.data?.updateBuybackRound.round).toEqual({ status: 9, state: 'UNSPECIFIED' });
    expect(await unknownCount('BuybackRoundState')).toBe(1);
  });
});

describe('times as DateTime', () => {
  it('gives a contract’s times when they are RFC 3339, and null otherwise', async () => {
    const res = await graphql(
      gateway,
      '{ contractsBySymbol(symbol: "USDT") { nodes { createdAt updatedAt } } }',
      {
        token: 'reader-token',
      },
    );
    expect(res.errors).toBeUndefined();
    expect(res.data?.contractsBySymbol.nodes).toEqual([
      { createdAt: realContract.createdAt, updatedAt: realContract.updatedAt },
      { createdAt: null, updatedAt: null },
    ]);
  });
});
