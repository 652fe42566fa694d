import type { ArgBuilder } from '@pothos/core';
import type { Delegation } from '../upstream/models.js';
import { builder, pagedCost, type Types } from './builder.js';
import { pageArgFields, pageOf } from './page.js';
import { accountAddress, pageArgs } from './validate.js';
import { CoinRef, ValidatorRef } from './validators.js';

const DelegationRef = builder.objectRef<Delegation>('Delegation').implement({
  description: 'Tokens a delegator has bonded to one validator.',
  fields: (t) => ({
    validatorAddress: t.exposeString('validatorAddress', {
      description: 'The operator address of the validator.',
    }),
    shares: t.expose('shares', { type: 'Decimal', description: 'The delegator’s shares of the validator.' }),
    balance: t.field({
      type: CoinRef,
      description: 'What the shares are worth now.',
      resolve: (d) => d.balance,
    }),
    validator: t.field({
      type: ValidatorRef,
      nullable: true,
      cacheScope: 'public',
      description: 'The validator, from the validator list; null when the list does not know it.',
      resolve: (d, _args, ctx) => ctx.loaders.validator(d.validatorAddress),
    }),
  }),
});

const DelegationPageRef = pageOf(DelegationRef, 'Delegation', 'delegations, by validator address');

const pagingArgs = (arg: ArgBuilder<Types>) => ({
  ...pageArgFields(arg),
  cursor: arg.string({
    description: 'Continue after this validator address (the last one seen); takes priority over page.',
  }),
});

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
    args: pagingArgs(t.arg),
    resolve: (parent, args, ctx) =>
      ctx.loaders.delegations.load({ delegator: delegatorOf(parent), ...pageArgs(args) }),
  });
}

builder.queryField('delegations', (t) =>
  t.field({
    type: DelegationPageRef,
    complexity: pagedCost,
    // Live balances.
    cacheScope: 'private',
    nullable: true,
    description: 'The delegations of one delegator, one page at a time.',
    args: {
      delegatorAddress: t.arg.string({
        required: true,
        description: 'The delegator’s account address: `0x…` or bech32 (`biya1…`), whichever the caller has.',
      }),
      ...pagingArgs(t.arg),
    },
    resolve: (_root, args, ctx) =>
      ctx.loaders.delegations.load({
        delegator: accountAddress('delegatorAddress', args.delegatorAddress),
        ...pageArgs(args),
      }),
  }),
);
