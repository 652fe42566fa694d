import { badUserInput } from '../errors.js';
import type { Coin, Commission, Validator, ValidatorStatistics } from '../upstream/models.js';
import { builder, knownOrUnspecified, NULL_ON_FAILURE, type Types, UPSTREAM_COST } from './builder.js';
import { type CursorRule, pagedCost, pageOf, pageRequest, pagingArgs, slicePage } from './page.js';
import { text } from './rules.js';

export const CoinRef = builder.objectRef<Coin>('Coin').implement({
  description: 'An amount of one denomination.',
  fields: (t) => ({
    denom: t.exposeString('denom', { description: 'The denomination, for example "ustake".' }),
    amount: t.expose('amount', { type: 'Amount', description: 'The amount in base units of `denom`.' }),
  }),
});

const CommissionRef = builder.objectRef<Commission>('Commission').implement({
  description: 'A validator’s commission on its delegators’ rewards.',
  fields: (t) => ({
    rate: t.expose('rate', { type: 'Decimal', description: 'The current rate, as a fraction (0.05 is 5%).' }),
    maxRate: t.expose('maxRate', {
      type: 'Decimal',
      description: 'The highest rate the validator may ever charge, as a fraction.',
    }),
    maxChangeRate: t.expose('maxChangeRate', {
      type: 'Decimal',
      description:
        'The largest change of rate allowed per day, as a fraction (0.01 is one percentage point).',
    }),
    updateTime: t.expose('updateTime', { type: 'DateTime', description: 'When the rate last changed.' }),
  }),
});

const BondStatusRef = builder.enumType('BondStatus', {
  description:
    'Where a validator stands in the Cosmos SDK staking module. Only BONDED validators are in the active set and earn rewards.',
  values: {
    UNSPECIFIED: {
      value: 'UNSPECIFIED',
      description: 'No status, or one this gateway does not know yet (counted in /metrics).',
    },
    UNBONDED: {
      value: 'UNBONDED',
      description: 'Not in the active set; its stake is free to leave at once.',
    },
    UNBONDING: {
      value: 'UNBONDING',
      description: 'Leaving the active set; its stake stays bonded until the unbonding time.',
    },
    BONDED: { value: 'BONDED', description: 'In the active set: it signs blocks and earns rewards.' },
  } as const,
});

type ValidatorFieldBuilder = PothosSchemaTypes.ObjectFieldBuilder<Types, Validator>;

/** Who the validator is and where it stands: names, addresses, status, stake. */
const identityFields = (t: ValidatorFieldBuilder) => ({
  recordId: t.exposeID('id', {
    description:
      'The staking service’s own record number of the validator (formerly `id`; `id` is now the global object id).',
  }),
  moniker: t.exposeString('moniker', { description: 'The validator’s display name.' }),
  operatorAddress: t.exposeString('operatorAddress', {
    description: 'The operator address that delegations name.',
  }),
  consensusAddress: t.exposeString('consensusAddress', {
    description: 'The consensus address that blocks name as proposer.',
  }),
  walletAddress: t.exposeString('walletAddress', {
    description: 'The account address of the validator’s operator.',
  }),
  jailed: t.exposeBoolean('jailed', {
    description: 'Whether the validator is jailed (removed from the active set for misbehaviour).',
  }),
  status: t.exposeInt('status', {
    description:
      'The bond status as a number (1 unbonded, 2 unbonding, 3 bonded), as the staking service sent it.',
    deprecationReason: 'Kept for compatibility: read `bondStatus`.',
  }),
  bondStatus: t.field({
    type: BondStatusRef,
    cacheScope: 'parent',
    description: 'The bond status; UNSPECIFIED for a value the gateway does not know.',
    resolve: (v, _args, ctx) => knownOrUnspecified(ctx, 'BondStatus', v.bondStatus),
  }),
  tokens: t.expose('tokens', {
    type: 'Amount',
    description:
      'Tokens bonded to the validator, its voting power, in base units of the staking denomination (18 decimals: 10^18 base units are one token).',
  }),
  delegatorShares: t.expose('delegatorShares', {
    type: 'Decimal',
    description: 'Shares issued to the validator’s delegators.',
  }),
  description: t.exposeString('description', { description: 'The validator’s self-description.' }),
  unbondingHeight: t.expose('unbondingHeight', {
    type: 'BigInt',
    description: 'Height at which unbonding started; "0" if never.',
  }),
  unbondingTime: t.expose('unbondingTime', {
    type: 'DateTime',
    description: 'When unbonding completes, as the staking service sent it.',
  }),
});

