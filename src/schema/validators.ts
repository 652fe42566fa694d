import type { Coin, Commission, Validator, ValidatorStatistics } from '../upstream/models.js';
import { builder, pagedCost, UPSTREAM_COST } from './builder.js';
import { pageArgFields, pageOf, slicePage } from './page.js';
import { pageArgs, text } from './validate.js';

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
      description: 'The highest rate the validator may ever charge.',
    }),
    maxChangeRate: t.expose('maxChangeRate', {
      type: 'Decimal',
      description: 'The largest change of rate allowed per day.',
    }),
    updateTime: t.expose('updateTime', { type: 'DateTime', description: 'When the rate last changed.' }),
  }),
});

export const ValidatorRef = builder.objectRef<Validator>('Validator').implement({
  description: 'A validator of the chain, with its stake, commission and liveness.',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'The staking service’s identifier of the validator.' }),
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
    status: t.exposeInt('status', { description: 'The staking service’s status number, as it sent it.' }),
    tokens: t.expose('tokens', {
      type: 'Amount',
      description: 'Tokens bonded to the validator, in base units: its voting power.',
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
    commission: t.field({
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
      description: 'Signed blocks as a percentage of the uptime window.',
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
      type: [CoinRef],
      description: 'Rewards accrued and not yet withdrawn, per denomination.',
      resolve: (v) => v.outstandingRewards,
    }),
  }),
});

const ValidatorStatisticsRef = builder.objectRef<ValidatorStatistics>('ValidatorStatistics').implement({
  description: 'Figures over the whole validator set.',
  fields: (t) => ({
    totalValidators: t.expose('totalValidators', { type: 'BigInt', description: 'Validators in the list.' }),
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
      description: 'Tokens staked with active validators.',
    }),
    rewards24h: t.expose('rewards24h', {
      type: 'Amount',
      description: 'Staking rewards paid over the last 24 hours.',
    }),
    annualizedRewardRate: t.expose('annualizedRewardRate', {
      type: 'Decimal',
      description: 'The reward rate per year, as a fraction.',
    }),
    slashingEvents24h: t.expose('slashingEvents24h', {
      type: 'BigInt',
      description: 'Slashing events over the last 24 hours.',
    }),
    timestamp: t.expose('timestamp', { type: 'DateTime', description: 'When these figures were computed.' }),
  }),
});

const ValidatorPageRef = pageOf(ValidatorRef, 'Validator', 'validators, by voting power');

builder.queryFields((t) => ({
  validators: t.field({
    type: ValidatorPageRef,
    complexity: pagedCost,
    cacheScope: 'public',
    nullable: true,
    description: 'The validator set, by voting power, one page at a time.',
    args: pageArgFields(t.arg),
    resolve: async (_root, args, ctx) => {
      const { page, pageSize } = pageArgs(args);
      const { list } = await ctx.loaders.validatorDirectory();
      return slicePage(list.validators, page, pageSize);
    },
  }),
  validator: t.field({
    type: ValidatorRef,
    complexity: UPSTREAM_COST,
    cacheScope: 'public',
    nullable: true,
    description:
      'One validator by its operator address (a consensus or wallet address also works); null when unknown.',
    args: {
      operatorAddress: t.arg.string({ required: true, description: 'The validator’s operator address.' }),
    },
    resolve: (_root, args, ctx) => ctx.loaders.validator(text('operatorAddress', args.operatorAddress)),
  }),
  validatorStatistics: t.field({
    type: ValidatorStatisticsRef,
    complexity: UPSTREAM_COST,
    cacheScope: 'public',
    nullable: true,
    description: 'Figures over the whole validator set.',
    resolve: async (_root, _args, ctx) => (await ctx.loaders.validatorDirectory()).list.statistics,
  }),
}));
