/* eslint-disable */
/** Internal type. DO NOT USE DIRECTLY. */
type Exact<T extends { [key: string]: unknown }> = { [K in keyof T]: T[K] };
/** Internal type. DO NOT USE DIRECTLY. */
export type Incremental<T> = T | { [P in keyof T]?: P extends ' $fragmentName' | '__typename' ? T[P] : never };
import type { TypedDocumentNode as DocumentNode } from '@graphql-typed-document-node/core';
/** Where a validator stands in the Cosmos SDK staking module. Only BONDED validators are in the active set and earn rewards. */
export type BondStatus =
  /** In the active set: it signs blocks and earns rewards. */
  | 'BONDED'
  /** Not in the active set; its stake is free to leave at once. */
  | 'UNBONDED'
  /** Leaving the active set; its stake stays bonded until the unbonding time. */
  | 'UNBONDING'
  /** No status, or one this gateway does not know yet (counted in /metrics). */
  | 'UNSPECIFIED';

/** Where a buyback round is in its life. */
export type BuybackRoundState =
  /** Called off before it completed. */
  | 'CANCELLED'
  /** Closed: collected, bought back and burned (see burnTxHash). */
  | 'DONE'
  /** Open: slots are being booked. */
  | 'IN_PROGRESS'
  /** Scheduled: not open yet, still editable. */
  | 'PENDING'
  /** No state, or one this gateway does not know yet (counted in /metrics). */
  | 'UNSPECIFIED';

/** A category of search suggestions. */
export type SearchCategory =
  /** Account and contract addresses. */
  | 'ADDRESSES'
  /** Blocks, matched by height or hash. */
  | 'BLOCKS'
  /** Transactions, matched by hash. */
  | 'TRANSACTIONS';

/** What a search hit or a submit target is. */
export type SearchKind =
  /** An address. */
  | 'ADDRESS'
  /** A block. */
  | 'BLOCK'
  /** A transaction. */
  | 'TRANSACTION';

/** Changes to a buyback round. Fields left out keep their values. */
export type UpdateBuybackRoundInput = {
  /** New closing time; must be after the opening time. */
  endTime?: string | null | undefined;
  /** New largest amount per slot; not below minAmount. */
  maxAmount?: string | null | undefined;
  /** New smallest amount per slot; not above maxAmount. */
  minAmount?: string | null | undefined;
  /** The round to change, for example "round-006". */
  roundId: string;
  /** New opening time; must be before the closing time. */
  startTime?: string | null | undefined;
  /** New number of slots: a positive 32-bit integer, not below the slots booked. */
  totalSlots?: number | null | undefined;
};

export type BlockAddedSubscriptionVariables = Exact<{ [key: string]: never; }>;


export type BlockAddedSubscription = { blockAdded: { height: number, hash: string, blockTime: string, transactionCount: number, proposerValidator: { moniker: string, operatorAddress: string } | null } };

export type BlockPageQueryVariables = Exact<{
  height: number;
}>;


export type BlockPageQuery = { block: { height: number, hash: string, blockTime: string, transactionCount: number, actionCountComplete: boolean, proposer: string, proposerValidator: { moniker: string, operatorAddress: string, imageUrl: string } | null } | null };

export type ContractsBySymbolQueryVariables = Exact<{
  symbol: string;
  chainId?: string | null | undefined;
  contractType?: string | null | undefined;
  page?: number | null | undefined;
  pageSize?: number | null | undefined;
  cursor?: string | null | undefined;
}>;


export type ContractsBySymbolQuery = { contractsBySymbol: { pageInfo: { page: number, pageSize: number, total: string, totalPages: number, hasNextPage: boolean }, nodes: Array<{ address: string | null, symbol: string | null, name: string | null, chainId: string | null, contractType: string | null, decimals: number | null, totalSupply: string | null, holders: number | null, verified: boolean | null }> } | null };

export type DelegatorPortfolioQueryVariables = Exact<{
  delegator: string;
  page?: number | null | undefined;
  pageSize?: number | null | undefined;
}>;