/** What it charges and how well it signs: commission, liveness, rewards. */
const performanceFields = (t: ValidatorFieldBuilder) => ({
  commission: t.field({
    cacheScope: 'parent',
    type: CommissionRef,
    description: 'The commission settings.',
    resolve: (v) => v.commission,
  }),
  proposed: t.expose('proposed', { type: 'BigInt', description: 'Blocks the validator proposed.' }),
  signed: t.expose('signed', {
    type: 'BigInt',
    description: 'Blocks the validator signed in the uptime window.',
  }),
  missed: t.expose('missed', {
    type: 'BigInt',
    description: 'Blocks the validator missed in the uptime window.',
  }),
  timestamp: t.expose('timestamp', { type: 'DateTime', description: 'When these figures were computed.' }),
  uptimes: t.exposeStringList('uptimes', {
    description: 'Recent uptime figures, oldest first, as the staking service sent them.',
  }),
  slashingEvents: t.exposeStringList('slashingEvents', {
    description: 'Slashing events of the validator, as text.',
  }),
  uptimePercentage: t.exposeFloat('uptimePercentage', {
    description:
      'Signed blocks as a percentage of the uptime window, from 0 to 100 (99.5 means 99.5 %), not a fraction.',
  }),
  imageUrl: t.exposeString('imageUrl', { description: 'URL of the validator’s logo.' }),
  registrationTime: t.expose('registrationTime', {
    type: 'DateTime',
    description: 'When the validator registered.',
  }),
  delegationCount: t.expose('delegationCount', {
    type: 'BigInt',
    description: 'Number of delegations to the validator.',
  }),
  outstandingRewards: t.field({
    cacheScope: 'parent',
    type: [CoinRef],
    description: 'Rewards accrued and not yet withdrawn, per denomination.',
    resolve: (v) => v.outstandingRewards,
  }),
});

export const ValidatorRef = builder.objectRef<Validator>('Validator').implement({
  description: 'A validator of the chain, with its stake, commission and liveness.',
  fields: (t) => ({ ...identityFields(t), ...performanceFields(t) }),
});

export const ValidatorStatisticsRef = builder
  .objectRef<ValidatorStatistics>('ValidatorStatistics')
  .implement({
    description: 'Figures over the whole validator set.',
    fields: (t) => ({
      totalValidators: t.expose('totalValidators', {
        type: 'BigInt',
        description: 'Validators in the list.',
      }),
      consensusValidators: t.expose('consensusValidators', {
        type: 'BigInt',
        description: 'Validators in the consensus set.',
      }),
      activeValidators: t.expose('activeValidators', {
        type: 'BigInt',
        description: 'Validators bonded and not jailed.',
      }),
      totalStakedAmount: t.expose('totalStakedAmount', {
        type: 'Amount',
        description: 'Tokens staked with active validators, in base units (18 decimals).',
      }),
      rewards24h: t.expose('rewards24h', {
        type: 'Amount',
        description: 'Staking rewards paid over the last 24 hours, in base units (18 decimals).',
      }),
      annualizedRewardRate: t.expose('annualizedRewardRate', {
        type: 'Decimal',
        description: 'The reward rate per year, as a fraction (0.12 is 12 % a year).',
      }),
      slashingEvents24h: t.expose('slashingEvents24h', {
        type: 'BigInt',
        description: 'Slashing events over the last 24 hours.',
      }),
      timestamp: t.expose('timestamp', {
        type: 'DateTime',
        description: 'When these figures were computed.',
      }),
    }),
  });

/** Validators page by the operator address of the last one seen (upstream-api.md 4.3). */
const validatorCursor: CursorRule<Validator> = {
  list: 'validators',
  key: (v) => v.operatorAddress,
  item: 'validator',
};
const ValidatorPageRef = pageOf(ValidatorRef, 'Validator', 'validators, by voting power', validatorCursor);

builder.queryFields((t) => ({
  validators: t.field({
    type: ValidatorPageRef,
    complexity: pagedCost,
    cacheScope: 'public',
    nullable: true,
    description: `The validator set, by voting power, one page at a time.${NULL_ON_FAILURE}`,
    args: pagingArgs(t.arg, validatorCursor),
    resolve: async (_root, args, ctx) => {
      const { page, pageSize, cursor, cursorArgument } = pageRequest(args, ctx, validatorCursor);
      const directory = await ctx.loaders.validatorDirectory();
      const validators = directory.list.validators;
      if (!cursor) return slicePage(validators, (page - 1) * pageSize, pageSize);
      const after = directory.find(cursor);
      if (!after) {
        throw badUserInput(
          cursorArgument,
          `${cursorArgument} names no validator of the list any more: start again from the first page.`,
        );
      }
      return slicePage(validators, validators.indexOf(after) + 1, pageSize);
    },
  }),
  validator: t.field({
    type: ValidatorRef,
    complexity: UPSTREAM_COST,
    cacheScope: 'public',
    nullable: true,
    description: `One validator by its operator address; its consensus or wallet address also finds it, in either encoding (0x… or bech32). Null when the list has no such validator.${NULL_ON_FAILURE}`,
    args: {
      operatorAddress: t.arg.string({
        required: true,
        description: 'The validator’s operator address.',
        validate: text('operatorAddress'),
      }),
    },
    resolve: (_root, args, ctx) => ctx.loaders.validator(args.operatorAddress),
  }),
  validatorStatistics: t.field({
    type: ValidatorStatisticsRef,
    complexity: UPSTREAM_COST,
    cacheScope: 'public',
    nullable: true,
    description: `Figures over the whole validator set.${NULL_ON_FAILURE}`,
    resolve: async (_root, _args, ctx) => (await ctx.loaders.validatorDirectory()).list.statistics,
  }),
}));
