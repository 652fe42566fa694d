import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { UpstreamError } from '../../src/errors.js';
import { camelKeys, field, int, int64, type Obj } from '../../src/upstream/decode.js';
import { baseUrl, createUpstreams, type Upstreams } from '../../src/upstream/index.js';
import {
  BIG,
  kratosPagination,
  kratosRound,
  kratosStatistics,
  kratosValidator,
  realContract,
  realFailed,
  specContract,
  specFailed,
  specPagination,
  specRound,
  specStatistics,
  specValidator,
} from '../support/dialect-fixtures.js';

/**
 * Both upstream dialects through the real clients, over HTTP from a purpose-built server: each
 * object in upstream-api.md's snake_case and in the production services' protojson (hand-written
 * below, as real-upstreams.md describes it) must decode to the same model.
 */

let server: Server;
let upstreams: Upstreams;
const answers = new Map<string, { status: number; body: unknown }>();
const requests: { path: string; query: URLSearchParams; body?: string }[] = [];

beforeAll(async () => {
  server = createServer(async (req: IncomingMessage, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    let body = '';
    for await (const chunk of req) body += chunk;
    requests.push({ path: url.pathname, query: url.searchParams, ...(body ? { body } : {}) });
    const answer = answers.get(url.pathname) ?? { status: 404, body: { code: 404, message: 'nope' } };
    res.writeHead(answer.status, { 'content-type': 'application/json' });
    res.end(typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  upstreams = createUpstreams({
    urls: { scan: origin, explorer: `${origin}/`, stake: `${origin}/stake/` },
    timeoutMs: 1000,
    connections: 2,
    resilience: { failureThreshold: 1000, halfOpenAfterMs: 1000 },
    dialects: loadConfig({}).dialects,
  });
});

afterAll(async () => {
  await upstreams.close();
  server.closeAllConnections();
  server.close();
});

const answer = (path: string, body: unknown, status = 200) => {
  answers.set(path, { status, body });
  requests.length = 0;
};

const rejection = async (promise: Promise<unknown>): Promise<UpstreamError> => {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(UpstreamError);
  return error as UpstreamError;
};

describe('decoding primitives', () => {
  it('renames keys to camelCase at every depth, copies only what changes, never touches the input', () => {
    const input = { a_b: [{ c_d: 1, e: { f_g_h: true } }], ok: { x: 1 }, rewards_24h: '1' };
    const frozen = JSON.stringify(input);
    const out = camelKeys(input) as Obj;
    expect(out).toEqual({ aB: [{ cD: 1, e: { fGH: true } }], ok: { x: 1 }, rewards24h: '1' });
    expect(out.ok).toBe(input.ok);
    expect(JSON.stringify(input)).toBe(frozen);
    const camel = { already: { camelCase: [1, 2] } };
    expect(camelKeys(camel)).toBe(camel);
  });

  it('reads a member by its camelCase name in either spelling, camelCase first, as camelKeys would rename it', () => {
    const snake = {
      operator_address: 'a',
      rewards_24h: '1',
      slashing_events_24h: '2',
      commission_max_change_rate: '3',
    };
    const renamed = camelKeys(snake) as Obj;
    for (const key of ['operatorAddress', 'rewards24h', 'slashingEvents24h', 'commissionMaxChangeRate']) {
      expect(field(snake, key), key).toBe(renamed[key]);
      expect(renamed[key], key).toEqual(expect.any(String));
    }
    expect(field({ operatorAddress: 'camel', operator_address: 'snake' }, 'operatorAddress')).toBe('camel');
    expect(field({ operator_address: 'snake', operatorAddress: 'camel' }, 'operatorAddress')).toBe('camel');
    expect(camelKeys({ operator_address: 'snake', operatorAddress: 'camel' })).toEqual({
      operatorAddress: 'camel',
    });
    expect(field({}, 'operatorAddress')).toBeUndefined();
  });

  it('keeps 64-bit integers beyond 2^53 exact as text, and refuses them where a number is needed', () => {
    expect(int64({ n: BIG }, 'n')).toBe(BIG);
    expect(int64({ n: 812 }, 'n')).toBe('812');
    expect(() => int64({ n: 2 ** 53 + 2 }, 'n')).toThrow('not a 64-bit integer');
    expect(() => int64({ n: '1.5' }, 'n')).toThrow('not a 64-bit integer');
    expect(int({ n: '812' }, 'n')).toBe(812);
    expect(() => int({ n: BIG }, 'n')).toThrow('not an integer');
  });

  it('strips one trailing /stake and any trailing slash from a staking base URL, and keeps an explorer prefix', () => {
    expect(baseUrl('stake', 'https://stake.example/stake/')).toBe('https://stake.example');
    expect(baseUrl('stake', 'https://stake.example')).toBe('https://stake.example');
    expect(baseUrl('explorer', 'https://explorer.example/demo/')).toBe('https://explorer.example/demo');
  });
});

describe('staking in both dialects', () => {
  const list = (validator: unknown, statistics: unknown, pagination: unknown, snake: boolean) =>
    snake
      ? { validators: [validator], pagination, statistics }
      : { validators: [validator], statistics, pagination };

  it('reads the validator list bare in snake_case and enveloped in protojson alike', async () => {
    answer('/stake/validators', list(specValidator, specStatistics, specPagination, true));
    const spec = await upstreams.stake.allValidators();
    answer('/stake/validators', {
      code: 0,
      message: 'success',
      data: list(kratosValidator, kratosStatistics, kratosPagination, false),
    });
    const kratos = await upstreams.stake.allValidators();
    expect(kratos).toEqual(spec);
    expect(spec.validators[0]).toMatchObject({
      status: 3,
      unbondingHeight: BIG,
      proposed: '812',
      tokens: '123456789012345678901234',
      commission: { rate: '0.050000000000000000', updateTime: '2026-01-02T03:04:05Z' },
    });
    // The path is /stake/validators although STAKE_URL ends in /stake/; both page spellings go.
    expect(requests.map((r) => [r.path, Object.fromEntries(r.query)])).toEqual([
      [
        '/stake/validators',
        { 'pagination.page': '1', 'pagination.page_size': '100', page: '1', pageSize: '100' },
      ],
    ]);
  });

  it('reads delegations in both spellings and calls staking with the account encoding it showed', async () => {
    answer('/stake/delegator/delegations', {
      delegation_responses: [
        {
          delegation: { delegator_address: 'x', validator_address: 'v1', shares: '10.5' },
          balance: { denom: 'byb', amount: BIG },
        },
      ],
      pagination: { ...specPagination, total: 1 },
    });
    const spec = await upstreams.stake.delegations('0x0102030405060708090a0b0c0d0e0f1011121314', {
      page: 1,
      pageSize: 20,
    });
    answer('/stake/delegator/delegations', {
      delegationResponses: [
        {
          delegation: { delegatorAddress: 'x', validatorAddress: 'v1', shares: '10.5' },
          balance: { denom: 'byb', amount: BIG },
        },
      ],
      pagination: kratosPagination,
    });
    const kratos = await upstreams.stake.delegations('biya1qypqxpq9qcrsszg2pvxq6rs0zqg3yyc5qfjqnl', {
      page: 1,
      pageSize: 20,
    });
    // Each page names the delegator as it was asked for; the rest reads the same in both spellings.
    expect(kratos).toEqual({
      ...spec,
      nodes: [{ ...spec.nodes[0], delegatorAddress: 'biya1qypqxpq9qcrsszg2pvxq6rs0zqg3yyc5qfjqnl' }],
    });
    expect(spec.nodes[0]).toEqual({
      delegatorAddress: '0x0102030405060708090a0b0c0d0e0f1011121314',
      validatorAddress: 'v1',
      shares: '10.5',
      balance: { denom: 'byb', amount: BIG },
    });
    // The validator list above showed `byb1…` wallets: a biya1… address goes as byb1…, same bytes.
    expect(requests[0]?.query.get('delegator_address')).toBe('byb1qypqxpq9qcrsszg2pvxq6rs0zqg3yyc5ghea64');
  });

  it('reads an updated round in both spellings, statuses by number or name', async () => {
    answer('/stake/buyback/rounds', { round: specRound });
    const spec = await upstreams.stake.updateBuybackRound({ roundId: 'round-001', totalSlots: 150 }, 't');
    answer('/stake/buyback/rounds', { code: 0, message: 'success', data: { round: kratosRound } });
    const kratos = await upstreams.stake.updateBuybackRound({ roundId: 'round-001', totalSlots: 150 }, 't');
    expect(kratos).toEqual(spec);
    expect(spec).toMatchObject({ roundId: 'round-001', status: 2, bookedSlots: 12, totalSlots: 150 });
    expect(JSON.parse(requests[0]?.body ?? '{}')).toEqual({ round_id: 'round-001', total_slots: 150 });
  });

  it('maps Kratos error bodies to the contract codes without their text', async () => {
    const kratosError = (code: number, reason: string) => ({
      code,
      reason,
      message: 'SELECT secret FROM rounds',
      metadata: {},
    });
    answer('/stake/buyback/rounds', kratosError(404, 'ROUND_NOT_FOUND'), 404);
    const missing = await rejection(upstreams.stake.updateBuybackRound({ roundId: 'round-404' }, 't'));
    expect(missing.extensions).toEqual({ code: 'BAD_USER_INPUT', upstream: 'stake', applied: false });
    expect(missing.message).toBe('No buyback round with roundId "round-404".');
    answer('/stake/buyback/rounds', kratosError(401, 'UNAUTHORIZED'), 401);
    const refused = await rejection(upstreams.stake.updateBuybackRound({ roundId: 'round-001' }, 't'));
    expect(refused.extensions).toEqual({ code: 'UNAUTHENTICATED', upstream: 'stake', applied: false });
    expect(refused.message).not.toContain('SELECT');
  });

  it('says an update was applied when a 2xx answer cannot be read', async () => {
    for (const body of [
      '<html>ok</html>',
      { round: { roundId: 'round-001' } },
      { code: 0, message: 'success', data: [] },
    ]) {
      answer('/stake/buyback/rounds', body);
      const error = await rejection(upstreams.stake.updateBuybackRound({ roundId: 'round-001' }, 't'));
      expect(error.extensions).toEqual({ code: 'UPSTREAM_ERROR', upstream: 'stake', applied: true });
      expect(requests).toHaveLength(1);
    }
    answer('/stake/buyback/rounds', { code: 404, message: 'no such round', data: null });
    const refused = await rejection(upstreams.stake.updateBuybackRound({ roundId: 'round-009' }, 't'));
    expect(refused.extensions).toEqual({ code: 'BAD_USER_INPUT', upstream: 'stake', applied: false });
  });
});

describe('the explorer in both item shapes', () => {
  const envelope = (code: number, data: unknown) => ({ code, message: 'success', data });

  it('maps the production contract names onto the same fields as the devnet’s, and keeps raw untouched', async () => {
    answer(
      '/api/v1/contract/info/by-symbol',
      envelope(0, { contracts: [specContract], pagination: specPagination }),
    );
    const spec = await upstreams.explorer.contractsBySymbol({ symbol: 'USDT', page: 1, pageSize: 20 }, 't');
    answer(
      '/api/v1/contract/info/by-symbol',
      envelope(200, {
        data: [realContract],
        pagination: { page: 1, pageSize: 100, total: 1, hasNext: false },
      }),
    );
    const real = await upstreams.explorer.contractsBySymbol({ symbol: 'USDT', page: 1, pageSize: 20 }, 't');
    const { raw: specRaw, ...specFields } = spec.nodes[0] ?? {};
    const { raw: realRaw, ...realFields } = real.nodes[0] ?? {};
    expect(realFields).toEqual({ ...specFields, updatedAt: '2025-06-01T00:00:00Z', tags: ['stablecoin'] });
    expect(specFields).toMatchObject({
      address: specContract.address,
      symbol: 'USDT',
      decimals: 6,
      holders: 42,
      verified: true,
    });
    expect(specRaw).toEqual(specContract);
    expect(realRaw).toEqual(realContract);
    expect(real.pageInfo).toEqual(spec.pageInfo);
  });

  it('maps TransactionDTO names onto the failed transaction fields, times in ms or RFC 3339', async () => {
    answer(
      '/api/v1/transaction/failed-24h',
      envelope(0, { transactions: [specFailed], pagination: specPagination }),
    );
    const spec = await upstreams.explorer.failedTransactions({ page: 1, pageSize: 20 }, 't');
    answer(
      '/api/v1/transaction/failed-24h',
      envelope(200, { data: [realFailed], pagination: kratosPagination }),
    );
    const real = await upstreams.explorer.failedTransactions({ page: 1, pageSize: 20 }, 't');
    const { raw: _a, ...specFields } = spec.nodes[0] ?? {};
    const { raw: realRaw, ...realFields } = real.nodes[0] ?? {};
    expect(realFields).toEqual({
      ...specFields,
      actionIndex: null,
      initiator: realFailed.signer,
      code: 11,
      codespace: 'sdk',
      gasWanted: '30000',
    });
    expect(realRaw).toEqual(realFailed);
    answer(
      '/api/v1/transaction/failed-24h',
      envelope(0, {
        data: [{ ...realFailed, block_unix_timestamp: undefined }],
        pagination: kratosPagination,
      }),
    );
    const rfc = await upstreams.explorer.failedTransactions({ page: 1, pageSize: 20 }, 't');
    expect(rfc.nodes[0]?.blockTime).toBe(1_795_000_000);
  });

  it('refuses an envelope code outside the success codes, and data with no list, as UPSTREAM_ERROR', async () => {
    answer('/api/v1/transaction/failed-24h', envelope(50013, { data: [] }));
    const failed = await rejection(upstreams.explorer.failedTransactions({ page: 1, pageSize: 20 }, 't'));
    expect(failed.extensions).toEqual({ code: 'UPSTREAM_ERROR', upstream: 'explorer' });
    answer('/api/v1/transaction/failed-24h', envelope(0, { rows: 'none', pagination: kratosPagination }));
    const empty = await rejection(upstreams.explorer.failedTransactions({ page: 1, pageSize: 20 }, 't'));
    expect(empty.extensions).toEqual({ code: 'UPSTREAM_ERROR', upstream: 'explorer' });
  });
});
