/* eslint-disable */
import * as types from './graphql.js';
import type { TypedDocumentNode as DocumentNode } from '@graphql-typed-document-node/core';

/**
 * Map of all GraphQL operations in the project.
 *
 * This map has several performance disadvantages:
 * 1. It is not tree-shakeable, so it will include all operations in the project.
 * 2. It is not minifiable, so the string of a GraphQL query will be multiple times inside the bundle.
 * 3. It does not support dead code elimination, so it will add unused operations.
 *
 * Therefore it is highly recommended to use the babel or swc plugin for production.
 * Learn more about it here: https://the-guild.dev/graphql/codegen/plugins/presets/preset-client#reducing-bundle-size
 */
type Documents = {
    "subscription BlockAdded {\n  blockAdded {\n    height\n    hash\n    blockTime\n    transactionCount\n    proposerValidator {\n      moniker\n      operatorAddress\n    }\n  }\n}": typeof types.BlockAddedDocument,
    "query BlockPage($height: Int!) {\n  block(height: $height) {\n    height\n    hash\n    blockTime\n    transactionCount\n    actionCountComplete\n    proposer\n    proposerValidator {\n      moniker\n      operatorAddress\n      imageUrl\n    }\n  }\n}": typeof types.BlockPageDocument,
    "query ContractsBySymbol($symbol: String!, $chainId: String, $contractType: String, $page: Int, $pageSize: Int, $cursor: String) {\n  contractsBySymbol(\n    symbol: $symbol\n    chainId: $chainId\n    contractType: $contractType\n    page: $page\n    pageSize: $pageSize\n    cursor: $cursor\n  ) {\n    pageInfo {\n      page\n      pageSize\n      total\n      totalPages\n      hasNextPage\n    }\n    nodes {\n      address\n      symbol\n      name\n      chainId\n      contractType\n      decimals\n      totalSupply\n      holders\n      verified\n    }\n  }\n}": typeof types.ContractsBySymbolDocument,
    "query DelegatorPortfolio($delegator: String!, $page: Int, $pageSize: Int) {\n  delegations(delegatorAddress: $delegator, page: $page, pageSize: $pageSize) {\n    pageInfo {\n      page\n      pageSize\n      total\n      totalPages\n      hasNextPage\n      endCursor\n    }\n    nodes {\n      validatorAddress\n      shares\n      balance {\n        denom\n        amount\n      }\n      validator {\n        moniker\n        bondStatus\n        jailed\n        commission {\n          rate\n        }\n      }\n    }\n  }\n}": typeof types.DelegatorPortfolioDocument,
    "query ExactSearch($query: String!) {\n  search(query: $query) {\n    query\n    results {\n      kind\n      identity\n      canonicalUrl\n      target {\n        __typename\n        ... on Block {\n          height\n          hash\n        }\n        ... on Transaction {\n          hash\n          blockHeight\n        }\n        ... on Address {\n          address\n        }\n      }\n    }\n  }\n}": typeof types.ExactSearchDocument,
    "subscription FailedTransactionAdded {\n  failedTransactionAdded {\n    hash\n    blockHeight\n    blockTime\n    type\n    error\n    code\n    codespace\n  }\n}": typeof types.FailedTransactionAddedDocument,
    "query FailedTransactions($page: Int, $pageSize: Int, $cursor: String) {\n  failedTransactions(page: $page, pageSize: $pageSize, cursor: $cursor) {\n    pageInfo {\n      page\n      pageSize\n      total\n      totalPages\n      hasNextPage\n      endCursor\n    }\n    nodes {\n      hash\n      txNumber\n      blockHeight\n      actionIndex\n      blockTime\n      initiator\n      type\n      error\n    }\n  }\n}": typeof types.FailedTransactionsDocument,
    "query SearchBox($query: String!) {\n  searchSuggestions(query: $query) {\n    query\n    selectedCategory\n    counts {\n      transactions\n      blocks\n      addresses\n    }\n    transactions {\n      hash\n      blockHeight\n      blockTime\n      type\n      initiator\n    }\n    blocks {\n      height\n      hash\n      blockTime\n      transactionCount\n    }\n    addresses {\n      address\n    }\n    submitTarget {\n      kind\n      hash\n      height\n      address\n    }\n  }\n}": typeof types.SearchBoxDocument,
    "query TransactionPage($hash: String!) {\n  transaction(hash: $hash) {\n    hash\n    type\n    initiator\n    blockHeight\n    blockActionIndex\n    blockTime\n    block {\n      hash\n      proposerValidator {\n        moniker\n      }\n    }\n  }\n}": typeof types.TransactionPageDocument,
    "mutation UpdateBuybackRound($input: UpdateBuybackRoundInput!) {\n  updateBuybackRound(input: $input) {\n    round {\n      roundId\n      state\n      startTime\n      endTime\n      totalSlots\n      bookedSlots\n      minAmount\n      maxAmount\n      updatedAt\n    }\n  }\n}": typeof types.UpdateBuybackRoundDocument,
    "subscription ValidatorStatisticsUpdated {\n  validatorStatisticsUpdated {\n    totalValidators\n    activeValidators\n    totalStakedAmount\n    timestamp\n  }\n}": typeof types.ValidatorStatisticsUpdatedDocument,
    "query ValidatorTable($page: Int, $pageSize: Int) {\n  validatorStatistics {\n    totalValidators\n    activeValidators\n    totalStakedAmount\n    annualizedRewardRate\n  }\n  validators(page: $page, pageSize: $pageSize) {\n    pageInfo {\n      page\n      pageSize\n      total\n      totalPages\n      hasPreviousPage\n      hasNextPage\n      endCursor\n    }\n    nodes {\n      moniker\n      operatorAddress\n      bondStatus\n      jailed\n      tokens\n      delegatorShares\n      uptimePercentage\n      delegationCount\n      imageUrl\n      commission {\n        rate\n        maxRate\n        maxChangeRate\n        updateTime\n      }\n    }\n  }\n}": typeof types.ValidatorTableDocument,
    "subscription ValidatorUpdated($operatorAddress: String) {\n  validatorUpdated(operatorAddress: $operatorAddress) {\n    moniker\n    operatorAddress\n    bondStatus\n    jailed\n    tokens\n    commission {\n      rate\n    }\n  }\n}": typeof types.ValidatorUpdatedDocument,
};
const documents: Documents = {
    "subscription BlockAdded {\n  blockAdded {\n    height\n    hash\n    blockTime\n    transactionCount\n    proposerValidator {\n      moniker\n      operatorAddress\n    }\n  }\n}": types.BlockAddedDocument,
    "query BlockPage($height: Int!) {\n  block(height: $height) {\n    height\n    hash\n    blockTime\n    transactionCount\n    actionCountComplete\n    proposer\n    proposerValidator {\n      moniker\n      operatorAddress\n      imageUrl\n    }\n  }\n}": types.BlockPageDocument,
    "query ContractsBySymbol($symbol: String!, $chainId: String, $contractType: String, $page: Int, $pageSize: Int, $cursor: String) {\n  contractsBySymbol(\n    symbol: $symbol\n    chainId: $chainId\n    contractType: $contractType\n    page: $page\n    pageSize: $pageSize\n    cursor: $cursor\n  ) {\n    pageInfo {\n      page\n      pageSize\n      total\n      totalPages\n      hasNextPage\n    }\n    nodes {\n      address\n      symbol\n      name\n      chainId\n      contractType\n      decimals\n      totalSupply\n      holders\n      verified\n    }\n  }\n}": types.ContractsBySymbolDocument,
    "query DelegatorPortfolio($delegator: String!, $page: Int, $pageSize: Int) {\n  delegations(delegatorAddress: $delegator, page: $page, pageSize: $pageSize) {\n    pageInfo {\n      page\n      pageSize\n      total\n      totalPages\n      hasNextPage\n      endCursor\n    }\n    nodes {\n      validatorAddress\n      shares\n      balance {\n        denom\n        amount\n      }\n      validator {\n        moniker\n        bondStatus\n        jailed\n        commission {\n          rate\n        }\n      }\n    }\n  }\n}": types.DelegatorPortfolioDocument,
    "query ExactSearch($query: String!) {\n  search(query: $query) {\n    query\n    results {\n      kind\n      identity\n      canonicalUrl\n      target {\n        __typename\n        ... on Block {\n          height\n          hash\n        }\n        ... on Transaction {\n          hash\n          blockHeight\n        }\n        ... on Address {\n          address\n        }\n      }\n    }\n  }\n}": types.ExactSearchDocument,
    "subscription FailedTransactionAdded {\n  failedTransactionAdded {\n    hash\n    blockHeight\n    blockTime\n    type\n    error\n    code\n    codespace\n  }\n}": types.FailedTransactionAddedDocument,
    "query FailedTransactions($page: Int, $pageSize: Int, $cursor: String) {\n  failedTransactions(page: $page, pageSize: $pageSize, cursor: $cursor) {\n    pageInfo {\n      page\n      pageSize\n      total\n      totalPages\n      hasNextPage\n      endCursor\n    }\n    nodes {\n      hash\n      txNumber\n      blockHeight\n      actionIndex\n      blockTime\n      initiator\n      type\n      error\n    }\n  }\n}": types.FailedTransactionsDocument,
    "query SearchBox($query: String!) {\n  searchSuggestions(query: $query) {\n    query\n    selectedCategory\n    counts {\n      transactions\n      blocks\n      addresses\n    }\n    transactions {\n      hash\n      blockHeight\n      blockTime\n      type\n      initiator\n    }\n    blocks {\n      height\n      hash\n      blockTime\n      transactionCount\n    }\n    addresses {\n      address\n    }\n    submitTarget {\n      kind\n      hash\n      height\n      address\n    }\n  }\n}": types.SearchBoxDocument,
    "query TransactionPage($hash: String!) {\n  transaction(hash: $hash) {\n    hash\n    type\n    initiator\n    blockHeight\n    blockActionIndex\n    blockTime\n    block {\n      hash\n      proposerValidator {\n        moniker\n      }\n    }\n  }\n}": types.TransactionPageDocument,
    "mutation UpdateBuybackRound($input: UpdateBuybackRoundInput!) {\n  updateBuybackRound(input: $input) {\n    round {\n      roundId\n      state\n      startTime\n      endTime\n      totalSlots\n      bookedSlots\n      minAmount\n      maxAmount\n      updatedAt\n    }\n  }\n}": types.UpdateBuybackRoundDocument,
    "subscription ValidatorStatisticsUpdated {\n  validatorStatisticsUpdated {\n    totalValidators\n    activeValidators\n    totalStakedAmount\n    timestamp\n  }\n}": types.ValidatorStatisticsUpdatedDocument,
    "query ValidatorTable($page: Int, $pageSize: Int) {\n  validatorStatistics {\n    totalValidators\n    activeValidators\n    totalStakedAmount\n    annualizedRewardRate\n  }\n  validators(page: $page, pageSize: $pageSize) {\n    pageInfo {\n      page\n      pageSize\n      total\n      totalPages\n      hasPreviousPage\n      hasNextPage\n      endCursor\n    }\n    nodes {\n      moniker\n      operatorAddress\n      bondStatus\n      jailed\n      tokens\n      delegatorShares\n      uptimePercentage\n      delegationCount\n      imageUrl\n      commission {\n        rate\n        maxRate\n        maxChangeRate\n        updateTime\n      }\n    }\n  }\n}": types.ValidatorTableDocument,
    "subscription ValidatorUpdated($operatorAddress: String) {\n  validatorUpdated(operatorAddress: $operatorAddress) {\n    moniker\n    operatorAddress\n    bondStatus\n    jailed\n    tokens\n    commission {\n      rate\n    }\n  }\n}": types.ValidatorUpdatedDocument,
};

