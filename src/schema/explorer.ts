import { unauthenticated } from '../errors.js';
import type { Contract, FailedTransaction } from '../upstream/models.js';
import { builder, NULL_ON_FAILURE } from './builder.js';
import { type Context, explorerTokenOf } from './context.js';
import { type CursorRule, pagedCost, pageOf, pageRequest, pagingArgs } from './page.js';
import { text } from './rules.js';
import { textDateTime, unixDateTime } from './scalars.js';

/** Contracts (4.4) and failed transactions (4.5): the explorer's reads, behind a bearer token. */

/**
 * The token an explorer read goes with (explorerTokenOf). The `explorerToken` scope the explorer's
 * fields declare guarantees one; a field without that scope (a node) answers UNAUTHENTICATED
 * without one, and no explorer call is made.
 */
export function explorerToken(ctx: Context): string {
  const token = explorerTokenOf(ctx);
  if (!token) throw unauthenticated('Reading this needs an `Authorization: Bearer <token>` header.');
  return token;
}

export const ContractRef = builder.objectRef<Contract>('Contract').implement({
  description: 'A token or NFT contract known to the explorer. Fields the explorer did not send are null.',
  fields: (t) => ({
    address: t.exposeString('address', { nullable: true, description: 'The contract address.' }),
    symbol: t.exposeString('symbol', {
      nullable: true,
      description: 'The token symbol, for example "USDT".',
    }),
    name: t.exposeString('name', { nullable: true, description: 'The token or collection name.' }),
    chainId: t.exposeString('chainId', {
      nullable: true,
      description: 'The chain the contract lives on, for example "1".',
    }),
    contractType: t.exposeString('contractType', {
      nullable: true,
      description: 'The contract standard, for example "ERC20".',
    }),
    decimals: t.exposeInt('decimals', {
      nullable: true,
      description: 'Decimals of the token: totalSupply / 10^decimals is the supply in tokens.',
    }),
    totalSupply: t.expose('totalSupply', {
      type: 'Amount',
      nullable: true,
      description: 'Total supply in base units.',
    }),
    holders: t.exposeInt('holders', { nullable: true, description: 'Number of holders.' }),
    verified: t.exposeBoolean('verified', {
      nullable: true,
      description: 'Whether the source code is verified.',
    }),
    deployer: t.exposeString('deployer', {
      nullable: true,
      description: 'The address that deployed the contract.',
    }),
    creationTxHash: t.exposeString('creationTxHash', {
      nullable: true,
      description: 'The transaction that created it.',
    }),
    createdAt: t.field({
      cacheScope: 'parent',
      type: 'DateTime',
      nullable: true,
      description: 'When it was created; null when the explorer sent no time or one that is not RFC 3339.',
      resolve: (c) => textDateTime(c.createdAt),
    }),
    updatedAt: t.field({
      cacheScope: 'parent',
      type: 'DateTime',
      nullable: true,
      description:
        'When the explorer last updated its record; null when it sent no time or one that is not RFC 3339.',
      resolve: (c) => textDateTime(c.updatedAt),
    }),
    tags: t.exposeStringList('tags', {
      nullable: true,
      description: 'The explorer’s labels for the contract, for example "stablecoin".',
    }),
    raw: t.expose('raw', { type: 'JSON', description: 'The item exactly as the explorer sent it.' }),
  }),
});

