import type {
  Address,
  Block,
  SearchResult,
  SearchResults,
  SubmitTarget,
  Suggestions,
  Transaction,
} from '../upstream/models.js';
import { builder, NULL_ON_FAILURE, UPSTREAM_COST } from './builder.js';
import { AddressRef, BlockRef, TransactionRef } from './chain.js';
import { searchText } from './rules.js';

const SearchCategoryRef = builder.enumType('SearchCategory', {
  description: 'A category of search suggestions.',
  values: {
    TRANSACTIONS: { value: 'transactions', description: 'Transactions, matched by hash.' },
    BLOCKS: { value: 'blocks', description: 'Blocks, matched by height or hash.' },
    ADDRESSES: { value: 'addresses', description: 'Account and contract addresses.' },
  } as const,
});

const SearchKindRef = builder.enumType('SearchKind', {
  description: 'What a search hit or a submit target is.',
  values: {
    TRANSACTION: { value: 'transaction', description: 'A transaction.' },
    BLOCK: { value: 'block', description: 'A block.' },
    ADDRESS: { value: 'address', description: 'An address.' },
  } as const,
});

const SearchTargetRef = builder.unionType('SearchTarget', {
  description: 'The thing a search hit names.',
  types: [BlockRef, TransactionRef, AddressRef],
  resolveType: (value) =>
    'height' in value ? BlockRef : 'blockActionIndex' in value ? TransactionRef : AddressRef,
});

/** The block, transaction or address a hit names, fetched (deduplicated) through the request's loaders. */
const resolveTarget = (
  kind: SubmitTarget['kind'],
  key: string,
  ctx: {
    loaders: { block(h: number): Promise<Block | null>; transaction(h: string): Promise<Transaction | null> };
  },
): Promise<Block | Transaction | Address | null> | Address =>
  kind === 'block'
    ? ctx.loaders.block(Number(key))
    : kind === 'transaction'
      ? ctx.loaders.transaction(key)
      : { address: key };

const SubmitTargetRef = builder.objectRef<SubmitTarget>('SubmitTarget').implement({
  description: 'Where the search box goes when the user presses Enter.',
  fields: (t) => ({
    kind: t.field({
      type: SearchKindRef,
      cacheScope: 'parent',
      description: 'What the target is.',
      resolve: (s) => s.kind,
    }),
    hash: t.exposeString('hash', {
      nullable: true,
      description: 'The transaction hash, when kind is TRANSACTION.',
    }),
    height: t.exposeInt('height', { nullable: true, description: 'The block height, when kind is BLOCK.' }),
    address: t.exposeString('address', { nullable: true, description: 'The address, when kind is ADDRESS.' }),
  }),
});

const SuggestionCountsRef = builder.objectRef<Suggestions['counts']>('SuggestionCounts').implement({
  description: 'How many matches each category has in all, beyond the suggestions shown.',
  fields: (t) => ({
    transactions: t.exposeInt('transactions', { description: 'Matching transactions.' }),
    blocks: t.exposeInt('blocks', { description: 'Matching blocks.' }),
    addresses: t.exposeInt('addresses', { description: 'Matching addresses.' }),
  }),
});

const SearchSuggestionsRef = builder.objectRef<Suggestions>('SearchSuggestions').implement({
  description: 'Suggestions for a search box: at most 10 per category, exact matches first.',
  fields: (t) => ({
    query: t.exposeString('query', { description: 'The search text that was processed.' }),
    transactions: t.field({
      cacheScope: 'parent',
      type: [TransactionRef],
      description: 'Transactions whose hash starts with the text.',
      resolve: (s) => s.transactions,
    }),
    blocks: t.field({
      cacheScope: 'parent',
      type: [BlockRef],
      description: 'Blocks whose height or hash starts with the text.',
      resolve: (s) => s.blocks,
    }),
    addresses: t.field({
      cacheScope: 'parent',
      type: [AddressRef],
      description: 'Addresses that start with the text.',
      resolve: (s) => s.addresses,
    }),
    counts: t.field({
      cacheScope: 'parent',
      type: SuggestionCountsRef,
      description: 'Full match counts per category.',
      resolve: (s) => s.counts,
    }),
    selectedCategory: t.field({
      cacheScope: 'parent',
      type: SearchCategoryRef,
      description: 'The category the panel should open on.',
      resolve: (s) => s.selectedCategory,
    }),
    submitTarget: t.field({
      cacheScope: 'parent',
      type: SubmitTargetRef,
      nullable: true,
      description: 'Where Enter goes; null means keep the suggestion panel open.',
      resolve: (s) => s.submitTarget,
    }),
  }),
});

const SearchResultRef = builder.objectRef<SearchResult>('SearchResult').implement({
  description: 'One exact match of a search.',
  fields: (t) => ({
    kind: t.field({
      type: SearchKindRef,
      cacheScope: 'parent',
      description: 'What was found.',
      resolve: (r) => r.kind,
    }),
    identity: t.exposeString('identity', {
      description: 'Its identity: a block height, a transaction hash or an address.',
    }),
    matched: t.exposeString('matched', { description: 'The text that matched.' }),
    canonicalUrl: t.exposeString('canonicalUrl', { description: 'The explorer path of the thing found.' }),
    target: t.field({
      type: SearchTargetRef,
      complexity: UPSTREAM_COST,
      cacheScope: 'public',
      nullable: true,
      description: 'The block, transaction or address itself; null if it vanished meanwhile.',
      resolve: (r, _args, ctx) => resolveTarget(r.kind, r.identity, ctx),
    }),
  }),
});

const SearchResultsRef = builder.objectRef<SearchResults>('SearchResults').implement({
  description:
    'Exact matches of a search text. Classification is strict: digits are a block height, 0x and 40 hex an address, 0x and 64 hex a block or transaction hash; anything else finds nothing.',
  fields: (t) => ({
    query: t.exposeString('query', { description: 'The search text.' }),
    results: t.field({
      cacheScope: 'parent',
      type: [SearchResultRef],
      description: 'The matches; empty when nothing matches exactly.',
      resolve: (s) => s.results,
    }),
  }),
});

builder.queryFields((t) => ({
  searchSuggestions: t.field({
    type: SearchSuggestionsRef,
    complexity: UPSTREAM_COST,
    // The same for everyone: latest state, kept until the next block (docs/graph.md).
    cacheScope: 'public',
    nullable: true,
    description: `Suggestions for each keystroke in a search box.${NULL_ON_FAILURE}`,
    args: {
      query: t.arg.string({
        required: true,
        description: 'The search text: at most 256 bytes of UTF-8, no NUL.',
        validate: searchText('query'),
      }),
    },
    resolve: (_root, args, ctx) => ctx.loaders.suggestions.load(args.query),
  }),
  search: t.field({
    type: SearchResultsRef,
    complexity: UPSTREAM_COST,
    cacheScope: 'public',
    nullable: true,
    description: `Strict exact search: what the text names, never a guess.${NULL_ON_FAILURE}`,
    args: {
      query: t.arg.string({
        required: true,
        description: 'The search text: at most 256 bytes of UTF-8, no NUL.',
        validate: searchText('query'),
      }),
    },
    resolve: (_root, args, ctx) => ctx.loaders.search.load(args.query),
  }),
}));
