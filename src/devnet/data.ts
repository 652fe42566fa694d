import { encodeBech32 } from '../lib/address.js';
import { Rng } from './random.js';

/**
 * The devnet's chain, generated deterministically from a seed, a clock and an anchor time.
 * A block is a function of the seed and its height alone (its time, of the chain's clock): the
 * same height is the same block whenever the devnet generates it, so a chain whose head follows
 * the clock goes on across restarts. The devnet holds the last WINDOW blocks up to the head, as a
 * pruned node does. Blocks and transactions live in typed columns (a small chain is still 100k+
 * rows); validators, delegations, contracts and rounds are kept in upstream-api.md's snake_case
 * REST shape, which the `spec` dialect serves as it is; dialect.ts renders them for the `kratos` one.
 */

const DENOM = 'ustake';
/** Milliseconds between blocks of a chain that stands still, and of one that moves unless told. */
export const DEFAULT_BLOCK_MS = 6_000;
/** Blocks held: the last ones up to the head. */
const WINDOW = 20_000;
/** Chance that a transaction fails: a failure every twenty blocks or so, for the live views to show. */
const FAILURE_RATE = 0.01;

export const TX_TYPES = [
  'transfer',
  'delegate',
  'undelegate',
  'redelegate',
  'claim_rewards',
  'swap',
  'contract_call',
  'contract_deploy',
  'vote',
] as const;

/** The Cosmos message each transaction type carries (the explorer shows it in `messages`). */
export const TX_MESSAGE_TYPES: Record<(typeof TX_TYPES)[number], string> = {
  transfer: '/cosmos.bank.v1beta1.MsgSend',
  delegate: '/cosmos.staking.v1beta1.MsgDelegate',
  undelegate: '/cosmos.staking.v1beta1.MsgUndelegate',
  redelegate: '/cosmos.staking.v1beta1.MsgBeginRedelegate',
  claim_rewards: '/cosmos.distribution.v1beta1.MsgWithdrawDelegatorReward',
  swap: '/injective.exchange.v1beta1.MsgCreateSpotMarketOrder',
  contract_call: '/cosmwasm.wasm.v1.MsgExecuteContract',
  contract_deploy: '/cosmwasm.wasm.v1.MsgInstantiateContract',
  vote: '/cosmos.gov.v1.MsgVote',
};

/** Why a transaction failed: the log text and the ABCI error (codespace and non-zero code). */
export const FAILURES = [
  { reason: 'out of gas', codespace: 'sdk', code: 11 },
  { reason: 'insufficient funds', codespace: 'sdk', code: 5 },
  { reason: 'execution reverted', codespace: 'evm', code: 3 },
  { reason: 'invalid nonce', codespace: 'sdk', code: 32 },
  { reason: 'slippage tolerance exceeded', codespace: 'exchange', code: 59 },
  { reason: 'unauthorized signer', codespace: 'sdk', code: 4 },
] as const;

/** Validator status values, as Cosmos SDK numbers them. */
export const VALIDATOR_STATUS = { unbonded: 1, unbonding: 2, bonded: 3 } as const;
/** Buyback round status values, as the staking service's enum numbers them. */
export const ROUND_STATUS = { unspecified: 0, pending: 1, inProgress: 2, done: 3, cancelled: 4 } as const;

/**
 * The data's own address prefix: validators are held as `biyavaloper1…` / `biyavalcons1…` (the
 * chain's documented form, and what the search service shows as block proposers). The staking
 * service re-encodes them with its deployment's prefix; accounts are held as `0x…`.
 */
export const CANONICAL_PREFIX = 'biya';

