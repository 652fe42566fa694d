import { compareDecimal, INT32_MAX, isDecimal, parseTimestamp } from '../lib/decimal.js';
import { requireBearer } from './auth.js';
import type { BuybackRoundRecord, DevnetData } from './data.js';
import { type DevnetRequest, HttpError } from './http.js';
import { afterKey, allowOnly, PAGINATION_PARAMS, pageRequest, paginate, requiredParam } from './params.js';

/**
 * The staking service (upstream-api.md 4.3, 4.6, 4.7). Errors: non-2xx with `{ code, message }`.
 *
 * Cursors: a delegator's delegations are ordered by validator address and the cursor is the last
 * validator address seen; validators are ordered by voting power and the cursor is the last operator
 * address seen (an unknown one is a 400).
 */

const ROUND_FIELDS = ['round_id', 'start_time', 'end_time', 'total_slots', 'min_amount', 'max_amount'];

type RoundUpdate = Partial<
  Pick<BuybackRoundRecord, 'start_time' | 'end_time' | 'total_slots' | 'min_amount' | 'max_amount'>
>;

function parseRoundUpdate(body: unknown): { roundId: string; update: RoundUpdate } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new HttpError(400, 'body must be a JSON object');
  }
  const fields = body as Record<string, unknown>;
  for (const key of Object.keys(fields)) {
    if (!ROUND_FIELDS.includes(key)) throw new HttpError(400, `unknown field: ${key.slice(0, 64)}`);
  }
  const { round_id, start_time, end_time, total_slots, min_amount, max_amount } = fields;
  if (typeof round_id !== 'string' || round_id === '') throw new HttpError(400, 'round_id is required');
  const update: RoundUpdate = {};
  for (const [name, value] of [
    ['start_time', start_time],
    ['end_time', end_time],
  ] as const) {
    if (value === undefined) continue;
    if (typeof value !== 'string' || Number.isNaN(parseTimestamp(value))) {
      throw new HttpError(400, `${name} must be an RFC 3339 timestamp`);
    }
    update[name] = value;
  }
  if (total_slots !== undefined) {
    if (
      typeof total_slots !== 'number' ||
      !Number.isInteger(total_slots) ||
      total_slots < 1 ||
      total_slots > INT32_MAX
    ) {
      throw new HttpError(400, 'total_slots must be a positive 32-bit integer');
    }
    update.total_slots = total_slots;
  }
  for (const [name, value] of [
    ['min_amount', min_amount],
    ['max_amount', max_amount],
  ] as const) {
    if (value === undefined) continue;
    if (typeof value !== 'string' || !isDecimal(value)) {
      throw new HttpError(400, `${name} must be a non-negative decimal string`);
    }
    update[name] = value;
  }
  return { roundId: round_id, update };
}

export function createStakeRoutes(data: DevnetData, token: string, now: () => number) {
  const byPower = [...data.validators].sort((a, b) => {
    const d = BigInt(b.tokens) - BigInt(a.tokens);
    return d > 0n ? 1 : d < 0n ? -1 : Number(a.id) - Number(b.id);
  });
  const rank = new Map(byPower.map((v, i) => [v.operator_address, i]));

  const delegations = ({ query }: DevnetRequest) => {
    allowOnly(query, ['delegator_address', ...PAGINATION_PARAMS]);
    const delegator = requiredParam(query, 'delegator_address').toLowerCase();
    const request = pageRequest(query);
    const list = data.delegations.get(delegator) ?? [];
    const page = paginate(list, request, (cursor) =>
      afterKey(list, (d) => d.delegation.validator_address, cursor),
    );
    return { body: { delegation_responses: page.items, pagination: page.pagination } };
  };

  const validators = ({ query }: DevnetRequest) => {
    allowOnly(query, PAGINATION_PARAMS);
    const request = pageRequest(query);
    const page = paginate(byPower, request, (cursor) => {
      const at = rank.get(cursor);
      if (at === undefined) throw new HttpError(400, 'pagination.cursor is not a known operator address');
      return at + 1;
    });
    return { body: { validators: page.items, pagination: page.pagination, statistics: data.statistics } };
  };

  const updateRound = async ({ headers, json }: DevnetRequest) => {
    requireBearer(headers, token);
    const { roundId, update } = parseRoundUpdate(await json());
    // Everything below is synchronous, so concurrent updates of one round apply one after the other.
    const round = data.rounds.get(roundId);
    if (!round) throw new HttpError(404, `unknown round: ${roundId.slice(0, 64)}`);
    const next = { ...round, ...update };
    if (compareDecimal(next.min_amount, next.max_amount) > 0) {
      throw new HttpError(400, 'min_amount must not exceed max_amount');
    }
    if (parseTimestamp(next.start_time) >= parseTimestamp(next.end_time)) {
      throw new HttpError(400, 'start_time must be before end_time');
    }
    if (next.total_slots < next.booked_slots) {
      throw new HttpError(409, `total_slots below the ${next.booked_slots} slots already booked`);
    }
    const updatedAt = Math.max(now(), Date.parse(round.updated_at) + 1);
    next.updated_at = new Date(updatedAt).toISOString();
    data.rounds.set(roundId, next);
    return { body: { round: next } };
  };

  return {
    '/stake/delegator/delegations': { GET: delegations },
    '/stake/validators': { GET: validators },
    '/stake/buyback/rounds': { PUT: updateRound },
  };
}