/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 *
 *
 * @example
 * ```ts
 * const query = graphql(`query GetUser($id: ID!) { user(id: $id) { name } }`);
 * ```
 *
 * The query argument is unknown!
 * Please regenerate the types.
 */
export function graphql(source: string): unknown;

/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "subscription BlockAdded {\n  blockAdded {\n    height\n    hash\n    blockTime\n    transactionCount\n    proposerValidator {\n      moniker\n      operatorAddress\n    }\n  }\n}"): (typeof documents)["subscription BlockAdded {\n  blockAdded {\n    height\n    hash\n    blockTime\n    transactionCount\n    proposerValidator {\n      moniker\n      operatorAddress\n    }\n  }\n}"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "query BlockPage($height: Int!) {\n  block(height: $height) {\n    height\n    hash\n    blockTime\n    transactionCount\n    actionCountComplete\n    proposer\n    proposerValidator {\n      moniker\n      operatorAddress\n      imageUrl\n    }\n  }\n}"): (typeof documents)["query BlockPage($height: Int!) {\n  block(height: $height) {\n    height\n    hash\n    blockTime\n    transactionCount\n    actionCountComplete\n    proposer\n    proposerValidator {\n      moniker\n      operatorAddress\n      imageUrl\n    }\n  }\n}"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "query ContractsBySymbol($symbol: String!, $chainId: String, $contractType: String, $page: Int, $pageSize: Int, $cursor: String) {\n  contractsBySymbol(\n    symbol: $symbol\n    chainId: $chainId\n    contractType: $contractType\n    page: $page\n    pageSize: $pageSize\n    cursor: $cursor\n  ) {\n    pageInfo {\n      page\n      pageSize\n      total\n      totalPages\n      hasNextPage\n    }\n    nodes {\n      address\n      symbol\n      name\n      chainId\n      contractType\n      decimals\n      totalSupply\n      holders\n      verified\n    }\n  }\n}"): (typeof documents)["query ContractsBySymbol($symbol: String!, $chainId: String, $contractType: String, $page: Int, $pageSize: Int, $cursor: String) {\n  contractsBySymbol(\n    symbol: $symbol\n    chainId: $chainId\n    contractType: $contractType\n    page: $page\n    pageSize: $pageSize\n    cursor: $cursor\n  ) {\n    pageInfo {\n      page\n      pageSize\n      total\n      totalPages\n      hasNextPage\n    }\n    nodes {\n      address\n      symbol\n      name\n      chainId\n      contractType\n      decimals\n      totalSupply\n      holders\n      verified\n    }\n  }\n}"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "query DelegatorPortfolio($delegator: String!, $page: Int, $pageSize: Int) {\n  delegations(delegatorAddress: $delegator, page: $page, pageSize: $pageSize) {\n    pageInfo {\n      page\n      pageSize\n      total\n      totalPages\n      hasNextPage\n      endCursor\n    }\n    nodes {\n      validatorAddress\n      shares\n      balance {\n        denom\n        amount\n      }\n      validator {\n        moniker\n        bondStatus\n        jailed\n        commission {\n          rate\n        }\n      }\n    }\n  }\n}"): (typeof documents)["query DelegatorPortfolio($delegator: String!, $page: Int, $pageSize: Int) {\n  delegations(delegatorAddress: $delegator, page: $page, pageSize: $pageSize) {\n    pageInfo {\n      page\n      pageSize\n      total\n      totalPages\n      hasNextPage\n      endCursor\n    }\n    nodes {\n      validatorAddress\n      shares\n      balance {\n        denom\n        amount\n      }\n      validator {\n        moniker\n        bondStatus\n        jailed\n        commission {\n          rate\n        }\n      }\n    }\n  }\n}"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "query ExactSearch($query: String!) {\n  search(query: $query) {\n    query\n    results {\n      kind\n      identity\n      canonicalUrl\n      target {\n        __typename\n        ... on Block {\n          height\n          hash\n        }\n        ... on Transaction {\n          hash\n          blockHeight\n        }\n        ... on Address {\n          address\n        }\n      }\n    }\n  }\n}"): (typeof documents)["query ExactSearch($query: String!) {\n  search(query: $query) {\n    query\n    results {\n      kind\n      identity\n      canonicalUrl\n      target {\n        __typename\n        ... on Block {\n          height\n          hash\n        }\n        ... on Transaction {\n          hash\n          blockHeight\n        }\n        ... on Address {\n          address\n        }\n      }\n    }\n  }\n}"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "subscription FailedTransactionAdded {\n  failedTransactionAdded {\n    hash\n    blockHeight\n    blockTime\n    type\n    error\n    code\n    codespace\n  }\n}"): (typeof documents)["subscription FailedTransactionAdded {\n  failedTransactionAdded {\n    hash\n    blockHeight\n    blockTime\n    type\n    error\n    code\n    codespace\n  }\n}"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "query FailedTransactions($page: Int, $pageSize: Int, $cursor: String) {\n  failedTransactions(page: $page, pageSize: $pageSize, cursor: $cursor) {\n    pageInfo {\n      page\n      pageSize\n      total\n      totalPages\n      hasNextPage\n      endCursor\n    }\n    nodes {\n      hash\n      txNumber\n      blockHeight\n      actionIndex\n      blockTime\n      initiator\n      type\n      error\n    }\n  }\n}"): (typeof documents)["query FailedTransactions($page: Int, $pageSize: Int, $cursor: String) {\n  failedTransactions(page: $page, pageSize: $pageSize, cursor: $cursor) {\n    pageInfo {\n      page\n      pageSize\n      total\n      totalPages\n      hasNextPage\n      endCursor\n    }\n    nodes {\n      hash\n      txNumber\n      blockHeight\n      actionIndex\n      blockTime\n      initiator\n      type\n      error\n    }\n  }\n}"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "query SearchBox($query: String!) {\n  searchSuggestions(query: $query) {\n    query\n    selectedCategory\n    counts {\n      transactions\n      blocks\n      addresses\n    }\n    transactions {\n      hash\n      blockHeight\n      blockTime\n      type\n      initiator\n    }\n    blocks {\n      height\n      hash\n      blockTime\n      transactionCount\n    }\n    addresses {\n      address\n    }\n    submitTarget {\n      kind\n      hash\n      height\n      address\n    }\n  }\n}"): (typeof documents)["query SearchBox($query: String!) {\n  searchSuggestions(query: $query) {\n    query\n    selectedCategory\n    counts {\n      transactions\n      blocks\n      addresses\n    }\n    transactions {\n      hash\n      blockHeight\n      blockTime\n      type\n      initiator\n    }\n    blocks {\n      height\n      hash\n      blockTime\n      transactionCount\n    }\n    addresses {\n      address\n    }\n    submitTarget {\n      kind\n      hash\n      height\n      address\n    }\n  }\n}"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "query TransactionPage($hash: String!) {\n  transaction(hash: $hash) {\n    hash\n    type\n    initiator\n    blockHeight\n    blockActionIndex\n    blockTime\n    block {\n      hash\n      proposerValidator {\n        moniker\n      }\n    }\n  }\n}"): (typeof documents)["query TransactionPage($hash: String!) {\n  transaction(hash: $hash) {\n    hash\n    type\n    initiator\n    blockHeight\n    blockActionIndex\n    blockTime\n    block {\n      hash\n      proposerValidator {\n        moniker\n      }\n    }\n  }\n}"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "mutation UpdateBuybackRound($input: UpdateBuybackRoundInput!) {\n  updateBuybackRound(input: $input) {\n    round {\n      roundId\n      state\n      startTime\n      endTime\n      totalSlots\n      bookedSlots\n      minAmount\n      maxAmount\n      updatedAt\n    }\n  }\n}"): (typeof documents)["mutation UpdateBuybackRound($input: UpdateBuybackRoundInput!) {\n  updateBuybackRound(input: $input) {\n    round {\n      roundId\n      state\n      startTime\n      endTime\n      totalSlots\n      bookedSlots\n      minAmount\n      maxAmount\n      updatedAt\n    }\n  }\n}"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "subscription ValidatorStatisticsUpdated {\n  validatorStatisticsUpdated {\n    totalValidators\n    activeValidators\n    totalStakedAmount\n    timestamp\n  }\n}"): (typeof documents)["subscription ValidatorStatisticsUpdated {\n  validatorStatisticsUpdated {\n    totalValidators\n    activeValidators\n    totalStakedAmount\n    timestamp\n  }\n}"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "query ValidatorTable($page: Int, $pageSize: Int) {\n  validatorStatistics {\n    totalValidators\n    activeValidators\n    totalStakedAmount\n    annualizedRewardRate\n  }\n  validators(page: $page, pageSize: $pageSize) {\n    pageInfo {\n      page\n      pageSize\n      total\n      totalPages\n      hasPreviousPage\n      hasNextPage\n      endCursor\n    }\n    nodes {\n      moniker\n      operatorAddress\n      bondStatus\n      jailed\n      tokens\n      delegatorShares\n      uptimePercentage\n      delegationCount\n      imageUrl\n      commission {\n        rate\n        maxRate\n        maxChangeRate\n        updateTime\n      }\n    }\n  }\n}"): (typeof documents)["query ValidatorTable($page: Int, $pageSize: Int) {\n  validatorStatistics {\n    totalValidators\n    activeValidators\n    totalStakedAmount\n    annualizedRewardRate\n  }\n  validators(page: $page, pageSize: $pageSize) {\n    pageInfo {\n      page\n      pageSize\n      total\n      totalPages\n      hasPreviousPage\n      hasNextPage\n      endCursor\n    }\n    nodes {\n      moniker\n      operatorAddress\n      bondStatus\n      jailed\n      tokens\n      delegatorShares\n      uptimePercentage\n      delegationCount\n      imageUrl\n      commission {\n        rate\n        maxRate\n        maxChangeRate\n        updateTime\n      }\n    }\n  }\n}"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "subscription ValidatorUpdated($operatorAddress: String) {\n  validatorUpdated(operatorAddress: $operatorAddress) {\n    moniker\n    operatorAddress\n    bondStatus\n    jailed\n    tokens\n    commission {\n      rate\n    }\n  }\n}"): (typeof documents)["subscription ValidatorUpdated($operatorAddress: String) {\n  validatorUpdated(operatorAddress: $operatorAddress) {\n    moniker\n    operatorAddress\n    bondStatus\n    jailed\n    tokens\n    commission {\n      rate\n    }\n  }\n}"];

export function graphql(source: string) {
  return (documents as any)[source] ?? {};
}

export type DocumentType<TDocumentNode extends DocumentNode<any, any>> = TDocumentNode extends DocumentNode<  infer TType,  any>  ? TType  : never;