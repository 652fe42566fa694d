import { bool, decimal, int, list, num, type Obj, obj, str, strings } from '../decode.js';
import type { CallScope, UpstreamHttp } from '../http.js';
import type {
  BuybackRound,
  BuybackRoundUpdate,
  Coin,
  Delegation,
  Page,
  PageArgs,
  Validator,
  ValidatorList,
  ValidatorStatistics,
} from '../models.js';
import { decodeBody, pageQuery, toPageInfo } from '../rest.js';

/**
 * The staking service: delegations (4.3), the validator list (4.6) and the buyback round update (4.7).
 * Errors come as non-2xx with `{ code, message }`.
 */

/** The validator list is read in pages of the upstream's maximum size. */
export const VALIDATOR_PAGE_SIZE = 100;

const toCoin = (value: unknown): Coin => {
  const c = obj(value, 'coin');
  return { denom: str(c, 'denom'), amount: decimal(c, 'amount') };
};

const toValidator = (value: unknown): Validator => {
  const v = obj(value, 'validator');
  return {
    id: str(v, 'id'),
    moniker: str(v, 'moniker'),
    operatorAddress: str(v, 'operator_address'),
    consensusAddress: str(v, 'consensus_address'),
    jailed: bool(v, 'jailed'),
    status: int(v, 'status'),
    tokens: decimal(v, 'tokens'),
    delegatorShares: decimal(v, 'delegator_shares'),
    description: str(v, 'description'),
    unbondingHeight: str(v, 'unbonding_height'),
    unbondingTime: str(v, 'unbonding_time'),
    commission: {
      rate: decimal(v, 'commission_rate'),
      maxRate: decimal(v, 'commission_max_rate'),
      maxChangeRate: decimal(v, 'commission_max_change_rate'),
      updateTime: str(v, 'commission_update_time'),
    },
    proposed: str(v, 'proposed'),
    signed: str(v, 'signed'),
    missed: str(v, 'missed'),
    timestamp: str(v, 'timestamp'),
    uptimes: strings(v, 'uptimes'),
    slashingEvents: strings(v, 'slashing_events'),
    uptimePercentage: num(v, 'uptime_percentage'),
    imageUrl: str(v, 'image_url'),
    registrationTime: str(v, 'registration_time'),
    walletAddress: str(v, 'wallet_address'),
    delegationCount: str(v, 'delegation_count'),
    outstandingRewards: list(v.outstanding_rewards, 'outstanding_rewards').map(toCoin),
  };
};

const toStatistics = (value: unknown): ValidatorStatistics => {
  const s = obj(value, 'statistics');
  return {
    totalValidators: str(s, 'total_validators'),
    consensusValidators: str(s, 'consensus_validators'),
    activeValidators: str(s, 'active_validators'),
    totalStakedAmount: decimal(s, 'total_staked_amount'),
    rewards24h: decimal(s, 'rewards_24h'),
    annualizedRewardRate: decimal(s, 'annualized_reward_rate'),
    slashingEvents24h: str(s, 'slashing_events_24h'),
    timestamp: str(s, 'timestamp'),
  };
};

const toDelegation = (value: unknown): Delegation => {
  const item = obj(value, 'delegation response');
  const d = obj(item.delegation, 'delegation');
  return {
    validatorAddress: str(d, 'validator_address'),
    shares: decimal(d, 'shares'),
    balance: toCoin(item.balance),
  };
};

const toRound = (o: Obj): BuybackRound => {
  const r = obj(o.round, 'round');
  return {
    id: str(r, 'id'),
    roundId: str(r, 'round_id'),
    startTime: str(r, 'start_time'),
    endTime: str(r, 'end_time'),
    status: int(r, 'status'),
    totalSlots: int(r, 'total_slots'),
    bookedSlots: int(r, 'booked_slots'),
    minAmount: decimal(r, 'min_amount'),
    maxAmount: decimal(r, 'max_amount'),
    totalCollected: decimal(r, 'total_collected'),
    revenuePool: decimal(r, 'revenue_pool'),
    burnTxHash: str(r, 'burn_tx_hash'),
    createdAt: str(r, 'created_at'),
    updatedAt: str(r, 'updated_at'),
  };
};

interface ValidatorPage extends ValidatorList {
  hasNext: boolean;
  totalPages: number;
}

export class StakeClient {
  constructor(private readonly http: UpstreamHttp) {}

  async delegations(delegator: string, args: PageArgs, scope: CallScope = {}): Promise<Page<Delegation>> {
    const { body } = await this.http.get('/stake/delegator/delegations', {
      query: { delegator_address: delegator, ...pageQuery(args) },
      ...scope,
    });
    return decodeBody('stake', 'delegations', body, (o) => ({
      nodes: list(o.delegation_responses, 'delegation_responses').map(toDelegation),
      pageInfo: toPageInfo(o.pagination),
    }));
  }

  private async validatorPage(page: number, scope: CallScope = {}): Promise<ValidatorPage> {
    const { body } = await this.http.get('/stake/validators', {
      query: pageQuery({ page, pageSize: VALIDATOR_PAGE_SIZE }),
      ...scope,
    });
    return decodeBody('stake', 'validators', body, (o) => {
      const pageInfo = toPageInfo(o.pagination);
      return {
        validators: list(o.validators, 'validators').map(toValidator),
        statistics: toStatistics(o.statistics),
        hasNext: pageInfo.hasNextPage,
        totalPages: pageInfo.totalPages,
      };
    });
  }

  /**
   * The whole validator list: the first page tells how many there are, the rest are fetched
   * concurrently; `has_next` of the last page is followed in case the list grew meanwhile.
   */
  async allValidators(scope: CallScope = {}): Promise<ValidatorList> {
    const first = await this.validatorPage(1, scope);
    const pages = [first];
    if (first.hasNext) {
      const rest = Array.from({ length: Math.max(first.totalPages - 1, 1) }, (_, i) =>
        this.validatorPage(i + 2, scope),
      );
      pages.push(...(await Promise.all(rest)));
      while ((pages.at(-1) as ValidatorPage).hasNext)
        pages.push(await this.validatorPage(pages.length + 1, scope));
    }
    const seen = new Set<string>();
    const validators = pages
      .flatMap((p) => p.validators)
      .filter((v) => !seen.has(v.operatorAddress) && seen.add(v.operatorAddress));
    return { validators, statistics: first.statistics };
  }

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
    const res = await this.http.put('/stake/buyback/rounds', body, {
      headers: { authorization: `Bearer ${token}` },
      ...scope,
      statusError: (status) =>
        status === 404
          ? {
              code: 'BAD_USER_INPUT',
              message: `No buyback round with roundId "${update.roundId.slice(0, 64)}".`,
            }
          : status === 400 || status === 409 || status === 422
            ? {
                code: 'BAD_USER_INPUT',
                message: 'The staking service refused the update as inconsistent with the round.',
              }
            : undefined,
    });
    return decodeBody('stake', 'buyback round', res.body, toRound);
  }
}
