import { UpstreamError } from '../../errors.js';
import {
  bool,
  decimal,
  enumValue,
  field,
  int,
  int64,
  list,
  num,
  type Obj,
  obj,
  str,
  strings,
} from '../decode.js';
import type { CallScope, UpstreamHttp } from '../http.js';
import type {
  BondStatus,
  BuybackRound,
  BuybackRoundState,
  BuybackRoundUpdate,
  Coin,
  Delegation,
  Page,
  PageArgs,
  Validator,
  ValidatorList,
  ValidatorStatistics,
} from '../models.js';
import { decodeBody, type EnvelopeFailure, pageQuery, toPageInfo, unwrapEnvelope } from '../rest.js';
import { StakeAccounts } from './accounts.js';
import { appliedButUnreadable, updateFailure, withApplied } from './outcome.js';

/**
 * The staking service: delegations (4.3), the validator list (4.6) and the buyback round update (4.7).
 * Answers come bare or in the envelope `{ code, message, data }`, in either dialect; errors as a
 * non-2xx status with `{ code, message }` or Kratos' `{ code, reason, message, metadata }`.
 */

/** The validator list is read in pages of the upstream's maximum size. */
const VALIDATOR_PAGE_SIZE = 100;

/** The graph's bond statuses, by their Cosmos SDK number. */
const BOND_STATUSES: readonly BondStatus[] = ['UNSPECIFIED', 'UNBONDED', 'UNBONDING', 'BONDED'];
/** The graph's round states, by their number. */
const ROUND_STATES: readonly BuybackRoundState[] = [
  'UNSPECIFIED',
  'PENDING',
  'IN_PROGRESS',
  'DONE',
  'CANCELLED',
];

/** Cosmos SDK bond status names, as protojson may send them instead of numbers. */
const BOND_STATUS: Readonly<Record<string, number>> = {
  BOND_STATUS_UNSPECIFIED: 0,
  BOND_STATUS_UNBONDED: 1,
  BOND_STATUS_UNBONDING: 2,
  BOND_STATUS_BONDED: 3,
};

/** Buyback round status names (0 unspecified … 4 cancelled), by their proto names. */
const ROUND_STATUS: Readonly<Record<string, number>> = {
  ROUND_STATUS_UNSPECIFIED: 0,
  ROUND_STATUS_PENDING: 1,
  ROUND_STATUS_IN_PROGRESS: 2,
  ROUND_STATUS_DONE: 3,
  ROUND_STATUS_COMPLETED: 3,
  ROUND_STATUS_CANCELLED: 4,
};

export interface StakeSettings {
  /** Envelope `code` values that mean success. */
  successCodes: readonly number[];
  /** BECH32_PREFIX, or null to learn the account encoding from what staking sends. */
  bech32Prefix: string | null;
  /** The most pages read for the whole validator list. */
  validatorMaxPages: number;
}

const bondStatus = ({ code, value }: { code: number; value: BondStatus | null }) => ({
  status: code,
  bondStatus: value,
});
const roundState = ({ code, value }: { code: number; value: BuybackRoundState | null }) => ({
  status: code,
  state: value,
});

const toCoin = (value: unknown): Coin => {
  const c = obj(value, 'coin');
  return { denom: str(c, 'denom'), amount: decimal(c, 'amount') };
};

const toValidator = (value: unknown): Validator => {
  const v = obj(value, 'validator');
  return {
    id: str(v, 'id'),
    moniker: str(v, 'moniker'),
    operatorAddress: str(v, 'operatorAddress'),
    consensusAddress: str(v, 'consensusAddress'),
    jailed: bool(v, 'jailed'),
    ...bondStatus(enumValue(v, 'status', BOND_STATUS, BOND_STATUSES)),
    tokens: decimal(v, 'tokens'),
    delegatorShares: decimal(v, 'delegatorShares'),
    description: str(v, 'description'),
    unbondingHeight: int64(v, 'unbondingHeight'),
    unbondingTime: str(v, 'unbondingTime'),
    commission: {
      rate: decimal(v, 'commissionRate'),
      maxRate: decimal(v, 'commissionMaxRate'),
      maxChangeRate: decimal(v, 'commissionMaxChangeRate'),
      updateTime: str(v, 'commissionUpdateTime'),
    },
    proposed: int64(v, 'proposed'),
    signed: int64(v, 'signed'),
    missed: int64(v, 'missed'),
    timestamp: str(v, 'timestamp'),
    uptimes: strings(v, 'uptimes'),
    slashingEvents: strings(v, 'slashingEvents'),
    uptimePercentage: num(v, 'uptimePercentage'),
    imageUrl: str(v, 'imageUrl'),
    registrationTime: str(v, 'registrationTime'),
    walletAddress: str(v, 'walletAddress'),
    delegationCount: int64(v, 'delegationCount'),
    outstandingRewards: list(field(v, 'outstandingRewards'), 'outstandingRewards').map(toCoin),
  };
};

