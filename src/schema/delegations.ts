import type { Delegation } from '../upstream/models.js';
import { builder, NULL_ON_FAILURE, type Types } from './builder.js';
import { type CursorRule, pagedCost, pageOf, pageRequest, pagingArgs } from './page.js';
import { accountAddress } from './rules.js';
import { CoinRef, ValidatorRef } from './validators.js';

export const DelegationRef = builder.objectRef<Delegation>('Delegation').implement({
  description: 'Tokens a delegator has bonded to one validator.',
  fields: (t) => ({
    validatorAddress: t.exposeString('validatorAddress', {
      description: 'The operator address of the validator, as staking sent it (bech32 in production).',
    }),
    shares: t.expose('shares', { type: 'Decimal', description: 'The delegator’s shares of the validator.' }),
    balance: t.field({
      cacheScope: 'parent',
      type: CoinRef,
      description: 'What the shares are worth now.',
      resolve: (d) => d.balance,
    }),
    validator: t.field({
      type: ValidatorRef,
      nullable: true,
      cacheScope: 'public',
      description:
        'The validator, from the validator list; null when the list does not know it (a validator that left the set). Null also when the validator list could not be read, with a coded error in `errors`.',
      resolve: (d, _args, ctx) => ctx.loaders.validator(d.validatorAddress),
    }),
  }),
});

/** Delegations page by the validator address of the last one seen. */
const delegationCursor: CursorRule<Delegation> = {
  list: 'delegations',
  key: (d) => d.validatorAddress,
  item: 'delegation',
};
const DelegationPageRef = pageOf(
  DelegationRef,
  'Delegation',
  'delegations, by validator address',
  delegationCursor,
);

/** A paged delegations field on a parent that names the delegator (an Address). */
export function delegationsField<Parent>(
  t: PothosSchemaTypes.ObjectFieldBuilder<Types, Parent>,
  delegatorOf: (parent: Parent) => string,
  description: string,
) {
  return t.field({
    type: DelegationPageRef,
    complexity: pagedCost,
    // Live balances.
    cacheScope: 'private',
    nullable: true,
    description,
    args: pagingArgs(t.arg, delegationCursor),
    resolve: (parent, args, ctx) =>
      ctx.loaders.delegations.load({
        delegator: delegatorOf(parent),
        ...pageRequest(args, ctx, delegationCursor),
      }),
  });
}

builder.queryField('delegations', (t) =>
  t.field({
    type: DelegationPageRef,
    complexity: pagedCost,
    // Live balances.
    cacheScope: 'private',
    nullable: true,
    description: `The delegations of one delegator, one page at a time.${NULL_ON_FAILURE}`,
    args: {
      delegatorAddress: t.arg.string({
        required: true,
        description: 'The delegator’s account address: `0x…` or bech32 (`biya1…`), whichever the caller has.',
        validate: accountAddress('delegatorAddress'),
      }),
      ...pagingArgs(t.arg, delegationCursor),
    },
    resolve: (_root, args, ctx) =>
      ctx.loaders.delegations.load({
        delegator: args.delegatorAddress,
        ...pageRequest(args, ctx, delegationCursor),
      }),
  }),
);
