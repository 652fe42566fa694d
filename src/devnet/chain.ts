import {
  blockTimeAt,
  type DevnetData,
  drawBlock,
  iso,
  VALIDATOR_STATUS,
  type ValidatorRecord,
} from './data.js';
import { Rng } from './random.js';

/**
 * The devnet's chain moving on, as a live chain does: each advance appends a block (its
 * transactions, now and then a failed one) and moves the validator set (a validator's tokens go up
 * or down, one is jailed or unjailed, a commission changes), with the statistics following. The
 * generated data is extended in place, so every service sees the new state on its next request.
 *
 * Deterministic: a new block is the one the chain makes at its height whenever it is made (data.ts,
 * `drawBlock`), at the time the chain's clock gives it; the moves at a height come from a generator
 * seeded from the chain's seed and that height.
 */

/** The most blocks one step towards the clock appends: a machine that slept catches up in steps. */
const MAX_STEP = 1_000;

/** What one advance added and changed. */
export interface Advance {
  /** Heights of the blocks added, in order. */
  heights: number[];
  /** Hashes of the failed transactions added, oldest first. */
  failedTxs: string[];
  /** Operator addresses (canonical) of the validators whose data changed. */
  validators: string[];
}

const appended = <T extends Float64Array | Int32Array | Uint8Array>(column: T, values: number[]): T => {
  const grown = new (column.constructor as new (length: number) => T)(column.length + values.length);
  grown.set(column);
  grown.set(values, column.length);
  return grown;
};

/**
 * The columns of the blocks and transactions one advance adds, appended to the data's columns at
 * once when it ends (a column is copied once per advance, not once per block).
 */
class Batch {
  private readonly blocks = {
    time: [] as number[],
    firstTx: [] as number[],
    txCount: [] as number[],
    proposer: [] as number[],
  };
  private readonly txs = {
    height: [] as number[],
    actionIndex: [] as number[],
    initiator: [] as number[],
    type: [] as number[],
    failure: [] as number[],
  };
  lastTime: number;
  nextHeight: number;
  private txCount: number;

  constructor(private readonly data: DevnetData) {
    this.lastTime = data.blocks.time[data.blocks.time.length - 1] as number;
    this.nextHeight = data.blocks.count + 1;
    this.txCount = data.txs.count;
  }

  block(time: number, txCount: number, proposer: number): void {
    this.blocks.time.push(time);
    this.blocks.firstTx.push(this.txCount);
    this.blocks.txCount.push(txCount);
    this.blocks.proposer.push(proposer);
    this.lastTime = time;
    this.nextHeight++;
  }

  tx(height: number, actionIndex: number, initiator: number, type: number, failure: number): void {
    this.txs.height.push(height);
    this.txs.actionIndex.push(actionIndex);
    this.txs.initiator.push(initiator);
    this.txs.type.push(type);
    this.txs.failure.push(failure);
    this.txCount++;
  }

  commit(): void {
    const { blocks, txs } = this.data;
    blocks.time = appended(blocks.time, this.blocks.time);
    blocks.firstTx = appended(blocks.firstTx, this.blocks.firstTx);
    blocks.txCount = appended(blocks.txCount, this.blocks.txCount);
    blocks.proposer = appended(blocks.proposer, this.blocks.proposer);
    blocks.count = this.nextHeight - 1;
    txs.height = appended(txs.height, this.txs.height);
    txs.actionIndex = appended(txs.actionIndex, this.txs.actionIndex);
    txs.initiator = appended(txs.initiator, this.txs.initiator);
    txs.type = appended(txs.type, this.txs.type);
    txs.failure = appended(txs.failure, this.txs.failure);
    txs.count = this.txCount;
  }
}

export class DevnetChain {
  constructor(private readonly data: DevnetData) {}

  /** Appends the blocks up to `height` (at most MAX_STEP at once); none when the head is there already. */
  advanceTo(height: number): Advance {
    const behind = Math.min(height - this.data.blocks.count, MAX_STEP);
    return behind > 0 ? this.advance(behind) : { heights: [], failedTxs: [], validators: [] };
  }