const toStatistics = (value: unknown): ValidatorStatistics => {
  const s = obj(value, 'statistics');
  return {
    totalValidators: int64(s, 'totalValidators'),
    consensusValidators: int64(s, 'consensusValidators'),
    activeValidators: int64(s, 'activeValidators'),
    totalStakedAmount: decimal(s, 'totalStakedAmount'),
    rewards24h: decimal(s, 'rewards24h'),
    annualizedRewardRate: decimal(s, 'annualizedRewardRate'),
    slashingEvents24h: int64(s, 'slashingEvents24h'),
    timestamp: str(s, 'timestamp'),
  };
};

const toDelegation =
  (delegatorAddress: string) =>
  (value: unknown): Delegation => {
    const item = obj(value, 'delegation response');
    const d = obj(field(item, 'delegation'), 'delegation');
    return {
      delegatorAddress,
      validatorAddress: str(d, 'validatorAddress'),
      shares: decimal(d, 'shares'),
      balance: toCoin(field(item, 'balance')),
    };
  };

const toRound = (o: Obj): BuybackRound => {
  const r = obj(field(o, 'round'), 'round');
  return {
    id: str(r, 'id'),
    roundId: str(r, 'roundId'),
    startTime: str(r, 'startTime'),
    endTime: str(r, 'endTime'),
    ...roundState(enumValue(r, 'status', ROUND_STATUS, ROUND_STATES)),
    totalSlots: int(r, 'totalSlots'),
    bookedSlots: int(r, 'bookedSlots'),
    minAmount: decimal(r, 'minAmount'),
    maxAmount: decimal(r, 'maxAmount'),
    totalCollected: decimal(r, 'totalCollected'),
    revenuePool: decimal(r, 'revenuePool'),
    burnTxHash: str(r, 'burnTxHash'),
    createdAt: str(r, 'createdAt'),
    updatedAt: str(r, 'updatedAt'),
  };
};

interface ValidatorPage extends ValidatorList {
  page: number;
  totalPages: number;
}

export class StakeClient {
  /** How staking writes accounts: configured, or learned from the validator list and delegations. */
  readonly accounts: StakeAccounts;

  constructor(
    private readonly http: UpstreamHttp,
    private readonly settings: StakeSettings,
  ) {
    this.accounts = new StakeAccounts(settings.bech32Prefix);
  }

  /** The body of a staking answer, bare or in the envelope, read in either dialect. */
  private decode<T>(what: string, body: unknown, map: (o: Obj) => T, failure?: EnvelopeFailure): T {
    return decodeBody('stake', what, body, (o) =>
      map(unwrapEnvelope('stake', o, this.settings.successCodes, failure)),
    );
  }

  async delegations(delegator: string, args: PageArgs, scope: CallScope = {}): Promise<Page<Delegation>> {
    const { body } = await this.http.get('/stake/delegator/delegations', {
      query: { delegator_address: this.accounts.encode(delegator), ...pageQuery(args) },
      ...scope,
    });
    return this.decode('delegations', body, (o) => {
      const items = list(field(o, 'delegationResponses'), 'delegationResponses');
      const first = items[0] as Obj | undefined;
      const sent = typeof first === 'object' && first !== null ? (field(first, 'delegation') as Obj) : null;
      const address = typeof sent === 'object' && sent !== null ? field(sent, 'delegatorAddress') : null;
      if (typeof address === 'string') this.accounts.learnFrom(address);
      return { nodes: items.map(toDelegation(delegator)), pageInfo: toPageInfo(field(o, 'pagination')) };
    });
  }

