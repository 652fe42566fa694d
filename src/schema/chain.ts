import type { Address, Block, Transaction } from '../upstream/models.js';
import { builder, NULL_ON_FAILURE, UPSTREAM_COST } from './builder.js';
import { delegationsField } from './delegations.js';
import { atLeast, transactionHash } from './rules.js';
import { unixDateTime } from './scalars.js';
import { ValidatorRef } from './validators.js';

export const BlockRef = builder.objectRef<Block>('Block').implement({
  description: 'A block of the chain.',
  fields: (t) => ({
    height: t.exposeInt('height', { description: 'The block’s height, from 1.' }),
    hash: t.exposeString('hash', { description: 'The block hash: 0x and 64 hexadecimal characters.' }),
    blockTime: t.field({
      cacheScope: 'parent',
      type: 'DateTime',
      description: 'When the block was made.',
      resolve: (b) => unixDateTime(b.blockTime),
    }),
    blockTimeUnix: t.int({
      cacheScope: 'parent',
      description: 'When the block was made, in Unix seconds (the same instant as blockTime).',
      resolve: (b) => b.blockTime,
    }),
    transactionCount: t.exposeInt('transactionCount', {
      description: 'Transactions (actions) in the block.',
    }),
    actionCountComplete: t.exposeBoolean('actionCountComplete', {
      description: 'Whether transactionCount is final; false while the block may still receive actions.',
    }),
    proposer: t.exposeString('proposer', {
      description: 'The address of the validator that proposed the block, as the chain records it.',
    }),
    proposerValidator: t.field({
      type: ValidatorRef,
      nullable: true,
      cacheScope: 'public',
      description:
        'The proposing validator, matched by operator, consensus or wallet address in either encoding; null when the validator list has none such. Null also when the validator list could not be read, with a coded error in `errors`.',
      resolve: (b, _args, ctx) => ctx.loaders.validator(b.proposer),
    }),
  }),
});

export const TransactionRef = builder.objectRef<Transaction>('Transaction').implement({
  description: 'A transaction (an action of a block).',
  fields: (t) => ({
    hash: t.exposeString('hash', { description: 'The transaction hash: 0x and 64 hexadecimal characters.' }),
    blockHeight: t.exposeInt('blockHeight', { description: 'Height of the block holding the transaction.' }),
    blockActionIndex: t.exposeInt('blockActionIndex', {
      description: 'Position of the transaction in its block, from 0.',
    }),
    blockTime: t.field({
      cacheScope: 'parent',
      type: 'DateTime',
      description: 'When its block was made.',
      resolve: (tx) => unixDateTime(tx.blockTime),
    }),
    blockTimeUnix: t.int({
      cacheScope: 'parent',
      description: 'When its block was made, in Unix seconds (the same instant as blockTime).',
      resolve: (tx) => tx.blockTime,
    }),
    initiator: t.exposeString('initiator', { description: 'The address that sent the transaction.' }),
    type: t.exposeString('type', {
      description: 'The kind of action, for example "transfer" or "delegate".',
    }),
    block: t.field({
      type: BlockRef,
      complexity: UPSTREAM_COST,
      cacheScope: 'public',
      chainHistory: true,
      nullable: true,
      description:
        'The block holding the transaction; null when search cannot find it, or, with a coded error, when search fails.',
      resolve: (tx, _args, ctx) => ctx.loaders.block(tx.blockHeight),
    }),
  }),
});

export const AddressRef = builder.objectRef<Address>('Address').implement({
  description: 'An account or contract address.',
  fields: (t) => ({
    address: t.exposeString('address', { description: 'The address: 0x and 40 hexadecimal characters.' }),
    validator: t.field({
      type: ValidatorRef,
      nullable: true,
      cacheScope: 'public',
      description:
        'The validator this address operates (its wallet address); null for any other address. Null also when the validator list could not be read, with a coded error in `errors`.',
      resolve: (a, _args, ctx) => ctx.loaders.validator(a.address),
    }),
    delegations: delegationsField(
      t,
      (a) => a.address,
      'The delegations this address holds, one page at a time; null, with a coded error, when staking fails.',
    ),
  }),
});

builder.queryFields((t) => ({
  block: t.field({
    type: BlockRef,
    complexity: UPSTREAM_COST,
    cacheScope: 'public',
    chainHistory: true,
    nullable: true,
    description: `One block by height; null when the chain has no such block.${NULL_ON_FAILURE}`,
    args: {
      height: t.arg.int({
        required: true,
        description: 'The block height, from 1.',
        validate: atLeast('height', 1),
      }),
    },
    resolve: (_root, args, ctx) => ctx.loaders.block(args.height),
  }),
  transaction: t.field({
    type: TransactionRef,
    complexity: UPSTREAM_COST,
    cacheScope: 'public',
    chainHistory: true,
    nullable: true,
    description: `One transaction by hash; null when the chain has no such transaction.${NULL_ON_FAILURE}`,
    args: {
      hash: t.arg.string({
        required: true,
        description: 'The transaction hash: 0x and 64 hexadecimal characters.',
        validate: transactionHash('hash'),
      }),
    },
    resolve: (_root, args, ctx) => ctx.loaders.transaction(args.hash),
  }),
}));