export interface ValidatorRecord {
  id: string;
  moniker: string;
  operator_address: string;
  consensus_address: string;
  jailed: boolean;
  status: number;
  tokens: string;
  delegator_shares: string;
  description: string;
  unbonding_height: string;
  unbonding_time: string;
  commission_rate: string;
  commission_max_rate: string;
  commission_max_change_rate: string;
  commission_update_time: string;
  proposed: string;
  signed: string;
  missed: string;
  timestamp: string;
  uptimes: string[];
  slashing_events: string[];
  uptime_percentage: number;
  image_url: string;
  registration_time: string;
  wallet_address: string;
  delegation_count: string;
  outstanding_rewards: { denom: string; amount: string }[];
}

export interface ValidatorStatisticsRecord {
  total_validators: string;
  consensus_validators: string;
  active_validators: string;
  total_staked_amount: string;
  rewards_24h: string;
  annualized_reward_rate: string;
  slashing_events_24h: string;
  timestamp: string;
}

export interface DelegationRecord {
  delegation: { delegator_address: string; validator_address: string; shares: string };
  balance: { denom: string; amount: string };
}

export interface ContractRecord {
  address: string;
  symbol: string;
  name: string;
  chain_id: string;
  contract_type: string;
  decimals: number;
  total_supply: string;
  holders: number;
  verified: boolean;
  deployer: string;
  creation_tx_hash: string;
  created_at: string;
}

export interface BuybackRoundRecord {
  id: string;
  round_id: string;
  start_time: string;
  end_time: string;
  status: number;
  total_slots: number;
  booked_slots: number;
  min_amount: string;
  max_amount: string;
  total_collected: string;
  revenue_pool: string;
  burn_tx_hash: string;
  created_at: string;
  updated_at: string;
}

export interface Blocks {
  /** The head's height: the chain has made `count` blocks since genesis. */
  count: number;
  /** The lowest height held (1 unless the chain is longer than the window). Index i holds height first + i. */
  first: number;
  hash: string[];
  /** Unix seconds. */
  time: Float64Array;
  firstTx: Int32Array;
  txCount: Int32Array;
  /** Index into `validators`. */
  proposer: Int32Array;
}

export interface Transactions {
  count: number;
  hash: string[];
  height: Int32Array;
  actionIndex: Int32Array;
  /** Index into `addresses`. */
  initiator: Int32Array;
  /** Index into TX_TYPES. */
  type: Uint8Array;
  /** 0 for success, else 1 + index into FAILURES. */
  failure: Uint8Array;
}

/**
 * When the chain makes its blocks: block h at genesisMs + h × blockMs, its time in whole seconds.
 * The same genesis and interval give a height the same time on every start.
 */
export interface ChainClock {
  genesisMs: number;
  blockMs: number;
}

/** Block `height`'s time (Unix seconds). */
export const blockTimeAt = (clock: ChainClock, height: number): number =>
  Math.floor((clock.genesisMs + height * clock.blockMs) / 1000);

/** The height the clock has reached at `nowMs`. */
export const headAt = (clock: ChainClock, nowMs: number): number =>
  Math.floor((nowMs - clock.genesisMs) / clock.blockMs);

/** Where block `height` sits in the columns of `blocks`. */
export const blockIndex = (blocks: Blocks, height: number): number => height - blocks.first;

/**
 * Who proposes blocks: the validators bonded at genesis, each in proportion to its stake then (a
 * block's proposer is part of the block, so it cannot follow the set as it moves since a start).
 */
export interface Proposers {
  validators: Int32Array;
  /** Running totals of their stake, in the same order. */
  cumulative: Float64Array;
}

/** One block as the chain makes it: a function of the seed and the height alone. */
export interface BlockDraw {
  hash: string;
  /** Index into `validators`. */
  proposer: number;
  txs: { hash: string; initiator: number; type: number; failure: number }[];
}

