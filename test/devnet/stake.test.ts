import { describe, expect, it } from 'vitest';
import { bearer, call, useDevnet } from './helpers.js';

const devnet = useDevnet();
const stake = (path: string, init?: RequestInit) => call(`${devnet().urls.stake}${path}`, init);

/** A delegator holding more than `n` delegations. */
const delegatorWithMoreThan = (n: number) => {
  for (const [address, list] of devnet().data.delegations) if (list.length > n) return { address, list };
  throw new Error(`no delegator with more than ${n} delegations`);
};

describe('delegations (4.3)', () => {
  it('pages a delegator’s delegations, 20 by default, sorted by validator', async () => {
    const { address, list } = delegatorWithMoreThan(20);
    const { status, body } = await stake(`/stake/delegator/delegations?delegator_address=${address}`);
    expect(status).toBe(200);
    expect(body.delegation_responses).toEqual(list.slice(0, 20));
    expect(body.pagination).toEqual({
      page: 1,
      page_size: 20,
      total: String(list.length),
      total_pages: Math.ceil(list.length / 20),
      has_prev: false,
      has_next: true,
    });
    const item = body.delegation_responses[0];
    expect(item.delegation.shares).toMatch(/^\d+\.\d{18}$/);
    expect(item.balance).toEqual({ denom: 'ustake', amount: expect.stringMatching(/^\d+$/) });
  });

  it('serves the last page, an empty page past the end, and a cursor that takes priority', async () => {
    const { address, list } = delegatorWithMoreThan(20);
    const base = `/stake/delegator/delegations?delegator_address=${address}&pagination.page_size=7`;
    const last = Math.ceil(list.length / 7);
    const lastPage = await stake(`${base}&pagination.page=${last}`);
    expect(lastPage.body.delegation_responses).toEqual(list.slice((last - 1) * 7));
    expect(lastPage.body.pagination).toMatchObject({ page: last, has_prev: true, has_next: false });

    const past = await stake(`${base}&pagination.page=${last + 1}`);
    expect(past.status).toBe(200);
    expect(past.body.delegation_responses).toEqual([]);
    expect(past.body.pagination).toMatchObject({ has_next: false, total: String(list.length) });

    const cursor = list[6]?.delegation.validator_address as string;
    const afterCursor = await stake(`${base}&pagination.page=5&pagination.cursor=${cursor}`);
    expect(afterCursor.body.delegation_responses).toEqual(list.slice(7, 14));
    expect(afterCursor.body.pagination).toMatchObject({ page: 2, has_prev: true });
  });

  it('answers an unknown delegator with an empty list', async () => {
    const { body } = await stake(`/stake/delegator/delegations?delegator_address=0x${'f'.repeat(40)}`);
    expect(body.delegation_responses).toEqual([]);
    expect(body.pagination).toMatchObject({ total: '0', total_pages: 0, has_next: false });
  });

  it.each([
    ['page_size over 100', 'pagination.page_size=101', /between 1 and 100/],
    ['page_size 0', 'pagination.page_size=0', /between 1 and 100/],
    ['page 0', 'pagination.page=0', /starts at 1/],
    ['a negative page', 'pagination.page=-1', /32-bit integer/],
    ['a fractional page', 'pagination.page=1.5', /32-bit integer/],
    ['a page over int32', 'pagination.page=2147483648', /32-bit integer/],
    ['an unknown parameter', 'limit=5', /unknown query parameter/],
  ])('rejects %s with 400 and { code, message }', async (_label, extra, message) => {
    const res = await stake(`/stake/delegator/delegations?delegator_address=0xabc&${extra}`);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ code: 400, message: expect.stringMatching(message) });
  });

  it('requires the delegator address', async () => {
    const res = await stake('/stake/delegator/delegations');
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/delegator_address is required/);
  });
});

