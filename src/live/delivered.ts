import type { LiveEvent } from './events.js';
import { FAILED_MAX_PAGES, FAILED_PAGE_SIZE, txKey, validatorPrint } from './sources.js';

/**
 * Failed transactions remembered per source: as many as one poll delivers at most, which covers an
 * event sent again by a second poller or a new holder continuing from an older state.
 */
const FAILED_REMEMBERED = FAILED_MAX_PAGES * FAILED_PAGE_SIZE;

/**
 * What this process delivered of one source, so that an event reaching it twice goes to its
 * subscribers once, whatever kind (contract.md §7: live events at most once, whatever Redis does).
 * The bus (bus.ts) keeps two processes from polling at once; this is for what it cannot rule out:
 * a process that polled for itself while cut off from Redis, then hears a holder send the same
 * events again once Redis is back. Each kind by its own identity:
 * - a block by its height: one at or below the last delivered is a repeat (and would be out of order);
 * - a validator by its data (what validatorPrint keeps): the same as last delivered for its
 *   operator address is no change;
 * - the statistics likewise;
 * - a failed transaction by its hash, among the last FAILED_REMEMBERED delivered.
 */
export class DeliveredEvents {
  private lastHeight = 0;

  /** The last block height delivered here (0: none yet). */
  get height(): number {
    return this.lastHeight;
  }

  private readonly validators = new Map<string, string>();
  private statistics: string | null = null;
  /** In delivery order (a Set keeps insertion order): the oldest is forgotten first. */
  private readonly failed = new Set<string>();

  /** Whether `event` is new here; if so, it counts as delivered from now on. */
  fresh(event: LiveEvent): boolean {
    switch (event.kind) {
      case 'block':
        if (event.block.height <= this.lastHeight) return false;
        this.lastHeight = event.block.height;
        return true;
      case 'validator': {
        const print = validatorPrint(event.validator);
        if (this.validators.get(event.validator.operatorAddress) === print) return false;
        this.validators.set(event.validator.operatorAddress, print);
        return true;
      }
      case 'statistics': {
        const print = JSON.stringify(event.statistics);
        if (this.statistics === print) return false;
        this.statistics = print;
        return true;
      }
      // An end, not an event: every one is told. A head is no subscriber's: only the head hears it.
      case 'refused':
      case 'head':
        return true;
      case 'failedTransaction': {
        const key = txKey(event.transaction);
        if (this.failed.has(key)) return false;
        this.failed.add(key);
        if (this.failed.size > FAILED_REMEMBERED)
          this.failed.delete(this.failed.values().next().value as string);
        return true;
      }
    }
  }
}