export type DelegatorPortfolioQuery = { delegations: { pageInfo: { page: number, pageSize: number, total: string, totalPages: number, hasNextPage: boolean, endCursor: string | null }, nodes: Array<{ validatorAddress: string, shares: string, balance: { denom: string, amount: string }, validator: { moniker: string, bondStatus: BondStatus, jailed: boolean, commission: { rate: string } } | null }> } | null };

export type ExactSearchQueryVariables = Exact<{
  query: string;
}>;


export type ExactSearchQuery = { search: { query: string, results: Array<{ kind: SearchKind, identity: string, canonicalUrl: string, target:
        | { __typename: 'Address', address: string }
        | { __typename: 'Block', height: number, hash: string }
        | { __typename: 'Transaction', hash: string, blockHeight: number }
       | null }> } | null };

export type FailedTransactionAddedSubscriptionVariables = Exact<{ [key: string]: never; }>;


export type FailedTransactionAddedSubscription = { failedTransactionAdded: { hash: string | null, blockHeight: number | null, blockTime: string | null, type: string | null, error: string | null, code: number | null, codespace: string | null } };

export type FailedTransactionsQueryVariables = Exact<{
  page?: number | null | undefined;
  pageSize?: number | null | undefined;
  cursor?: string | null | undefined;
}>;


export type FailedTransactionsQuery = { failedTransactions: { pageInfo: { page: number, pageSize: number, total: string, totalPages: number, hasNextPage: boolean, endCursor: string | null }, nodes: Array<{ hash: string | null, txNumber: number | null, blockHeight: number | null, actionIndex: number | null, blockTime: string | null, initiator: string | null, type: string | null, error: string | null }> } | null };

export type SearchBoxQueryVariables = Exact<{
  query: string;
}>;


export type SearchBoxQuery = { searchSuggestions: { query: string, selectedCategory: SearchCategory, counts: { transactions: number, blocks: number, addresses: number }, transactions: Array<{ hash: string, blockHeight: number, blockTime: string, type: string, initiator: string }>, blocks: Array<{ height: number, hash: string, blockTime: string, transactionCount: number }>, addresses: Array<{ address: string }>, submitTarget: { kind: SearchKind, hash: string | null, height: number | null, address: string | null } | null } | null };

export type TransactionPageQueryVariables = Exact<{
  hash: string;
}>;


export type TransactionPageQuery = { transaction: { hash: string, type: string, initiator: string, blockHeight: number, blockActionIndex: number, blockTime: string, block: { hash: string, proposerValidator: { moniker: string } | null } | null } | null };

export type UpdateBuybackRoundMutationVariables = Exact<{
  input: UpdateBuybackRoundInput;
}>;


export type UpdateBuybackRoundMutation = { updateBuybackRound: { round: { roundId: string, state: BuybackRoundState, startTime: string, endTime: string, totalSlots: number, bookedSlots: number, minAmount: string, maxAmount: string, updatedAt: string } | null } };

export type ValidatorStatisticsUpdatedSubscriptionVariables = Exact<{ [key: string]: never; }>;


export type ValidatorStatisticsUpdatedSubscription = { validatorStatisticsUpdated: { totalValidators: string, activeValidators: string, totalStakedAmount: string, timestamp: string } };

export type ValidatorTableQueryVariables = Exact<{
  page?: number | null | undefined;
  pageSize?: number | null | undefined;
}>;


export type ValidatorTableQuery = { validatorStatistics: { totalValidators: string, activeValidators: string, totalStakedAmount: string, annualizedRewardRate: string } | null, validators: { pageInfo: { page: number, pageSize: number, total: string, totalPages: number, hasPreviousPage: boolean, hasNextPage: boolean, endCursor: string | null }, nodes: Array<{ moniker: string, operatorAddress: string, bondStatus: BondStatus, jailed: boolean, tokens: string, delegatorShares: string, uptimePercentage: number, delegationCount: string, imageUrl: string, commission: { rate: string, maxRate: string, maxChangeRate: string, updateTime: string } }> } | null };

export type ValidatorUpdatedSubscriptionVariables = Exact<{
  operatorAddress?: string | null | undefined;
}>;


export type ValidatorUpdatedSubscription = { validatorUpdated: { moniker: string, operatorAddress: string, bondStatus: BondStatus, jailed: boolean, tokens: string, commission: { rate: string } } };


