/**
 * The gateway's domain models: what resolvers see. camelCase, typed, REST-free; the mapping from
 * each upstream's JSON lives beside its client.
 */

export interface PageInfo {
  page: number;
  pageSize: number;
  /** Lossless: upstreams send the total as a string. */
  total: string;
  totalPages: number;
  hasPreviousPage: boolean;
  hasNextPage: boolean;
}

export interface Page<T> {
  nodes: T[];
  pageInfo: PageInfo;
}

export interface PageArgs {
  page: number;
  pageSize: number;
  /** The upstream's own key of the item to continue after (decoded from the graph's cursor). */
  cursor?: string | null | undefined;
}

export interface Transaction {
  hash: string;
  blockHeight: number;
  blockActionIndex: number;
  blockTime: number;
  initiator: string;
  type: string;
}

export interface Block {
  height: number;
  hash: string;
  blockTime: number;
  transactionCount: number;
  actionCountComplete: boolean;
  proposer: string;
}

export interface Address {
  address: string;
}

export type SearchCategory = 'transactions' | 'blocks' | 'addresses';
export type SearchKind = 'transaction' | 'block' | 'address';

export interface SubmitTarget {
  kind: SearchKind;
  hash: string | null;
  height: number | null;
  address: string | null;
}

export interface Suggestions {
  query: string;
  transactions: Transaction[];
  blocks: Block[];
  addresses: Address[];
  counts: { transactions: number; blocks: number; addresses: number };
  selectedCategory: SearchCategory;
  submitTarget: SubmitTarget | null;
}

export interface SearchResult {
  kind: SearchKind;
  identity: string;
  matched: string;
  canonicalUrl: string;
}

export interface SearchResults {
  query: string;
  results: SearchResult[];
}

export interface Commission {
  rate: string;
  maxRate: string;
  maxChangeRate: string;
  updateTime: string;
}

export interface Coin {
  denom: string;
  amount: string;
}

/** Cosmos SDK bond statuses (0 … 3). */
export type BondStatus = 'UNSPECIFIED' | 'UNBONDED' | 'UNBONDING' | 'BONDED';
/** Buyback round states (0 … 4). */
export type BuybackRoundState = 'UNSPECIFIED' | 'PENDING' | 'IN_PROGRESS' | 'DONE' | 'CANCELLED';

export interface Validator {
  id: string;
  moniker: string;
  operatorAddress: string;
  consensusAddress: string;
  jailed: boolean;
  /** The bond status number as sent (0 for a name this gateway does not know). */
  status: number;
  /** The bond status, or null for a value outside the known ones. */
  bondStatus: BondStatus | null;
  tokens: string;
  delegatorShares: string;
  description: string;
  unbondingHeight: string;
  unbondingTime: string;
  commission: Commission;
  proposed: string;
  signed: string;
  missed: string;
  timestamp: string;
  uptimes: string[];
  slashingEvents: string[];
  uptimePercentage: number;
  imageUrl: string;
  registrationTime: string;
  walletAddress: string;
  delegationCount: string;
  outstandingRewards: Coin[];
}

export interface ValidatorStatistics {
  totalValidators: string;
  consensusValidators: string;
  activeValidators: string;
  totalStakedAmount: string;
  rewards24h: string;
  annualizedRewardRate: string;
  slashingEvents24h: string;
  timestamp: string;
}

export interface ValidatorList {
  validators: Validator[];
  statistics: ValidatorStatistics;
}

export interface Delegation {
  /** The delegator, as the delegations were asked for. */
  delegatorAddress: string;
  validatorAddress: string;
  shares: string;
  balance: Coin;
}

export interface Contract {
  address: string | null;
  symbol: string | null;
  name: string | null;
  chainId: string | null;
  contractType: string | null;
  decimals: number | null;
  totalSupply: string | null;
  holders: number | null;
  verified: boolean | null;
  deployer: string | null;
  creationTxHash: string | null;
  createdAt: string | null;
  updatedAt: string | null;
  tags: string[] | null;
  /** The item exactly as the explorer sent it. */
  raw: unknown;
}

export interface FailedTransaction {
  hash: string | null;
  txNumber: number | null;
  blockHeight: number | null;
  actionIndex: number | null;
  blockTime: number | null;
  initiator: string | null;
  type: string | null;
  error: string | null;
  /** The chain's result code of the transaction (non-zero: failed) and the module it came from. */
  code: number | null;
  codespace: string | null;
  gasUsed: string | null;
  gasWanted: string | null;
  raw: unknown;
}

export interface BuybackRound {
  id: string;
  roundId: string;
  startTime: string;
  endTime: string;
  /** The status number as sent (0 for a name this gateway does not know). */
  status: number;
  /** The round's state, or null for a value outside the known ones. */
  state: BuybackRoundState | null;
  totalSlots: number;
  bookedSlots: number;
  minAmount: string;
  maxAmount: string;
  totalCollected: string;
  revenuePool: string;
  burnTxHash: string;
  createdAt: string;
  updatedAt: string;
}

export interface BuybackRoundUpdate {
  roundId: string;
  startTime?: string | null | undefined;
  endTime?: string | null | undefined;
  totalSlots?: number | null | undefined;
  minAmount?: string | null | undefined;
  maxAmount?: string | null | undefined;
}