/** Block `height` of the chain of `seed`, whose transactions come from its first `accounts` addresses. */
export function drawBlock(seed: string, height: number, accounts: number, proposers: Proposers): BlockDraw {
  const rng = new Rng(`${seed}:block:${height}`);
  const hash = `0x${rng.hex(64)}`;
  const { validators, cumulative } = proposers;
  const target = rng.next() * (cumulative[cumulative.length - 1] ?? 0);
  let lo = 0;
  let hi = cumulative.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((cumulative[mid] as number) > target) hi = mid;
    else lo = mid + 1;
  }
  const txs: BlockDraw['txs'] = [];
  for (let k = rng.int(0, 11); k > 0; k--) {
    const failed = rng.chance(FAILURE_RATE);
    txs.push({
      hash: `0x${rng.hex(64)}`,
      initiator: rng.int(0, accounts - 1),
      type: rng.int(0, TX_TYPES.length - 1),
      failure: failed ? rng.int(1, FAILURES.length) : 0,
    });
  }
  return { hash, proposer: validators[lo] ?? 0, txs };
}

export interface DevnetData {
  seed: string;
  /** When the chain makes its blocks. */
  clock: ChainClock;
  /** Who proposes them. */
  proposers: Proposers;
  /** Anchor time (ms since epoch) the chain was generated against; the last block is just before it. */
  generatedAt: number;
  blocks: Blocks;
  txs: Transactions;
  /** Every known address, accounts first, then contracts. */
  addresses: string[];
  validators: ValidatorRecord[];
  /** Bumped each time the chain moves the validator set (chain.ts), so that services render it again. */
  validatorRevision: number;
  statistics: ValidatorStatisticsRecord;
  /** Delegations by delegator address, each list sorted by validator address. */
  delegations: Map<string, DelegationRecord[]>;
  /** Sorted by address. */
  contracts: ContractRecord[];
  rounds: Map<string, BuybackRoundRecord>;
}

export interface GenerateOptions {
  seed: string;
  now: number;
  /**
   * When the chain makes its blocks: its head is the height the clock reached at `now` (at least
   * `blocks`). Unset: DEFAULT_BLOCK_MS apart, the head (height `blocks`) 3 s before `now`.
   */
  clock?: ChainClock;
  /** Blocks held, up to the head (WINDOW unless told). */
  blocks?: number;
  accounts?: number;
  validators?: number;
  delegators?: number;
  contracts?: number;
}

export const iso = (ms: number): string => new Date(ms).toISOString().replace('.000Z', 'Z');

/** Integer base units as a Cosmos `Dec` string with 18 decimals. */
const dec18 = (units: bigint): string => `${units}.000000000000000000`;

/** One whole token in base units: amounts carry 18 decimals on this chain. */
const TOKEN = 10n ** 18n;

const MONIKER_A = [
  'Blue',
  'Iron',
  'Silent',
  'Golden',
  'Polar',
  'Crimson',
  'Lunar',
  'Solar',
  'Swift',
  'Stable',
  'Granite',
  'Cobalt',
  'Amber',
  'Northern',
  'Quiet',
  'Bright',
  'Hidden',
  'Open',
  'Prime',
  'True',
];
const MONIKER_B = [
  'Harbor',
  'Node',
  'Stake',
  'Validator',
  'Forge',
  'Labs',
  'Capital',
  'Relay',
  'Bridge',
  'Anchor',
  'Summit',
  'Works',
  'Garden',
  'Signal',
  'Vault',
  'Beacon',
  'Foundry',
  'Orbit',
  'Keep',
  'Canyon',
];

const SYMBOLS = [
  'USDT',
  'USDC',
  'WETH',
  'DAI',
  'WBTC',
  'LINK',
  'UNI',
  'AAVE',
  'MKR',
  'COMP',
  'SNX',
  'CRV',
  'SUSHI',
  'YFI',
  'BAL',
  'MATIC',
  'SHIB',
  'PEPE',
  'APE',
  'LDO',
  'ARB',
  'OP',
  'GRT',
  'FTM',
  'SAND',
  'MANA',
  'AXS',
  'ENS',
  '1INCH',
  'RPL',
  'FXS',
  'CVX',
  'DYDX',
  'IMX',
  'BLUR',
  'STAKE',
];
const CHAINS = ['1', '10', '56', '137', '8453', '42161'];
const CONTRACT_TYPES = ['ERC20', 'ERC20', 'ERC20', 'ERC721', 'ERC1155', 'PROXY'];