  /** Appends `blocks` blocks, moving the validator set along with each. */
  advance(blocks = 1): Advance {
    const advance: Advance = { heights: [], failedTxs: [], validators: [] };
    const batch = new Batch(this.data);
    for (let i = 0; i < blocks; i++) {
      const height = batch.nextHeight;
      this.appendBlock(batch, advance);
      // Every block moves the list (its proposer's count, as on a live chain); only some move
      // what makes a validator's event (advance.validators).
      this.data.validatorRevision++;
      const moved = this.moveValidators(new Rng(`${this.data.seed}:moves:${height}`), batch.lastTime);
      if (moved.length > 0) {
        advance.validators.push(...moved.filter((v) => !advance.validators.includes(v)));
        this.refreshStatistics(batch.lastTime);
      }
    }
    batch.commit();
    return advance;
  }

  private appendBlock(batch: Batch, advance: Advance): void {
    const { txs, addresses, contracts, validators } = this.data;
    const height = batch.nextHeight;
    const block = drawBlock(this.data.seed, height, addresses.length - contracts.length, this.data.proposers);
    batch.block(blockTimeAt(this.data.clock, height), block.txs.length, block.proposer);
    const record = validators[block.proposer];
    if (record) record.proposed = String(Number(record.proposed) + 1);
    block.txs.forEach((tx, k) => {
      txs.hash.push(tx.hash);
      batch.tx(height, k, tx.initiator, tx.type, tx.failure);
      if (tx.failure > 0) advance.failedTxs.push(tx.hash);
    });
    this.data.blocks.hash.push(block.hash);
    advance.heights.push(height);
  }

  /** Moves the validator set by one block: the operator addresses of those that changed. */
  private moveValidators(rng: Rng, blockTime: number): string[] {
    const { validators } = this.data;
    const changed: ValidatorRecord[] = [];
    const at = iso(blockTime * 1000);
    // Half the blocks see a delegation or an undelegation of 0.1 to 2 % of a validator's tokens.
    if (rng.chance(0.5)) {
      const v = rng.pick(validators);
      const tokens = BigInt(v.tokens);
      const delta = (tokens * BigInt(rng.int(1, 20))) / 1000n;
      const next = rng.chance(0.6) ? tokens + delta : tokens - delta;
      v.tokens = String(next);
      v.delegator_shares = `${next}.000000000000000000`;
      changed.push(v);
    }
    // Now and then one is jailed for downtime, or one jailed before is let out.
    if (rng.chance(0.05)) {
      const v = rng.pick(validators);
      v.jailed = !v.jailed;
      v.status = v.jailed ? VALIDATOR_STATUS.unbonding : VALIDATOR_STATUS.bonded;
      changed.push(v);
    }
    // Now and then one changes its commission, within its maximum.
    if (rng.chance(0.05)) {
      const v = rng.pick(validators);
      const max = Math.round(Number(v.commission_max_rate) * 100);
      v.commission_rate = `0.${String(rng.int(0, Math.min(max, 20))).padStart(2, '0')}0000000000000000`;
      v.commission_update_time = at;
      changed.push(v);
    }
    for (const v of changed) v.timestamp = at;
    return changed.map((v) => v.operator_address);
  }

  /** The statistics after the validator set moved: counts and the stake of the active set. */
  private refreshStatistics(blockTime: number): void {
    const { validators, statistics } = this.data;
    const active = validators.filter((v) => v.status === VALIDATOR_STATUS.bonded && !v.jailed);
    statistics.consensus_validators = String(
      validators.filter((v) => v.status === VALIDATOR_STATUS.bonded).length,
    );
    statistics.active_validators = String(active.length);
    statistics.total_staked_amount = String(active.reduce((sum, v) => sum + BigInt(v.tokens), 0n));
    statistics.timestamp = iso(blockTime * 1000);
  }
}