export const BlockAddedDocument = {"__meta__":{"hash":"sha256:717be7dc8f6012efda2138b7198caeee023fde5ad0faadecdb3fb6320cb61747"},"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"subscription","name":{"kind":"Name","value":"BlockAdded"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"blockAdded"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"height"}},{"kind":"Field","name":{"kind":"Name","value":"hash"}},{"kind":"Field","name":{"kind":"Name","value":"blockTime"}},{"kind":"Field","name":{"kind":"Name","value":"transactionCount"}},{"kind":"Field","name":{"kind":"Name","value":"proposerValidator"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"moniker"}},{"kind":"Field","name":{"kind":"Name","value":"operatorAddress"}}]}}]}}]}}]} as unknown as DocumentNode<BlockAddedSubscription, BlockAddedSubscriptionVariables>;
export const BlockPageDocument = {"__meta__":{"hash":"sha256:463fa045b4cc19a4f9cb8cc2c4983142cb58caec202e049faeceda8de5eb44da"},"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"query","name":{"kind":"Name","value":"BlockPage"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"height"}},"type":{"kind":"NonNullType","type":{"kind":"NamedType","name":{"kind":"Name","value":"Int"}}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"block"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"height"},"value":{"kind":"Variable","name":{"kind":"Name","value":"height"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"height"}},{"kind":"Field","name":{"kind":"Name","value":"hash"}},{"kind":"Field","name":{"kind":"Name","value":"blockTime"}},{"kind":"Field","name":{"kind":"Name","value":"transactionCount"}},{"kind":"Field","name":{"kind":"Name","value":"actionCountComplete"}},{"kind":"Field","name":{"kind":"Name","value":"proposer"}},{"kind":"Field","name":{"kind":"Name","value":"proposerValidator"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"moniker"}},{"kind":"Field","name":{"kind":"Name","value":"operatorAddress"}},{"kind":"Field","name":{"kind":"Name","value":"imageUrl"}}]}}]}}]}}]} as unknown as DocumentNode<BlockPageQuery, BlockPageQueryVariables>;
export const ContractsBySymbolDocument = {"__meta__":{"hash":"sha256:231d05df68d86e1699a50092f4eb0d8d362f2001992dfe7974f650c1a141ee1a"},"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"query","name":{"kind":"Name","value":"ContractsBySymbol"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"symbol"}},"type":{"kind":"NonNullType","type":{"kind":"NamedType","name":{"kind":"Name","value":"String"}}}},{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"chainId"}},"type":{"kind":"NamedType","name":{"kind":"Name","value":"String"}}},{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"contractType"}},"type":{"kind":"NamedType","name":{"kind":"Name","value":"String"}}},{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"page"}},"type":{"kind":"NamedType","name":{"kind":"Name","value":"Int"}}},{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"pageSize"}},"type":{"kind":"NamedType","name":{"kind":"Name","value":"Int"}}},{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"cursor"}},"type":{"kind":"NamedType","name":{"kind":"Name","value":"String"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"contractsBySymbol"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"symbol"},"value":{"kind":"Variable","name":{"kind":"Name","value":"symbol"}}},{"kind":"Argument","name":{"kind":"Name","value":"chainId"},"value":{"kind":"Variable","name":{"kind":"Name","value":"chainId"}}},{"kind":"Argument","name":{"kind":"Name","value":"contractType"},"value":{"kind":"Variable","name":{"kind":"Name","value":"contractType"}}},{"kind":"Argument","name":{"kind":"Name","value":"page"},"value":{"kind":"Variable","name":{"kind":"Name","value":"page"}}},{"kind":"Argument","name":{"kind":"Name","value":"pageSize"},"value":{"kind":"Variable","name":{"kind":"Name","value":"pageSize"}}},{"kind":"Argument","name":{"kind":"Name","value":"cursor"},"value":{"kind":"Variable","name":{"kind":"Name","value":"cursor"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"pageInfo"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"page"}},{"kind":"Field","name":{"kind":"Name","value":"pageSize"}},{"kind":"Field","name":{"kind":"Name","value":"total"}},{"kind":"Field","name":{"kind":"Name","value":"totalPages"}},{"kind":"Field","name":{"kind":"Name","value":"hasNextPage"}}]}},{"kind":"Field","name":{"kind":"Name","value":"nodes"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"address"}},{"kind":"Field","name":{"kind":"Name","value":"symbol"}},{"kind":"Field","name":{"kind":"Name","value":"name"}},{"kind":"Field","name":{"kind":"Name","value":"chainId"}},{"kind":"Field","name":{"kind":"Name","value":"contractType"}},{"kind":"Field","name":{"kind":"Name","value":"decimals"}},{"kind":"Field","name":{"kind":"Name","value":"totalSupply"}},{"kind":"Field","name":{"kind":"Name","value":"holders"}},{"kind":"Field","name":{"kind":"Name","value":"verified"}}]}}]}}]}}]} as unknown as DocumentNode<ContractsBySymbolQuery, ContractsBySymbolQueryVariables>;
export const DelegatorPortfolioDocument = {"__meta__":{"hash":"sha256:64693a93083f9712dfe1a053d5915fe72a685128011e7fb3886c60337f4ebda2"},"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"query","name":{"kind":"Name","value":"DelegatorPortfolio"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"delegator"}},"type":{"kind":"NonNullType","type":{"kind":"NamedType","name":{"kind":"Name","value":"String"}}}},{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"page"}},"type":{"kind":"NamedType","name":{"kind":"Name","value":"Int"}}},{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"pageSize"}},"type":{"kind":"NamedType","name":{"kind":"Name","value":"Int"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"delegations"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"delegatorAddress"},"value":{"kind":"Variable","name":{"kind":"Name","value":"delegator"}}},{"kind":"Argument","name":{"kind":"Name","value":"page"},"value":{"kind":"Variable","name":{"kind":"Name","value":"page"}}},{"kind":"Argument","name":{"kind":"Name","value":"pageSize"},"value":{"kind":"Variable","name":{"kind":"Name","value":"pageSize"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"pageInfo"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"page"}},{"kind":"Field","name":{"kind":"Name","value":"pageSize"}},{"kind":"Field","name":{"kind":"Name","value":"total"}},{"kind":"Field","name":{"kind":"Name","value":"totalPages"}},{"kind":"Field","name":{"kind":"Name","value":"hasNextPage"}},{"kind":"Field","name":{"kind":"Name","value":"endCursor"}}]}},{"kind":"Field","name":{"kind":"Name","value":"nodes"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"validatorAddress"}},{"kind":"Field","name":{"kind":"Name","value":"shares"}},{"kind":"Field","name":{"kind":"Name","value":"balance"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"denom"}},{"kind":"Field","name":{"kind":"Name","value":"amount"}}]}},{"kind":"Field","name":{"kind":"Name","value":"validator"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"moniker"}},{"kind":"Field","name":{"kind":"Name","value":"bondStatus"}},{"kind":"Field","name":{"kind":"Name","value":"jailed"}},{"kind":"Field","name":{"kind":"Name","value":"commission"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"rate"}}]}}]}}]}}]}}]}}]} as unknown as DocumentNode<DelegatorPortfolioQuery, DelegatorPortfolioQueryVariables>;
export const ExactSearchDocument = {"__meta__":{"hash":"sha256:d03240b77f2ed62c98cab686c14ecf90f2408427edbad8c8c0fb5ffa924c073f"},"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"query","name":{"kind":"Name","value":"ExactSearch"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"query"}},"type":{"kind":"NonNullType","type":{"kind":"NamedType","name":{"kind":"Name","value":"String"}}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"search"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"query"},"value":{"kind":"Variable","name":{"kind":"Name","value":"query"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"query"}},{"kind":"Field","name":{"kind":"Name","value":"results"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"kind"}},{"kind":"Field","name":{"kind":"Name","value":"identity"}},{"kind":"Field","name":{"kind":"Name","value":"canonicalUrl"}},{"kind":"Field","name":{"kind":"Name","value":"target"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"__typename"}},{"kind":"InlineFragment","typeCondition":{"kind":"NamedType","name":{"kind":"Name","value":"Block"}},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"height"}},{"kind":"Field","name":{"kind":"Name","value":"hash"}}]}},{"kind":"InlineFragment","typeCondition":{"kind":"NamedType","name":{"kind":"Name","value":"Transaction"}},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"hash"}},{"kind":"Field","name":{"kind":"Name","value":"blockHeight"}}]}},{"kind":"InlineFragment","typeCondition":{"kind":"NamedType","name":{"kind":"Name","value":"Address"}},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"address"}}]}}]}}]}}]}}]}}]} as unknown as DocumentNode<ExactSearchQuery, ExactSearchQueryVariables>;
export const FailedTransactionAddedDocument = {"__meta__":{"hash":"sha256:a3c1de4642b6b12889ecaab70c6bc8302ce4e6a790f0ce01000645fb8e06b9e1"},"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"subscription","name":{"kind":"Name","value":"FailedTransactionAdded"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"failedTransactionAdded"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"hash"}},{"kind":"Field","name":{"kind":"Name","value":"blockHeight"}},{"kind":"Field","name":{"kind":"Name","value":"blockTime"}},{"kind":"Field","name":{"kind":"Name","value":"type"}},{"kind":"Field","name":{"kind":"Name","value":"error"}},{"kind":"Field","name":{"kind":"Name","value":"code"}},{"kind":"Field","name":{"kind":"Name","value":"codespace"}}]}}]}}]} as unknown as DocumentNode<FailedTransactionAddedSubscription, FailedTransactionAddedSubscriptionVariables>;
export const FailedTransactionsDocument = {"__meta__":{"hash":"sha256:0519d622e8fd384e109d31015a95865e6af34d2c0c66c252470ddee090496380"},"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"query","name":{"kind":"Name","value":"FailedTransactions"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"page"}},"type":{"kind":"NamedType","name":{"kind":"Name","value":"Int"}}},{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"pageSize"}},"type":{"kind":"NamedType","name":{"kind":"Name","value":"Int"}}},{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"cursor"}},"type":{"kind":"NamedType","name":{"kind":"Name","value":"String"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"failedTransactions"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"page"},"value":{"kind":"Variable","name":{"kind":"Name","value":"page"}}},{"kind":"Argument","name":{"kind":"Name","value":"pageSize"},"value":{"kind":"Variable","name":{"kind":"Name","value":"pageSize"}}},{"kind":"Argument","name":{"kind":"Name","value":"cursor"},"value":{"kind":"Variable","name":{"kind":"Name","value":"cursor"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"pageInfo"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"page"}},{"kind":"Field","name":{"kind":"Name","value":"pageSize"}},{"kind":"Field","name":{"kind":"Name","value":"total"}},{"kind":"Field","name":{"kind":"Name","value":"totalPages"}},{"kind":"Field","name":{"kind":"Name","value":"hasNextPage"}},{"kind":"Field","name":{"kind":"Name","value":"endCursor"}}]}},{"kind":"Field","name":{"kind":"Name","value":"nodes"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"hash"}},{"kind":"Field","name":{"kind":"Name","value":"txNumber"}},{"kind":"Field","name":{"kind":"Name","value":"blockHeight"}},{"kind":"Field","name":{"kind":"Name","value":"actionIndex"}},{"kind":"Field","name":{"kind":"Name","value":"blockTime"}},{"kind":"Field","name":{"kind":"Name","value":"initiator"}},{"kind":"Field","name":{"kind":"Name","value":"type"}},{"kind":"Field","name":{"kind":"Name","value":"error"}}]}}]}}]}}]} as unknown as DocumentNode<FailedTransactionsQuery, FailedTransactionsQueryVariables>;
export const SearchBoxDocument = {"__meta__":{"hash":"sha256:098531097fdc7e5ec7e5bea426bc331ea9c8399c7587b15a914c6ed193b3a6a1"},"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"query","name":{"kind":"Name","value":"SearchBox"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"query"}},"type":{"kind":"NonNullType","type":{"kind":"NamedType","name":{"kind":"Name","value":"String"}}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"searchSuggestions"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"query"},"value":{"kind":"Variable","name":{"kind":"Name","value":"query"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"query"}},{"kind":"Field","name":{"kind":"Name","value":"selectedCategory"}},{"kind":"Field","name":{"kind":"Name","value":"counts"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"transactions"}},{"kind":"Field","name":{"kind":"Name","value":"blocks"}},{"kind":"Field","name":{"kind":"Name","value":"addresses"}}]}},{"kind":"Field","name":{"kind":"Name","value":"transactions"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"hash"}},{"kind":"Field","name":{"kind":"Name","value":"blockHeight"}},{"kind":"Field","name":{"kind":"Name","value":"blockTime"}},{"kind":"Field","name":{"kind":"Name","value":"type"}},{"kind":"Field","name":{"kind":"Name","value":"initiator"}}]}},{"kind":"Field","name":{"kind":"Name","value":"blocks"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"height"}},{"kind":"Field","name":{"kind":"Name","value":"hash"}},{"kind":"Field","name":{"kind":"Name","value":"blockTime"}},{"kind":"Field","name":{"kind":"Name","value":"transactionCount"}}]}},{"kind":"Field","name":{"kind":"Name","value":"addresses"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"address"}}]}},{"kind":"Field","name":{"kind":"Name","value":"submitTarget"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"kind"}},{"kind":"Field","name":{"kind":"Name","value":"hash"}},{"kind":"Field","name":{"kind":"Name","value":"height"}},{"kind":"Field","name":{"kind":"Name","value":"address"}}]}}]}}]}}]} as unknown as DocumentNode<SearchBoxQuery, SearchBoxQueryVariables>;
export const TransactionPageDocument = {"__meta__":{"hash":"sha256:4d5b3511e5de2eda2e26b63ee7421126f9205cea52fa5bb8ab289ee8afbbc04f"},"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"query","name":{"kind":"Name","value":"TransactionPage"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"hash"}},"type":{"kind":"NonNullType","type":{"kind":"NamedType","name":{"kind":"Name","value":"String"}}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"transaction"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"hash"},"value":{"kind":"Variable","name":{"kind":"Name","value":"hash"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"hash"}},{"kind":"Field","name":{"kind":"Name","value":"type"}},{"kind":"Field","name":{"kind":"Name","value":"initiator"}},{"kind":"Field","name":{"kind":"Name","value":"blockHeight"}},{"kind":"Field","name":{"kind":"Name","value":"blockActionIndex"}},{"kind":"Field","name":{"kind":"Name","value":"blockTime"}},{"kind":"Field","name":{"kind":"Name","value":"block"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"hash"}},{"kind":"Field","name":{"kind":"Name","value":"proposerValidator"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"moniker"}}]}}]}}]}}]}}]} as unknown as DocumentNode<TransactionPageQuery, TransactionPageQueryVariables>;
export const UpdateBuybackRoundDocument = {"__meta__":{"hash":"sha256:0095fbc7e0c7132556bd936029d12d75e37fb9d037abaec6b32f6fd4ba762deb"},"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"mutation","name":{"kind":"Name","value":"UpdateBuybackRound"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"input"}},"type":{"kind":"NonNullType","type":{"kind":"NamedType","name":{"kind":"Name","value":"UpdateBuybackRoundInput"}}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"updateBuybackRound"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"input"},"value":{"kind":"Variable","name":{"kind":"Name","value":"input"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"round"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"roundId"}},{"kind":"Field","name":{"kind":"Name","value":"state"}},{"kind":"Field","name":{"kind":"Name","value":"startTime"}},{"kind":"Field","name":{"kind":"Name","value":"endTime"}},{"kind":"Field","name":{"kind":"Name","value":"totalSlots"}},{"kind":"Field","name":{"kind":"Name","value":"bookedSlots"}},{"kind":"Field","name":{"kind":"Name","value":"minAmount"}},{"kind":"Field","name":{"kind":"Name","value":"maxAmount"}},{"kind":"Field","name":{"kind":"Name","value":"updatedAt"}}]}}]}}]}}]} as unknown as DocumentNode<UpdateBuybackRoundMutation, UpdateBuybackRoundMutationVariables>;
export const ValidatorStatisticsUpdatedDocument = {"__meta__":{"hash":"sha256:1450a51e263bb31b522c1f899581df0b690c18ce6a673f15fcb2a19d633fd384"},"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"subscription","name":{"kind":"Name","value":"ValidatorStatisticsUpdated"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"validatorStatisticsUpdated"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"totalValidators"}},{"kind":"Field","name":{"kind":"Name","value":"activeValidators"}},{"kind":"Field","name":{"kind":"Name","value":"totalStakedAmount"}},{"kind":"Field","name":{"kind":"Name","value":"timestamp"}}]}}]}}]} as unknown as DocumentNode<ValidatorStatisticsUpdatedSubscription, ValidatorStatisticsUpdatedSubscriptionVariables>;
export const ValidatorTableDocument = {"__meta__":{"hash":"sha256:055317440e055194deb033de036536076471c5e0097f48e5efa5a37526a3a27a"},"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"query","name":{"kind":"Name","value":"ValidatorTable"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"page"}},"type":{"kind":"NamedType","name":{"kind":"Name","value":"Int"}}},{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"pageSize"}},"type":{"kind":"NamedType","name":{"kind":"Name","value":"Int"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"validatorStatistics"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"totalValidators"}},{"kind":"Field","name":{"kind":"Name","value":"activeValidators"}},{"kind":"Field","name":{"kind":"Name","value":"totalStakedAmount"}},{"kind":"Field","name":{"kind":"Name","value":"annualizedRewardRate"}}]}},{"kind":"Field","name":{"kind":"Name","value":"validators"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"page"},"value":{"kind":"Variable","name":{"kind":"Name","value":"page"}}},{"kind":"Argument","name":{"kind":"Name","value":"pageSize"},"value":{"kind":"Variable","name":{"kind":"Name","value":"pageSize"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"pageInfo"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"page"}},{"kind":"Field","name":{"kind":"Name","value":"pageSize"}},{"kind":"Field","name":{"kind":"Name","value":"total"}},{"kind":"Field","name":{"kind":"Name","value":"totalPages"}},{"kind":"Field","name":{"kind":"Name","value":"hasPreviousPage"}},{"kind":"Field","name":{"kind":"Name","value":"hasNextPage"}},{"kind":"Field","name":{"kind":"Name","value":"endCursor"}}]}},{"kind":"Field","name":{"kind":"Name","value":"nodes"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"moniker"}},{"kind":"Field","name":{"kind":"Name","value":"operatorAddress"}},{"kind":"Field","name":{"kind":"Name","value":"bondStatus"}},{"kind":"Field","name":{"kind":"Name","value":"jailed"}},{"kind":"Field","name":{"kind":"Name","value":"tokens"}},{"kind":"Field","name":{"kind":"Name","value":"delegatorShares"}},{"kind":"Field","name":{"kind":"Name","value":"uptimePercentage"}},{"kind":"Field","name":{"kind":"Name","value":"delegationCount"}},{"kind":"Field","name":{"kind":"Name","value":"imageUrl"}},{"kind":"Field","name":{"kind":"Name","value":"commission"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"rate"}},{"kind":"Field","name":{"kind":"Name","value":"maxRate"}},{"kind":"Field","name":{"kind":"Name","value":"maxChangeRate"}},{"kind":"Field","name":{"kind":"Name","value":"updateTime"}}]}}]}}]}}]}}]} as unknown as DocumentNode<ValidatorTableQuery, ValidatorTableQueryVariables>;
export const ValidatorUpdatedDocument = {"__meta__":{"hash":"sha256:ace97b5d39afcf0e1cf819fa0cccba0698517369291704c938b70069f628dfba"},"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"subscription","name":{"kind":"Name","value":"ValidatorUpdated"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"operatorAddress"}},"type":{"kind":"NamedType","name":{"kind":"Name","value":"String"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"validatorUpdated"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"operatorAddress"},"value":{"kind":"Variable","name":{"kind":"Name","value":"operatorAddress"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"moniker"}},{"kind":"Field","name":{"kind":"Name","value":"operatorAddress"}},{"kind":"Field","name":{"kind":"Name","value":"bondStatus"}},{"kind":"Field","name":{"kind":"Name","value":"jailed"}},{"kind":"Field","name":{"kind":"Name","value":"tokens"}},{"kind":"Field","name":{"kind":"Name","value":"commission"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"rate"}}]}}]}}]}}]} as unknown as DocumentNode<ValidatorUpdatedSubscription, ValidatorUpdatedSubscriptionVariables>;