/** Buyback rounds generated: four done, one in progress, one pending, one cancelled. */
const ROUND_COUNT = 7;
/** Every round's generated bounds per slot, in whole tokens. */
const ROUND_MIN_TOKENS = 1n;
const ROUND_MAX_TOKENS = 500n;

export function generate(options: GenerateOptions): DevnetData {
  const rng = new Rng(options.seed);
  const nowS = Math.floor(options.now / 1000);
  const blockCount = options.blocks ?? WINDOW;
  const clock = options.clock ?? {
    genesisMs: options.now - 3_000 - blockCount * DEFAULT_BLOCK_MS,
    blockMs: DEFAULT_BLOCK_MS,
  };
  const head = Math.max(blockCount, headAt(clock, options.now));
  const accountCount = options.accounts ?? 5_000;
  const validatorCount = options.validators ?? 160;
  const delegatorCount = options.delegators ?? 2_000;
  const contractCount = options.contracts ?? 240;

  const addresses: string[] = [];
  const seen = new Set<string>();
  const freshAddress = (): string => {
    let a = `0x${rng.hex(40)}`;
    while (seen.has(a)) a = `0x${rng.hex(40)}`;
    seen.add(a);
    addresses.push(a);
    return a;
  };
  for (let i = 0; i < accountCount; i++) freshAddress();

  // Validators first, tokens filled in once delegations exist. As on a Cosmos chain, a validator's
  // operator address is its wallet account's 20 bytes under the `valoper` prefix, so every
  // validator needs a wallet of its own.
  if (validatorCount > accountCount) throw new Error('more validators than accounts');
  const wallets = rng.sample(accountCount, validatorCount).map((a) => addresses[a] as string);
  const monikers = new Set<string>();
  const validators: ValidatorRecord[] = [];
  for (let i = 0; i < validatorCount; i++) {
    const wallet = wallets[i] as string;
    let moniker = `${rng.pick(MONIKER_A)} ${rng.pick(MONIKER_B)}`;
    if (monikers.has(moniker)) moniker = `${moniker} ${i}`;
    monikers.add(moniker);
    const roll = rng.next();
    const jailed = roll < 0.05;
    const status = jailed
      ? rng.pick([VALIDATOR_STATUS.unbonding, VALIDATOR_STATUS.unbonded])
      : roll < 0.8
        ? VALIDATOR_STATUS.bonded
        : roll < 0.9
          ? VALIDATOR_STATUS.unbonding
          : VALIDATOR_STATUS.unbonded;
    const maxRate = rng.pick([10, 20, 25, 50, 100]);
    const rate = rng.int(0, Math.min(maxRate, 20));
    const registeredS = nowS - rng.int(30, 900) * 86_400;
    validators.push({
      id: String(i + 1),
      moniker,
      operator_address: encodeBech32(`${CANONICAL_PREFIX}valoper`, wallet.slice(2)),
      consensus_address: encodeBech32(`${CANONICAL_PREFIX}valcons`, rng.hex(40)),
      jailed,
      status,
      tokens: '0',
      delegator_shares: '0',
      description: `${moniker}: independent validator operating since ${iso(registeredS * 1000).slice(0, 10)}.`,
      unbonding_height: '0',
      unbonding_time: '1970-01-01T00:00:00Z',
      commission_rate: `0.${String(rate).padStart(2, '0')}0000000000000000`,
      commission_max_rate:
        maxRate === 100 ? '1.000000000000000000' : `0.${String(maxRate).padStart(2, '0')}0000000000000000`,
      commission_max_change_rate: `0.0${rng.int(1, 5)}0000000000000000`,
      commission_update_time: iso((registeredS + rng.int(0, 20) * 86_400) * 1000),
      proposed: '0',
      signed: '0',
      missed: '0',
      timestamp: '',
      uptimes: [],
      slashing_events: [],
      uptime_percentage: 0,
      image_url: `https://devnet.invalid/validators/${i + 1}.png`,
      registration_time: iso(registeredS * 1000),
      wallet_address: wallet,
      delegation_count: '0',
      outstanding_rewards: [],
    });
  }

  // Delegations: validator wallets self-bond, then ordinary delegators hold 1..30 each.
  const delegations = new Map<string, DelegationRecord[]>();
  const validatorShares = new Array<bigint>(validatorCount).fill(0n);
  const validatorDelegations = new Array<number>(validatorCount).fill(0);
  const slashed = validators.map((v) => v.jailed || rng.chance(0.03));
  const addDelegation = (delegator: string, v: number, units: bigint) => {
    const validator = validators[v] as ValidatorRecord;
    const amount = slashed[v] ? (units * 95n) / 100n : units;
    const list = delegations.get(delegator) ?? [];
    list.push({
      delegation: {
        delegator_address: delegator,
        validator_address: validator.operator_address,
        shares: dec18(units),
      },
      balance: { denom: DENOM, amount: String(amount) },
    });
    delegations.set(delegator, list);
    validatorShares[v] = (validatorShares[v] as bigint) + units;
    validatorDelegations[v] = (validatorDelegations[v] as number) + 1;
  };
  const logUniformUnits = (minExp: number, maxExp: number) =>
    BigInt(Math.floor(10 ** (minExp + rng.next() * (maxExp - minExp))));
  validators.forEach((v, i) => {
    addDelegation(v.wallet_address, i, logUniformUnits(11, 13));
  });
  const selfBonded = new Set(validators.map((v) => v.wallet_address));
  const candidates = rng.sample(accountCount, delegatorCount + validatorCount);
  let added = 0;
  for (const a of candidates) {
    const address = addresses[a] as string;
    if (selfBonded.has(address) || added >= delegatorCount) continue;
    added++;
    for (const v of rng.sample(validatorCount, rng.int(1, 30)))
      addDelegation(address, v, logUniformUnits(6, 12));
  }
  for (const list of delegations.values()) {
    list.sort((x, y) => (x.delegation.validator_address < y.delegation.validator_address ? -1 : 1));
  }

  const tokens = validators.map((_, i) =>
    slashed[i] ? ((validatorShares[i] as bigint) * 95n) / 100n : (validatorShares[i] as bigint),
  );
  validators.forEach((v, i) => {
    v.tokens = String(tokens[i]);
    v.delegator_shares = dec18(validatorShares[i] as bigint);
    v.delegation_count = String(validatorDelegations[i]);
  });

  // Blocks: proposers drawn from the bonded set, weighted by voting power.
  const active = validators.flatMap((v, i) => (v.status === VALIDATOR_STATUS.bonded && !v.jailed ? [i] : []));
  const proposers = proposerTable(active, tokens);
  const { blocks, txs } = generateBlocks(
    options.seed,
    head - blockCount + 1,
    head,
    accountCount,
    proposers,
    clock,
  );
  const txTotal = txs.count;

  // Liveness statistics derived from the blocks each validator proposed.
  const proposed = new Array<number>(validatorCount).fill(0);
  for (let i = 0; i < blockCount; i++)
    proposed[blocks.proposer[i] as number] = (proposed[blocks.proposer[i] as number] as number) + 1;
  const dayAgo = nowS - 86_400;
  const firstHeightToday = blocks.time.findIndex((s) => s >= dayAgo) + blocks.first;
  let slashingToday = 0;
  const timestamp = iso(nowS * 1000);
  validators.forEach((v, i) => {
    const bonded = v.status === VALIDATOR_STATUS.bonded && !v.jailed;
    const missed = v.jailed ? rng.int(500, 5_000) : bonded ? rng.int(0, 120) : rng.int(50, 2_000);
    const signed = Math.max(0, blockCount - missed);
    v.proposed = String(proposed[i]);
    v.signed = String(signed);
    v.missed = String(missed);
    v.uptime_percentage = Math.round((signed / blockCount) * 10_000) / 100;
    v.uptimes = Array.from({ length: 7 }, () => (bonded ? 99 + rng.next() : 70 + rng.next() * 29).toFixed(2));
    v.timestamp = timestamp;
    if (slashed[i]) {
      const height = blocks.first + rng.int(0, blockCount - 1);
      if (height >= firstHeightToday) slashingToday++;
      v.slashing_events = [`${v.jailed ? 'downtime' : 'double_sign'} at height ${height}`];
    }
    if (v.status !== VALIDATOR_STATUS.bonded) {
      const height = blocks.first + rng.int(Math.floor(blockCount / 2), blockCount - 1);
      v.unbonding_height = String(height);
      v.unbonding_time = iso(((blocks.time[blockIndex(blocks, height)] as number) + 21 * 86_400) * 1000);
    }
    v.outstanding_rewards = [
      {
        denom: DENOM,
        amount: `${(tokens[i] as bigint) / 5_000n}.${String(rng.int(0, 999_999)).padStart(6, '0')}000000000000`,
      },
    ];
  });

  const bondedTokens = active.reduce((sum, i) => sum + (tokens[i] as bigint), 0n);
  const annualRateBp = 800 + rng.int(0, 900);
  const statistics: ValidatorStatisticsRecord = {
    total_validators: String(validatorCount),
    consensus_validators: String(validators.filter((v) => v.status === VALIDATOR_STATUS.bonded).length),
    active_validators: String(active.length),
    total_staked_amount: String(bondedTokens),
    rewards_24h: String((bondedTokens * BigInt(annualRateBp)) / 10_000n / 365n),
    annualized_reward_rate: (annualRateBp / 10_000).toFixed(4),
    slashing_events_24h: String(slashingToday),
    timestamp,
  };

  // Contracts: a skewed symbol distribution so that popular symbols span several pages.
  const contracts: ContractRecord[] = [];
  for (let i = 0; i < contractCount; i++) {
    const symbol = SYMBOLS[Math.floor(SYMBOLS.length * rng.next() ** 2)] as string;
    const contractType = rng.pick(CONTRACT_TYPES);
    const fungible = contractType === 'ERC20' || contractType === 'PROXY';
    const txIndex = rng.int(0, txTotal - 1);
    contracts.push({
      address: freshAddress(),
      symbol,
      name: `${symbol} ${contractType === 'ERC20' ? 'Token' : contractType === 'PROXY' ? 'Proxy' : 'Collection'}`,
      chain_id: rng.pick(CHAINS),
      contract_type: contractType,
      decimals: fungible ? rng.pick([6, 8, 18, 18]) : 0,
      total_supply: String(logUniformUnits(6, 15)),
      holders: rng.int(1, 2_000_000),
      verified: rng.chance(0.8),
      deployer: addresses[rng.int(0, accountCount - 1)] as string,
      creation_tx_hash: txs.hash[txIndex] as string,
      created_at: iso((blocks.time[blockIndex(blocks, txs.height[txIndex] as number)] as number) * 1000),
    });
  }
  contracts.sort((a, b) => (a.address < b.address ? -1 : 1));

  // Buyback rounds: weekly; the past ones done, the current one in progress, the next one pending
  // and the last one cancelled before it began. Amounts in base units (18 decimals).
  const rounds = new Map<string, BuybackRoundRecord>();
  const week = 7 * 86_400_000;
  const firstStart = options.now - 4 * week - (options.now % 86_400_000);
  const tokens18 = (minExp: number, maxExp: number) =>
    BigInt(Math.floor(10 ** (minExp + rng.next() * (maxExp - minExp)) * 1e6)) * (TOKEN / 1_000_000n);
  for (let r = 0; r < ROUND_COUNT; r++) {
    const start = firstStart + r * week;
    const end = start + week;
    const status =
      end <= options.now
        ? ROUND_STATUS.done
        : start <= options.now
          ? ROUND_STATUS.inProgress
          : r === ROUND_COUNT - 1
            ? ROUND_STATUS.cancelled
            : ROUND_STATUS.pending;
    const totalSlots = rng.pick([50, 100, 200]);
    const booked =
      status === ROUND_STATUS.done
        ? totalSlots
        : status === ROUND_STATUS.inProgress
          ? rng.int(1, totalSlots - 1)
          : 0;
    const roundId = `round-${String(r + 1).padStart(3, '0')}`;
    rounds.set(roundId, {
      id: `${rng.hex(8)}-${rng.hex(4)}-4${rng.hex(3)}-a${rng.hex(3)}-${rng.hex(12)}`,
      round_id: roundId,
      start_time: iso(start),
      end_time: iso(end),
      status,
      total_slots: totalSlots,
      booked_slots: booked,
      min_amount: String(ROUND_MIN_TOKENS * TOKEN),
      max_amount: String(ROUND_MAX_TOKENS * TOKEN),
      // Each booked slot paid between the round's minimum and maximum.
      total_collected: String(BigInt(booked) * tokens18(0, Math.log10(Number(ROUND_MAX_TOKENS)))),
      revenue_pool: String(tokens18(3, 5)),
      burn_tx_hash: status === ROUND_STATUS.done ? (txs.hash[rng.int(0, txTotal - 1)] as string) : '',
      created_at: iso(start - week),
      updated_at: iso(start - week),
    });
  }

  return {
    seed: options.seed,
    clock,
    proposers,
    generatedAt: options.now,
    blocks,
    txs,
    addresses,
    validators,
    validatorRevision: 0,
    statistics,
    delegations,
    contracts,
    rounds,
  };
}

