import { compareDecimal, INT32_MAX, isDecimal, parseTimestamp } from '../lib/decimal.js';
import { type DevnetTokens, requireBearer } from './auth.js';
import type { BuybackRoundRecord, DelegationRecord, DevnetData, ValidatorRecord } from './data.js';
import type { Dialect } from './dialect.js';
import { type DevnetRequest, HttpError, type Reply } from './http.js';
import {
  afterKey,
  PAGINATION_PARAMS,
  pageRequest,
  paginate,
  requiredParam,
  TOP_LEVEL_PAGE_PARAMS,
} from './params.js';

/**
 * The staking service (upstream-api.md 4.3, 4.6, 4.7). Answers are built in the spec's snake_case
 * shape from the data's canonical addresses and handed to the dialect, which renders them.
 *
 * Cursors: a delegator's delegations are ordered by validator address and the cursor is the last
 * validator address seen; validators are ordered by voting power and the cursor is the last operator
 * address seen (an unknown one is a 400). A cursor is read back in any encoding of the address; for
 * one prefix, bech32 text sorts as its bytes do, so the order is the same in every dialect.
 */

const ROUND_FIELDS = ['round_id', 'start_time', 'end_time', 'total_slots', 'min_amount', 'max_amount'];

type RoundUpdate = Partial<
  Pick<BuybackRoundRecord, 'start_time' | 'end_time' | 'total_slots' | 'min_amount' | 'max_amount'>
>;

/** Validates the body's fields, given by their snake_case names. */
function parseRoundUpdate(fields: Record<string, unknown>): { roundId: string; update: RoundUpdate } {
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

/** PUT /stake/buyback/rounds: the round's stored values replaced by those given, checked as a whole. */
async function updateRoundOf(
  data: DevnetData,
  { headers, json }: DevnetRequest,
  tokens: DevnetTokens,
  now: () => number,
  dialect: Dialect,
): Promise<Reply> {
  requireBearer(headers, tokens);
  const { roundId, update } = parseRoundUpdate(dialect.body(await json(), ROUND_FIELDS));
  // Everything below is synchronous, so concurrent updates of one round apply one after the other.
  const round = data.rounds.get(roundId);
  if (!round) {
    throw new HttpError(404, `unknown round: ${roundId.slice(0, 64)}`, { reason: 'ROUND_NOT_FOUND' });
  }
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
  return dialect.stakeReply({ round: next });
}

export function createStakeRoutes(
  data: DevnetData,
  tokens: DevnetTokens,
  now: () => number,
  dialect: Dialect,
) {
  const { address } = dialect;
  // The validator list by voting power, with addresses as this dialect writes them: rendered
  // again only after the chain moved the validator set.
  let rendered = { revision: -1, list: [] as ValidatorRecord[], rank: new Map<string, number>() };
  const validatorList = () => {
    if (rendered.revision === data.validatorRevision) return rendered;
    const byPower = [...data.validators].sort((a, b) => {
      const d = BigInt(b.tokens) - BigInt(a.tokens);
      return d > 0n ? 1 : d < 0n ? -1 : Number(a.id) - Number(b.id);
    });
    rendered = {
      revision: data.validatorRevision,
      rank: new Map(byPower.map((v, i) => [v.operator_address, i])),
      list: byPower.map(
        (v): ValidatorRecord => ({
          ...v,
          operator_address: address(v.operator_address),
          consensus_address: address(v.consensus_address),
          wallet_address: address(v.wallet_address),
        }),
      ),
    };
    return rendered;
  };
  const renderDelegation = ({ delegation, balance }: DelegationRecord): DelegationRecord => ({
    delegation: {
      delegator_address: address(delegation.delegator_address),
      validator_address: address(delegation.validator_address),
      shares: delegation.shares,
    },
    balance,
  });

  const delegations = ({ query }: DevnetRequest) => {
    const params = dialect.params(query, ['delegator_address', ...PAGINATION_PARAMS]);
    const delegator = dialect.delegator(requiredParam(params, 'delegator_address'));
    const request = pageRequest(params);
    const list = data.delegations.get(delegator) ?? [];
    const page = paginate(list, request, (cursor) =>
      afterKey(list, (d) => d.delegation.validator_address, dialect.canonicalAddress(cursor)),
    );
    return dialect.stakeReply({
      delegation_responses: page.items.map(renderDelegation),
      pagination: page.pagination,
    });
  };

  const validators = ({ query }: DevnetRequest) => {
    const params = dialect.params(query, [...TOP_LEVEL_PAGE_PARAMS, ...PAGINATION_PARAMS]);
    const request = pageRequest(params, { topLevel: true });
    const { list, rank } = validatorList();
    const page = paginate(list, request, (cursor) => {
      const at = rank.get(dialect.canonicalAddress(cursor));
      if (at === undefined) throw new HttpError(400, 'pagination.cursor is not a known operator address');
      return at + 1;
    });
    return dialect.stakeReply({
      validators: page.items,
      pagination: page.pagination,
      statistics: { ...data.statistics },
    });
  };

  const updateRound = (req: DevnetRequest) => updateRoundOf(data, req, tokens, now, dialect);

  return {
    '/stake/delegator/delegations': { GET: delegations },
    '/stake/validators': { GET: validators },
    '/stake/buyback/rounds': { PUT: updateRound },
  };
}
