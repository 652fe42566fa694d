import { describe, expect, it } from 'vitest';
import { UpdateBuybackRoundDocument } from '../../operations/generated/graphql.js';
import { fetchGateway, idOf, useGatewayOnDevnet } from './helpers.js';

const env = useGatewayOnDevnet();

describe('updateBuybackRound', () => {
  it('sends one PUT with the caller’s token and the REST body, and returns the stored round', async () => {
    const res = await env.gql(UpdateBuybackRoundDocument, {
      variables: {
        input: {
          roundId: 'round-006',
          totalSlots: 150,
          minAmount: '2000000',
          endTime: '2031-01-01T00:00:00Z',
        },
      },
      token: env.devnet.token,
    });
    expect(res.errors).toBeUndefined();
    const stored = env.devnet.data.rounds.get('round-006');
    expect(res.data?.updateBuybackRound.round).toEqual({
      id: idOf('BuybackRound', 'round-006'),
      roundId: 'round-006',
      // round-006 is the devnet's pending round.
      state: 'PENDING',
      startTime: stored?.start_time,
      endTime: '2031-01-01T00:00:00Z',
      totalSlots: 150,
      bookedSlots: stored?.booked_slots,
      minAmount: '2000000',
      maxAmount: stored?.max_amount,
      updatedAt: stored?.updated_at,
    });
    expect(env.devnet.requests).toHaveLength(1);
    const [put] = env.devnet.requests;
    expect(put).toMatchObject({ method: 'PUT', path: '/stake/buyback/rounds' });
    expect(put?.headers.authorization).toBe(`Bearer ${env.devnet.token}`);
    expect(put?.headers['content-type']).toBe('application/json');
  });

  it('answers UNAUTHENTICATED without a token, not applied, and sends nothing', async () => {
    const res = await env.gql(UpdateBuybackRoundDocument, { variables: { input: { roundId: 'round-006' } } });
    expect(res.errors?.[0]?.extensions).toEqual({ code: 'UNAUTHENTICATED', applied: false });
    expect(env.devnet.requests).toHaveLength(0);
  });

  it('turns an unknown round into BAD_USER_INPUT naming it, not applied', async () => {
    const res = await env.gql(UpdateBuybackRoundDocument, {
      variables: { input: { roundId: 'round-404' } },
      token: env.devnet.token,
    });
    expect(res.errors?.[0]?.extensions).toEqual({
      code: 'BAD_USER_INPUT',
      upstream: 'stake',
      applied: false,
    });
    expect(res.errors?.[0]?.message).toContain('round-404');
    expect(env.devnet.requests.filter((r) => r.method === 'PUT')).toHaveLength(1);
  });

  const refusals = [
    { label: 'totalSlots 0', fields: { totalSlots: 0 }, argument: 'input.totalSlots' },
    { label: 'totalSlots negative', fields: { totalSlots: -3 }, argument: 'input.totalSlots' },
    {
      label: 'minAmount above maxAmount',
      fields: { minAmount: '10', maxAmount: '9.5' },
      argument: 'input.minAmount',
    },
    {
      label: 'startTime after endTime',
      fields: { startTime: '2031-01-02T00:00:00Z', endTime: '2031-01-01T00:00:00Z' },
      argument: 'input.startTime',
    },
    {
      label: 'startTime equal to endTime',
      fields: { startTime: '2031-01-01T00:00:00Z', endTime: '2031-01-01T00:00:00Z' },
      argument: 'input.startTime',
    },
    { label: 'an empty roundId', fields: { roundId: '' }, argument: 'input.roundId' },
  ];
  for (const { label, fields, argument } of refusals) {
    it(`rejects ${label} before any upstream call, not applied`, async () => {
      const res = await env.gql(UpdateBuybackRoundDocument, {
        variables: { input: { roundId: 'round-006', ...fields } },
        token: env.devnet.token,
      });
      expect(res.errors?.[0]?.extensions).toEqual({ code: 'BAD_USER_INPUT', argument, applied: false });
      expect(env.devnet.requests).toHaveLength(0);
    });
  }

  const coercions = [
    { label: 'a negative amount', fields: { minAmount: '-1' } },
    { label: 'an amount in exponent form', fields: { maxAmount: '1e9' } },
    { label: 'a timestamp that is not RFC 3339', fields: { startTime: 'tomorrow' } },
    { label: 'slots over int32', fields: { totalSlots: 2 ** 31 } },
  ];
  for (const { label, fields } of coercions) {
    it(`rejects ${label} as BAD_USER_INPUT at coercion`, async () => {
      const res = await env.gql(UpdateBuybackRoundDocument, {
        variables: { input: { roundId: 'round-006', ...fields } },
        token: env.devnet.token,
      });
      expect(res.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
      expect(env.devnet.requests).toHaveLength(0);
    });
  }

  it('refuses mutations over GET', async () => {
    const query = encodeURIComponent(
      'mutation { updateBuybackRound(input: { roundId: "round-006" }) { round { roundId } } }',
    );
    const res = await fetchGateway(env.gateway, `/graphql?query=${query}`, {
      headers: {
        authorization: `Bearer ${env.devnet.token}`,
        accept: 'application/json',
        'x-graphql-csrf': '1',
      },
    });
    expect(res.status).toBe(405);
    expect(env.devnet.requests).toHaveLength(0);
  });
});