/** The bonded validators `active` and their stake as running totals (see Proposers). */
function proposerTable(active: number[], tokens: bigint[]): Proposers {
  const cumulative = new Float64Array(active.length);
  let power = 0;
  active.forEach((i, k) => {
    power += Number(tokens[i]);
    cumulative[k] = power;
  });
  return { validators: Int32Array.from(active), cumulative };
}

/** Blocks `first` to `head` and their transactions, in columns. */
function generateBlocks(
  seed: string,
  first: number,
  head: number,
  accounts: number,
  proposers: Proposers,
  clock: ChainClock,
): { blocks: Blocks; txs: Transactions } {
  const count = head - first + 1;
  const draws: BlockDraw[] = [];
  let txTotal = 0;
  for (let height = first; height <= head; height++) {
    const draw = drawBlock(seed, height, accounts, proposers);
    draws.push(draw);
    txTotal += draw.txs.length;
  }
  const blocks: Blocks = {
    count: head,
    first,
    hash: new Array<string>(count),
    time: new Float64Array(count),
    firstTx: new Int32Array(count),
    txCount: new Int32Array(count),
    proposer: new Int32Array(count),
  };
  const txs: Transactions = {
    count: txTotal,
    hash: new Array<string>(txTotal),
    height: new Int32Array(txTotal),
    actionIndex: new Int32Array(txTotal),
    initiator: new Int32Array(txTotal),
    type: new Uint8Array(txTotal),
    failure: new Uint8Array(txTotal),
  };
  let tx = 0;
  draws.forEach((draw, i) => {
    blocks.hash[i] = draw.hash;
    blocks.time[i] = blockTimeAt(clock, first + i);
    blocks.proposer[i] = draw.proposer;
    blocks.firstTx[i] = tx;
    blocks.txCount[i] = draw.txs.length;
    draw.txs.forEach((t, k) => {
      txs.hash[tx] = t.hash;
      txs.height[tx] = first + i;
      txs.actionIndex[tx] = k;
      txs.initiator[tx] = t.initiator;
      txs.type[tx] = t.type;
      txs.failure[tx] = t.failure;
      tx++;
    });
  });
  return { blocks, txs };
}