  private async validatorPage(page: number, scope: CallScope): Promise<ValidatorPage> {
    const { body } = await this.http.get('/stake/validators', {
      // The production exporter pages this list with top-level `page` / `pageSize`; upstream-api.md
      // with `pagination.*`. Both are sent, and the answer's own page number is checked.
      query: {
        ...pageQuery({ page, pageSize: VALIDATOR_PAGE_SIZE }),
        page,
        pageSize: VALIDATOR_PAGE_SIZE,
      },
      ...scope,
    });
    return this.decode('validators', body, (o) => {
      const pageInfo = toPageInfo(field(o, 'pagination'));
      return {
        validators: list(field(o, 'validators'), 'validators').map(toValidator),
        statistics: toStatistics(field(o, 'statistics')),
        page: pageInfo.page,
        totalPages: pageInfo.totalPages,
      };
    });
  }

  /**
   * The whole validator list: the first page tells how many pages there are, the rest are fetched
   * concurrently. Bounded twice: a list of more than `validatorMaxPages` pages, or a server that
   * answers another page than the one asked for (it ignores paging), is an upstream error, never a
   * silently cut list and never an endless loop.
   */
  async allValidators(scope: CallScope = {}): Promise<ValidatorList> {
    const first = await this.validatorPage(1, scope);
    const { totalPages } = first;
    if (totalPages > this.settings.validatorMaxPages) {
      throw new UpstreamError(
        'stake',
        'UPSTREAM_ERROR',
        `validator list has ${totalPages} pages, more than the ${this.settings.validatorMaxPages} allowed`,
      );
    }
    const rest = await Promise.all(
      Array.from({ length: Math.max(totalPages - 1, 0) }, (_, i) => this.validatorPage(i + 2, scope)),
    );
    const pages = [first, ...rest];
    const seen = new Set<string>();
    for (const [i, p] of pages.entries()) {
      const repeated = p.validators.length > 0 && seen.has(p.validators[0]?.operatorAddress as string);
      if (p.page !== i + 1 || repeated) {
        throw new UpstreamError(
          'stake',
          'UPSTREAM_ERROR',
          `validator list page ${i + 1} answered as page ${p.page}${repeated ? ' with rows already seen' : ''}: the service ignores paging`,
        );
      }
      for (const v of p.validators) seen.add(v.operatorAddress);
    }
    const list = { validators: pages.flatMap((p) => p.validators), statistics: first.statistics };
    this.learnAccountsFrom(list);
    return list;
  }

  /** Learns staking's account encoding from a validator list (read here, or shared through Redis). */
  learnAccountsFrom(list: ValidatorList): void {
    const sample = list.validators[0];
    if (sample) {
      this.accounts.learnFrom(sample.walletAddress);
      this.accounts.learnFrom(sample.operatorAddress);
    }
  }

  /**
   * Sent once, never retried. A refusal (unknown round, inconsistent update) is BAD_USER_INPUT.
   * Every failure says whether the update happened (`applied`, outcome.ts): a 2xx answer that
   * cannot be read was applied, so that a client does not retry a write that succeeded.
   */
  async updateBuybackRound(
    update: BuybackRoundUpdate,
    token: string,
    scope: CallScope = {},
  ): Promise<BuybackRound> {
    const body = {
      round_id: update.roundId,
      start_time: update.startTime ?? undefined,
      end_time: update.endTime ?? undefined,
      total_slots: update.totalSlots ?? undefined,
      min_amount: update.minAmount ?? undefined,
      max_amount: update.maxAmount ?? undefined,
    };
    const refused = (status: number) =>
      status === 404
        ? {
            code: 'BAD_USER_INPUT' as const,
            message: `No buyback round with roundId "${update.roundId.slice(0, 64)}".`,
          }
        : status === 400 || status === 409 || status === 422
          ? {
              code: 'BAD_USER_INPUT' as const,
              message: 'The staking service refused the update as inconsistent with the round.',
            }
          : undefined;
    let res: Awaited<ReturnType<UpstreamHttp['put']>>;
    try {
      res = await this.http.put('/stake/buyback/rounds', body, {
        headers: { authorization: `Bearer ${token}` },
        ...scope,
        statusError: refused,
      });
    } catch (error) {
      throw updateFailure(error);
    }
    // A refusal inside a readable envelope is a refusal; anything else amiss in a 2xx answer was applied.
    try {
      const round = unwrapEnvelope(
        'stake',
        obj(res.body, 'buyback round'),
        this.settings.successCodes,
        refused,
      );
      return toRound(round);
    } catch (error) {
      if (error instanceof UpstreamError) throw withApplied(error, false);
      throw appliedButUnreadable(error instanceof Error ? error.message : String(error));
    }
  }
}