describe('validators (4.6)', () => {
  it('lists validators by voting power with statistics consistent with the list', async () => {
    const all = devnet().data.validators;
    const first = await stake('/stake/validators?pagination.page_size=100');
    const second = await stake('/stake/validators?pagination.page_size=100&pagination.page=2');
    const listed = [...first.body.validators, ...second.body.validators];
    expect(listed).toHaveLength(all.length);
    expect(first.body.pagination).toMatchObject({
      total: String(all.length),
      total_pages: 2,
      has_next: true,
    });
    expect(second.body.pagination).toMatchObject({ has_next: false });
    const tokens = listed.map((v) => BigInt(v.tokens));
    for (let i = 1; i < tokens.length; i++)
      expect((tokens[i - 1] as bigint) >= (tokens[i] as bigint)).toBe(true);

    const stats = first.body.statistics;
    const active = listed.filter((v) => v.status === 3 && !v.jailed);
    expect(stats.total_validators).toBe(String(all.length));
    expect(stats.active_validators).toBe(String(active.length));
    expect(stats.total_staked_amount).toBe(String(active.reduce((s, v) => s + BigInt(v.tokens), 0n)));
    expect(listed.some((v) => v.jailed)).toBe(true);
    expect(new Set(listed.map((v) => v.status)).size).toBeGreaterThanOrEqual(3);
  });

  it('keeps validator fields as the specification types them', async () => {
    const { body } = await stake('/stake/validators?pagination.page_size=1');
    const v = body.validators[0];
    expect(v).toMatchObject({
      id: expect.any(String),
      operator_address: expect.stringMatching(/^stakevaloper1/),
      consensus_address: expect.stringMatching(/^stakevalcons1/),
      tokens: expect.stringMatching(/^\d+$/),
      delegator_shares: expect.stringMatching(/^\d+\.\d{18}$/),
      commission_rate: expect.stringMatching(/^\d\.\d{18}$/),
      uptime_percentage: expect.any(Number),
      wallet_address: expect.stringMatching(/^0x[0-9a-f]{40}$/),
      outstanding_rewards: [{ denom: 'ustake', amount: expect.stringMatching(/^\d+\.\d{18}$/) }],
    });
    const delegated = [...devnet().data.delegations.values()]
      .flat()
      .filter((d) => d.delegation.validator_address === v.operator_address);
    expect(v.delegation_count).toBe(String(delegated.length));
  });

  it('continues after a cursor and rejects an unknown one', async () => {
    const page = await stake('/stake/validators?pagination.page_size=10');
    const cursor = page.body.validators[9].operator_address;
    const next = await stake(`/stake/validators?pagination.page_size=10&pagination.cursor=${cursor}`);
    const second = await stake('/stake/validators?pagination.page_size=10&pagination.page=2');
    expect(next.body.validators).toEqual(second.body.validators);
    expect((await stake('/stake/validators?pagination.cursor=nope')).status).toBe(400);
  });
});