export const FailedTransactionRef = builder.objectRef<FailedTransaction>('FailedTransaction').implement({
  description: 'A transaction that failed. Fields the explorer did not send are null.',
  fields: (t) => ({
    hash: t.exposeString('hash', { nullable: true, description: 'The transaction hash.' }),
    txNumber: t.exposeInt('txNumber', {
      nullable: true,
      description: 'The transaction’s sequence number on the chain.',
    }),
    blockHeight: t.exposeInt('blockHeight', { nullable: true, description: 'Height of its block.' }),
    actionIndex: t.exposeInt('actionIndex', {
      nullable: true,
      description: 'Position in its block, from 0.',
    }),
    blockTime: t.field({
      cacheScope: 'parent',
      type: 'DateTime',
      nullable: true,
      description: 'When its block was made.',
      resolve: (tx) => (tx.blockTime === null ? null : unixDateTime(tx.blockTime)),
    }),
    blockTimeUnix: t.int({
      cacheScope: 'parent',
      nullable: true,
      description: 'When its block was made, in Unix seconds (the same instant as blockTime).',
      resolve: (tx) => tx.blockTime,
    }),
    initiator: t.exposeString('initiator', { nullable: true, description: 'The address that sent it.' }),
    type: t.exposeString('type', { nullable: true, description: 'The kind of action.' }),
    error: t.exposeString('error', { nullable: true, description: 'Why it failed.' }),
    code: t.exposeInt('code', {
      nullable: true,
      description: 'The chain’s result code for the transaction (non-zero: it failed).',
    }),
    codespace: t.exposeString('codespace', {
      nullable: true,
      description: 'The module whose result `code` is, for example "sdk".',
    }),
    gasUsed: t.expose('gasUsed', { type: 'BigInt', nullable: true, description: 'Gas it used.' }),
    gasWanted: t.expose('gasWanted', {
      type: 'BigInt',
      nullable: true,
      description: 'Gas limit the sender set.',
    }),
    raw: t.expose('raw', { type: 'JSON', description: 'The item exactly as the explorer sent it.' }),
  }),
});

/** Contracts page by the address of the last one seen. */
const contractCursor: CursorRule<Contract> = {
  list: 'contracts',
  key: (c) => c.address,
  item: 'contract',
};
/** Failed transactions page by the txNumber of the last one seen, or its "blockHeight:actionIndex". */
const failedTransactionCursor: CursorRule<FailedTransaction> = {
  list: 'failedTransactions',
  key: (tx) =>
    tx.txNumber !== null
      ? String(tx.txNumber)
      : tx.blockHeight !== null && tx.actionIndex !== null
        ? `${tx.blockHeight}:${tx.actionIndex}`
        : null,
  item: 'transaction',
};
const ContractPageRef = pageOf(ContractRef, 'Contract', 'contracts, by address', contractCursor);
const FailedTransactionPageRef = pageOf(
  FailedTransactionRef,
  'FailedTransaction',
  'failed transactions, newest first',
  failedTransactionCursor,
);

builder.queryFields((t) => ({
  contractsBySymbol: t.field({
    type: ContractPageRef,
    complexity: pagedCost,
    // Behind the caller's token.
    cacheScope: 'private',
    authScopes: { explorerToken: true },
    nullable: true,
    description: `Contracts with a token symbol, optionally on one chain or of one type. Needs a bearer token (null with UNAUTHENTICATED without one).${NULL_ON_FAILURE}`,
    args: {
      symbol: t.arg.string({
        required: true,
        description: 'The token symbol, for example "USDT".',
        validate: text('symbol'),
      }),
      chainId: t.arg.string({ description: 'Only contracts on this chain.', validate: text('chainId') }),
      contractType: t.arg.string({
        description: 'Only contracts of this standard, for example "ERC20".',
        validate: text('contractType'),
      }),
      ...pagingArgs(t.arg, contractCursor),
    },
    resolve: (_root, args, ctx) => {
      const query = {
        symbol: args.symbol,
        chainId: args.chainId ?? null,
        contractType: args.contractType ?? null,
        ...pageRequest(args, ctx, contractCursor),
      };
      return ctx.loaders.contracts.load({ query, token: explorerToken(ctx) });
    },
  }),
  failedTransactions: t.field({
    type: FailedTransactionPageRef,
    complexity: pagedCost,
    // Behind the caller's token.
    cacheScope: 'private',
    authScopes: { explorerToken: true },
    nullable: true,
    description: `Transactions that failed in the last 24 hours, newest first. Needs a bearer token (null with UNAUTHENTICATED without one).${NULL_ON_FAILURE}`,
    args: pagingArgs(t.arg, failedTransactionCursor),
    resolve: (_root, args, ctx) =>
      ctx.loaders.failedTransactions.load({
        args: pageRequest(args, ctx, failedTransactionCursor),
        token: explorerToken(ctx),
      }),
  }),
}));
