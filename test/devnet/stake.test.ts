import { describe, expect, it } from 'vitest';
import type { DelegationRecord, ValidatorRecord } from '../../src/devnet/data.js';
import { bearer, call, errorBody, stakeAnswer, useDevnet, VARIANTS } from './helpers.js';

/**
 * The staking service's behaviour, the same in every dialect: answers are read back in the spec's
 * terms (stakeAnswer) and addresses compared as the dialect renders them (devnet.stakeAddress).
 * dialects.test.ts proves each dialect's wire format.
 */
describe.each(VARIANTS)('staking, $label', ({ options }) => {
  const devnet = useDevnet(options);
  const stake = (path: string, init?: RequestInit) => call(`${devnet().urls.stake}${path}`, init);
  const answer = async (path: string, init?: RequestInit) => stakeAnswer(devnet(), await stake(path, init));
  const error = (status: number, message: RegExp, reason?: string) =>
    errorBody(devnet(), 'stake', status, expect.stringMatching(message), reason);

  /** A delegator holding more than `n` delegations, and its address as staking takes it. */
  const delegatorWithMoreThan = (n: number) => {
    for (const [address, list] of devnet().data.delegations) {
      if (list.length > n) return { address: devnet().stakeAddress(address), list };
    }
    throw new Error(`no delegator with more than ${n} delegations`);
  };
  const rendered = ({ delegation, balance }: DelegationRecord) => ({
    delegation: {
      delegator_address: devnet().stakeAddress(delegation.delegator_address),
      validator_address: devnet().stakeAddress(delegation.validator_address),
      shares: delegation.shares,
    },
    balance,
  });

  describe('delegations (4.3)', () => {
    it('pages a delegator’s delegations, 20 by default, sorted by validator', async () => {
      const { address, list } = delegatorWithMoreThan(20);
      const body = await answer(`/stake/delegator/delegations?delegator_address=${address}`);
      expect(body.delegation_responses).toEqual(list.slice(0, 20).map(rendered));
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
      const lastPage = await answer(`${base}&pagination.page=${last}`);
      expect(lastPage.delegation_responses).toEqual(list.slice((last - 1) * 7).map(rendered));
      expect(lastPage.pagination).toMatchObject({ page: last, has_prev: true, has_next: false });

      const past = await answer(`${base}&pagination.page=${last + 1}`);
      expect(past.delegation_responses).toEqual([]);
      expect(past.pagination).toMatchObject({ has_next: false, total: String(list.length) });

      // The cursor is the last validator address seen, as this service sent it.
      const cursor = rendered(list[6] as DelegationRecord).delegation.validator_address;
      const afterCursor = await answer(`${base}&pagination.page=5&pagination.cursor=${cursor}`);
      expect(afterCursor.delegation_responses).toEqual(list.slice(7, 14).map(rendered));
      expect(afterCursor.pagination).toMatchObject({ page: 2, has_prev: true });
    });

    it('answers an unknown delegator with an empty list', async () => {
      const nobody = devnet().stakeAddress(`0x${'f'.repeat(40)}`);
      const body = await answer(`/stake/delegator/delegations?delegator_address=${nobody}`);
      expect(body.delegation_responses).toEqual([]);
      expect(body.pagination).toMatchObject({ total: '0', total_pages: 0, has_next: false });
    });

    const pages = [
      { label: 'page_size over 100', extra: 'pagination.page_size=101', message: /between 1 and 100/ },
      { label: 'page_size 0', extra: 'pagination.page_size=0', message: /between 1 and 100/ },
      { label: 'page 0', extra: 'pagination.page=0', message: /starts at 1/ },
      { label: 'a negative page', extra: 'pagination.page=-1', message: /32-bit integer/ },
      { label: 'a fractional page', extra: 'pagination.page=1.5', message: /32-bit integer/ },
      { label: 'a page over int32', extra: 'pagination.page=2147483648', message: /32-bit integer/ },
    ];
    for (const { label, extra, message } of pages) {
      it(`rejects ${label} with 400 and the dialect’s error body`, async () => {
        const { address } = delegatorWithMoreThan(1);
        const res = await stake(`/stake/delegator/delegations?delegator_address=${address}&${extra}`);
        expect(res.status).toBe(400);
        expect(res.body).toEqual(error(400, message));
      });
    }

    it('requires the delegator address', async () => {
      const res = await stake('/stake/delegator/delegations');
      expect(res.status).toBe(400);
      expect(res.body).toEqual(error(400, /delegator_address is required/));
    });
  });

  describe('validators (4.6)', () => {
    const renderedValidator = (v: ValidatorRecord) => ({
      ...v,
      operator_address: devnet().stakeAddress(v.operator_address),
      consensus_address: devnet().stakeAddress(v.consensus_address),
      wallet_address: devnet().stakeAddress(v.wallet_address),
    });

    it('lists validators by voting power with statistics consistent with the list', async () => {
      const all = devnet().data.validators;
      const first = await answer('/stake/validators?pagination.page_size=100');
      const second = await answer('/stake/validators?pagination.page_size=100&pagination.page=2');
      const listed = [...first.validators, ...second.validators];
      expect(listed).toHaveLength(all.length);
      const byId = new Map(all.map((v) => [v.id, v]));
      expect(listed).toEqual(listed.map((v) => renderedValidator(byId.get(v.id) as ValidatorRecord)));
      expect(first.pagination).toEqual({
        page: 1,
        page_size: 100,
        total: String(all.length),
        total_pages: 2,
        has_prev: false,
        has_next: true,
      });
      expect(second.pagination).toMatchObject({ has_next: false });
      const tokens = listed.map((v) => BigInt(v.tokens));
      for (let i = 1; i < tokens.length; i++)
        expect((tokens[i - 1] as bigint) >= (tokens[i] as bigint)).toBe(true);

      expect(first.statistics).toEqual(devnet().data.statistics);
      const stats = first.statistics;
      const active = listed.filter((v) => v.status === 3 && !v.jailed);
      expect(stats.total_validators).toBe(String(all.length));
      expect(stats.active_validators).toBe(String(active.length));
      expect(stats.total_staked_amount).toBe(String(active.reduce((s, v) => s + BigInt(v.tokens), 0n)));
      expect(listed.some((v) => v.jailed)).toBe(true);
      expect(new Set(listed.map((v) => v.status))).toEqual(new Set([1, 2, 3]));
    });

    it('keeps validator fields as the specification types them', async () => {
      const body = await answer('/stake/validators?pagination.page_size=1');
      const v = body.validators[0];
      const { bech32Prefix } = devnet().dialect;
      expect(v).toMatchObject({
        id: expect.any(String),
        operator_address: expect.stringMatching(new RegExp(`^${bech32Prefix}valoper1`)),
        consensus_address: expect.stringMatching(new RegExp(`^${bech32Prefix}valcons1`)),
        tokens: expect.stringMatching(/^\d+$/),
        delegator_shares: expect.stringMatching(/^\d+\.\d{18}$/),
        commission_rate: expect.stringMatching(/^\d\.\d{18}$/),
        uptime_percentage: expect.any(Number),
        outstanding_rewards: [{ denom: 'ustake', amount: expect.stringMatching(/^\d+\.\d{18}$/) }],
      });
      const record = devnet().data.validators.find((r) => r.id === v.id) as ValidatorRecord;
      const delegated = [...devnet().data.delegations.values()]
        .flat()
        .filter((d) => d.delegation.validator_address === record.operator_address);
      expect(v.delegation_count).toBe(String(delegated.length));
    });

    it('pages by top-level page/pageSize, which win over pagination.*', async () => {
      const second = await answer('/stake/validators?pagination.page_size=10&pagination.page=2');
      const topLevel = await answer('/stake/validators?page=2&pageSize=10');
      expect(topLevel).toEqual(second);
      const both = await answer(
        '/stake/validators?page=2&pageSize=10&pagination.page=5&pagination.page_size=50',
      );
      expect(both).toEqual(second);
      const mixed = await answer('/stake/validators?pageSize=10&pagination.page=2');
      expect(mixed).toEqual(second);
    });

    it('continues after a cursor and rejects an unknown one', async () => {
      const page = await answer('/stake/validators?pagination.page_size=10');
      const cursor = page.validators[9].operator_address;
      const next = await answer(`/stake/validators?pagination.page_size=10&pagination.cursor=${cursor}`);
      const second = await answer('/stake/validators?pagination.page_size=10&pagination.page=2');
      expect(next.validators).toEqual(second.validators);
      const unknown = await stake('/stake/validators?pagination.cursor=nope');
      expect(unknown.status).toBe(400);
      expect(unknown.body).toEqual(error(400, /not a known operator address/));
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
      const max = '750000000000000000000';
      const body = stakeAnswer(
        devnet(),
        await put({ round_id: 'round-006', total_slots: 120, max_amount: max }),
      );
      expect(body.round).toEqual({
        ...before,
        total_slots: 120,
        max_amount: max,
        updated_at: expect.any(String),
      });
      expect(Date.parse(body.round.updated_at)).toBeGreaterThan(Date.parse(before.updated_at as string));
    });

    it('answers 401 without the bearer token', async () => {
      const res = await put({ round_id: 'round-006' }, {});
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
      expect(res.body).toEqual(error(401, /missing bearer token/));
      expect((await put({ round_id: 'round-006' }, bearer('wrong'))).status).toBe(401);
    });

    const refusals: { label: string; body: unknown; status: number; message: RegExp; reason?: string }[] = [
      { label: 'no round_id', body: { total_slots: 3 }, status: 400, message: /round_id is required/ },
      {
        label: 'an unknown round',
        body: { round_id: 'round-999' },
        status: 404,
        message: /unknown round/,
        reason: 'ROUND_NOT_FOUND',
      },
      {
        label: 'fractional slots',
        body: { round_id: 'round-005', total_slots: 1.5 },
        status: 400,
        message: /positive 32-bit/,
      },
      {
        label: 'slots over int32',
        body: { round_id: 'round-005', total_slots: 2 ** 31 },
        status: 400,
        message: /positive 32-bit/,
      },
      {
        label: 'slots as a string',
        body: { round_id: 'round-005', total_slots: '10' },
        status: 400,
        message: /positive 32-bit/,
      },
      {
        label: 'a negative amount',
        body: { round_id: 'round-005', min_amount: '-1' },
        status: 400,
        message: /decimal string/,
      },
      {
        label: 'an amount as a number',
        body: { round_id: 'round-005', min_amount: 5 },
        status: 400,
        message: /decimal string/,
      },
      {
        label: 'min above max',
        body: { round_id: 'round-005', min_amount: '10', max_amount: '9.99' },
        status: 400,
        message: /must not exceed/,
      },
      {
        label: 'min above the stored max',
        body: { round_id: 'round-005', min_amount: '900000000000000000000' },
        status: 400,
        message: /must not exceed/,
      },
      {
        label: 'end before start',
        body: { round_id: 'round-005', start_time: '2026-01-02T00:00:00Z', end_time: '2026-01-01T00:00:00Z' },
        status: 400,
        message: /before end_time/,
      },
      {
        label: 'a bad timestamp',
        body: { round_id: 'round-005', start_time: 'yesterday' },
        status: 400,
        message: /RFC 3339/,
      },
      { label: 'an array body', body: [], status: 400, message: /JSON object/ },
      {
        label: 'slots below the booked ones',
        body: { round_id: 'round-001', total_slots: 1 },
        status: 409,
        message: /already booked/,
      },
    ];
    for (const { label, body, status, message, reason } of refusals) {
      it(`rejects ${label}`, async () => {
        const before = JSON.stringify(devnet().data.rounds.get('round-005'));
        const res = await put(body);
        expect(res.status).toBe(status);
        expect(res.body).toEqual(error(status, message, reason));
        expect(JSON.stringify(devnet().data.rounds.get('round-005'))).toBe(before);
      });
    }

    it('rejects invalid JSON, other content types and oversized bodies', async () => {
      const invalid = await put('{"round_id":');
      expect(invalid.status).toBe(400);
      expect(invalid.body).toEqual(error(400, /not valid JSON/));
      const text = await stake('/stake/buyback/rounds', {
        method: 'PUT',
        headers: { 'content-type': 'text/plain', ...bearer(devnet().token) },
        body: '{}',
      });
      expect(text.status).toBe(415);
      expect(text.body).toEqual(error(415, /application\/json/));
      const huge = await put({ round_id: 'x'.repeat(70_000) });
      expect(huge.status).toBe(413);
      expect(huge.body).toEqual(error(413, /larger than/));
    });

    it('never loses a field to concurrent updates', async () => {
      const updates = [
        { round_id: 'round-004', total_slots: 300 },
        { round_id: 'round-004', min_amount: '2000000000000000000' },
        { round_id: 'round-004', max_amount: '600000000000000000000' },
        { round_id: 'round-004', end_time: '2030-01-01T00:00:00Z' },
      ];
      const answers = await Promise.all(updates.map((u) => put(u)));
      const rounds = answers.map((a) => stakeAnswer(devnet(), a).round);
      expect(devnet().data.rounds.get('round-004')).toMatchObject({
        total_slots: 300,
        min_amount: '2000000000000000000',
        max_amount: '600000000000000000000',
        end_time: '2030-01-01T00:00:00Z',
      });
      const stamps = rounds.map((r) => Date.parse(r.updated_at));
      expect(new Set(stamps).size).toBe(stamps.length);
    });
  });

  describe('malformed requests', () => {
    it('answers a wrong method with 405 and Allow', async () => {
      const res = await stake('/stake/buyback/rounds');
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('PUT');
      expect(res.body).toEqual(error(405, /method not allowed: GET/));
      expect((await stake('/stake/validators', { method: 'DELETE' })).status).toBe(405);
    });

    it('answers unknown and escaping paths with 404 in JSON', async () => {
      for (const path of ['/stake/nope', '/stake/validators/../buyback', '/stake%2Fvalidators']) {
        const res = await stake(path);
        expect(res.status).toBe(404);
        expect(res.body).toEqual(error(404, /not found/));
      }
    });
  });
});