describe('buyback round update (4.7)', () => {
  const put = (body: unknown, headers: Record<string, string> = bearer(devnet().token)) =>
    stake('/stake/buyback/rounds', {
      method: 'PUT',
      headers: { 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });

  it('replaces the given fields, keeps the others and moves updated_at', async () => {
    const before = { ...devnet().data.rounds.get('round-006') };
    const res = await put({ round_id: 'round-006', total_slots: 120, max_amount: '750000000.5' });
    expect(res.status).toBe(200);
    expect(res.body.round).toEqual({
      ...before,
      total_slots: 120,
      max_amount: '750000000.5',
      updated_at: expect.any(String),
    });
    expect(Date.parse(res.body.round.updated_at)).toBeGreaterThan(Date.parse(before.updated_at as string));
  });

  it('answers 401 without the bearer token', async () => {
    const res = await put({ round_id: 'round-006' }, {});
    expect(res.status).toBe(401);
    expect(res.body.code).not.toBe(0);
    expect((await put({ round_id: 'round-006' }, bearer('wrong'))).status).toBe(401);
  });

  it.each([
    ['no round_id', { total_slots: 3 }, 400, /round_id is required/],
    ['an unknown round', { round_id: 'round-999' }, 404, /unknown round/],
    ['an unknown field', { round_id: 'round-005', status: 3 }, 400, /unknown field: status/],
    ['fractional slots', { round_id: 'round-005', total_slots: 1.5 }, 400, /positive 32-bit/],
    ['slots over int32', { round_id: 'round-005', total_slots: 2 ** 31 }, 400, /positive 32-bit/],
    ['slots as a string', { round_id: 'round-005', total_slots: '10' }, 400, /positive 32-bit/],
    ['a negative amount', { round_id: 'round-005', min_amount: '-1' }, 400, /decimal string/],
    ['an amount as a number', { round_id: 'round-005', min_amount: 5 }, 400, /decimal string/],
    [
      'min above max',
      { round_id: 'round-005', min_amount: '10', max_amount: '9.99' },
      400,
      /must not exceed/,
    ],
    ['min above the stored max', { round_id: 'round-005', min_amount: '900000000' }, 400, /must not exceed/],
    [
      'end before start',
      { round_id: 'round-005', start_time: '2026-01-02T00:00:00Z', end_time: '2026-01-01T00:00:00Z' },
      400,
      /before end_time/,
    ],
    ['a bad timestamp', { round_id: 'round-005', start_time: 'yesterday' }, 400, /RFC 3339/],
    ['an array body', [], 400, /JSON object/],
    ['slots below the booked ones', { round_id: 'round-001', total_slots: 1 }, 409, /already booked/],
  ])('rejects %s', async (_label, body, status, message) => {
    const before = JSON.stringify(devnet().data.rounds.get('round-005'));
    const res = await put(body);
    expect(res.status).toBe(status);
    expect(res.body).toEqual({ code: status, message: expect.stringMatching(message) });
    expect(JSON.stringify(devnet().data.rounds.get('round-005'))).toBe(before);
  });

  it('rejects invalid JSON, other content types and oversized bodies', async () => {
    expect((await put('{"round_id":')).status).toBe(400);
    const text = await stake('/stake/buyback/rounds', {
      method: 'PUT',
      headers: { 'content-type': 'text/plain', ...bearer(devnet().token) },
      body: '{}',
    });
    expect(text.status).toBe(415);
    const huge = await put({ round_id: 'x'.repeat(70_000) });
    expect(huge.status).toBe(413);
  });

  it('never loses a field to concurrent updates', async () => {
    const updates = [
      { round_id: 'round-004', total_slots: 300 },
      { round_id: 'round-004', min_amount: '2000000' },
      { round_id: 'round-004', max_amount: '600000000' },
      { round_id: 'round-004', end_time: '2030-01-01T00:00:00Z' },
    ];
    const answers = await Promise.all(updates.map((u) => put(u)));
    for (const a of answers) expect(a.status).toBe(200);
    expect(devnet().data.rounds.get('round-004')).toMatchObject({
      total_slots: 300,
      min_amount: '2000000',
      max_amount: '600000000',
      end_time: '2030-01-01T00:00:00Z',
    });
    const stamps = answers.map((a) => Date.parse(a.body.round.updated_at));
    expect(new Set(stamps).size).toBe(stamps.length);
  });
});

describe('malformed requests', () => {
  it('answers a wrong method with 405 and Allow', async () => {
    const res = await stake('/stake/buyback/rounds');
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('PUT');
    expect((await stake('/stake/validators', { method: 'DELETE' })).status).toBe(405);
  });

  it('answers unknown and escaping paths with 404 in JSON', async () => {
    for (const path of ['/stake/nope', '/stake/validators/../buyback', '/stake%2Fvalidators']) {
      const res = await stake(path);
      expect(res.status).toBe(404);
      expect(res.body.code).toBe(404);
    }
  });
});
