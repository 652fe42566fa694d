/**
 * One object of each kind in both upstream dialects: upstream-api.md's snake_case, and the
 * production services' protojson as real-upstreams.md describes it (hand-written, not generated
 * by the devnet, so that the devnet and the gateway cannot share a mistake).
 */

export const BIG = '9007199254740993'; // 2^53 + 1: not representable as a float

export const specValidator = {
  id: '7',
  moniker: 'Blue Harbor',
  operator_address: 'bybvaloper1qyqszqgpqyqszqgpqyqszqgpqyqszqgpss7688',
  consensus_address: 'bybvalcons1qgpqyqszqgpqyqszqgpqyqszqgpqyqsz48trqs',
  jailed: false,
  status: 3,
  tokens: '123456789012345678901234',
  delegator_shares: '123456789012345678901234.000000000000000000',
  description: 'A validator.',
  unbonding_height: BIG,
  unbonding_time: '1970-01-01T00:00:00Z',
  commission_rate: '0.050000000000000000',
  commission_max_rate: '0.200000000000000000',
  commission_max_change_rate: '0.010000000000000000',
  commission_update_time: '2026-01-02T03:04:05Z',
  proposed: '812',
  signed: '19880',
  missed: '120',
  timestamp: '2026-11-23T00:00:00Z',
  uptimes: ['99.50'],
  slashing_events: [],
  uptime_percentage: 99.4,
  image_url: 'https://example.invalid/7.png',
  registration_time: '2025-01-01T00:00:00Z',
  wallet_address: 'byb1qyqszqgpqyqszqgpqyqszqgpqyqszqgp9x5a34',
  delegation_count: '31',
  outstanding_rewards: [{ denom: 'byb', amount: '1000.5' }],
};

export const kratosValidator = {
  id: '7',
  moniker: 'Blue Harbor',
  operatorAddress: 'bybvaloper1qyqszqgpqyqszqgpqyqszqgpqyqszqgpss7688',
  consensusAddress: 'bybvalcons1qgpqyqszqgpqyqszqgpqyqszqgpqyqsz48trqs',
  jailed: false,
  status: 'BOND_STATUS_BONDED',
  tokens: '123456789012345678901234',
  delegatorShares: '123456789012345678901234.000000000000000000',
  description: 'A validator.',
  unbondingHeight: BIG,
  unbondingTime: '1970-01-01T00:00:00Z',
  commissionRate: '0.050000000000000000',
  commissionMaxRate: '0.200000000000000000',
  commissionMaxChangeRate: '0.010000000000000000',
  commissionUpdateTime: '2026-01-02T03:04:05Z',
  proposed: 812,
  signed: '19880',
  missed: '120',
  timestamp: '2026-11-23T00:00:00Z',
  uptimes: ['99.50'],
  slashingEvents: [],
  uptimePercentage: 99.4,
  imageUrl: 'https://example.invalid/7.png',
  registrationTime: '2025-01-01T00:00:00Z',
  walletAddress: 'byb1qyqszqgpqyqszqgpqyqszqgpqyqszqgp9x5a34',
  delegationCount: '31',
  outstandingRewards: [{ denom: 'byb', amount: '1000.5' }],
};

export const specStatistics = {
  total_validators: '1',
  consensus_validators: '1',
  active_validators: '1',
  total_staked_amount: '123456789012345678901234',
  rewards_24h: '1000',
  annualized_reward_rate: '0.1200',
  slashing_events_24h: '0',
  timestamp: '2026-11-23T00:00:00Z',
};
export const kratosStatistics = {
  totalValidators: '1',
  consensusValidators: 1,
  activeValidators: '1',
  totalStakedAmount: '123456789012345678901234',
  rewards24h: '1000',
  annualizedRewardRate: '0.1200',
  slashingEvents24h: '0',
  timestamp: '2026-11-23T00:00:00Z',
};

export const specPagination = {
  page: 1,
  page_size: 100,
  total: '1',
  total_pages: 1,
  has_prev: false,
  has_next: false,
};
export const kratosPagination = {
  page: 1,
  pageSize: 100,
  total: '1',
  totalPages: 1,
  hasPrev: false,
  hasNext: false,
};

export const specRound = {
  id: 'r-1',
  round_id: 'round-001',
  start_time: '2026-11-01T00:00:00Z',
  end_time: '2026-11-08T00:00:00Z',
  status: 2,
  total_slots: 150,
  booked_slots: 12,
  min_amount: '1000000000000000000',
  max_amount: '200000000000000000000',
  total_collected: '12000000000000000000',
  revenue_pool: '99000000000000000000000',
  burn_tx_hash: '',
  created_at: '2026-10-25T00:00:00Z',
  updated_at: '2026-10-25T00:00:00Z',
};
export const kratosRound = {
  id: 'r-1',
  roundId: 'round-001',
  startTime: '2026-11-01T00:00:00Z',
  endTime: '2026-11-08T00:00:00Z',
  status: 'ROUND_STATUS_IN_PROGRESS',
  totalSlots: 150,
  bookedSlots: '12',
  minAmount: '1000000000000000000',
  maxAmount: '200000000000000000000',
  totalCollected: '12000000000000000000',
  revenuePool: '99000000000000000000000',
  burnTxHash: '',
  createdAt: '2026-10-25T00:00:00Z',
  updatedAt: '2026-10-25T00:00:00Z',
};

export const specContract = {
  address: '0x1111111111111111111111111111111111111111',
  symbol: 'USDT',
  name: 'Tether USD',
  chain_id: '1',
  contract_type: 'ERC20',
  decimals: 6,
  total_supply: '1000000000000',
  holders: 42,
  verified: true,
  deployer: '0x2222222222222222222222222222222222222222',
  creation_tx_hash: `0x${'ab'.repeat(32)}`,
  created_at: '2025-01-01T00:00:00Z',
};
export const realContract = {
  contractAddress: '0x1111111111111111111111111111111111111111',
  tokenSymbol: 'USDT',
  tokenName: 'Tether USD',
  contractType: 'ERC20',
  chainId: '1',
  verificationStatus: 'verified',
  metadata: {
    decimals: '6',
    totalSupply: '1000000000000',
    holders: '42',
    deployer: '0x2222222222222222222222222222222222222222',
    creationTxHash: `0x${'ab'.repeat(32)}`,
  },
  tags: ['stablecoin'],
  createdAt: '2025-01-01T00:00:00Z',
  updatedAt: '2025-06-01T00:00:00Z',
};

export const specFailed = {
  hash: `0x${'cd'.repeat(32)}`,
  tx_number: 1234,
  block_height: 777,
  action_index: 2,
  block_time: 1_795_000_000,
  initiator: '0x3333333333333333333333333333333333333333',
  type: 'transfer',
  error: 'out of gas',
  gas_used: '21000',
};
export const realFailed = {
  id: '1234',
  hash: `0x${'cd'.repeat(32)}`,
  block_number: '777',
  block_timestamp: '2026-11-18T11:06:40Z',
  block_unix_timestamp: 1_795_000_000_123,
  tx_number: '1234',
  code: 11,
  codespace: 'sdk',
  gas_wanted: '30000',
  gas_used: '21000',
  gas_fee: '420',
  tx_type: 'transfer',
  messages: '[]',
  memo: '',
  error_log: 'out of gas',
  signer: 'byb1xvenxvenxvenxvenxvenxvenxvenxventts6nr',
  to: '',
  value: '0',
};

/** A server whose answers the test sets per path; it records every request. */
