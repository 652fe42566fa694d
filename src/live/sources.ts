import { UpstreamError } from '../errors.js';
import type { CallScope } from '../upstream/http.js';
import type { Upstreams } from '../upstream/index.js';
import type { Block, FailedTransaction, Page, Validator, ValidatorList } from '../upstream/models.js';
import type { LiveEvent } from './events.js';

/**
 * What the gateway polls for live updates, one source per kind of event (contract.md §6). A
 * source's poll reads its upstream (once, or a bounded number of pages for failed transactions)
 * and returns what changed since its state, with the state after it; the poller (poller.ts) keeps
 * the state, here or in Redis, and publishes the events. An upstream failure rejects the poll: no
 * event, the state unchanged, so the next good poll fills the gap.
 */

export interface PollResult<S> {
  events: LiveEvent[];
  state: S;
}

export interface Source<S> {
  /** The source's key: `blocks`, `validators`, or `failed:<credential hash>`. */
  readonly key: string;
  /** One poll: the events since `state` (null: nothing known yet), and the state after them. */
  poll(state: S | null, scope: CallScope): Promise<PollResult<S>>;
  /**
   * Sources whose events have an order (blocks): the events after height `after`, up to `before`
   * (exclusive; null: until one is missing), at most LIVE_CATCH_UP. What a listener reads when it
   * finds it missed some (a Redis reconnect: pub/sub keeps nothing for an absent listener).
   */
  between?(after: number, before: number | null, scope: CallScope): Promise<LiveEvent[]>;
  /**
   * Private sources: whether the source's credential is refused now, by one read with it. A
   * `refused` event heard from another process ends streams only once this confirms it.
   */
  refusedNow?(scope: CallScope): Promise<boolean>;
}

/** A block by height through the search service's suggestions (the exact height comes first). */
export async function blockAt(upstreams: Upstreams, height: number, scope: CallScope): Promise<Block | null> {
  const suggestions = await upstreams.scan.suggestions(String(height), scope);
  return suggestions.blocks.find((b) => b.height === height) ?? null;
}

/**
 * The chain's head by a galloping search over heights: from `known` (a head found before, 0 for
 * none), known + 1, + 2, + 4, … until a height is missing, then halving the gap between the last
 * found and the first missing: about 2 log2(gap) lookups, so that a poller starting again after a
 * while reads a few heights, not the whole chain's (about 2 log2(head) from 0). A known head the
 * chain no longer has (the upstream's chain restarted) searches from the start.
 */
async function findHead(upstreams: Upstreams, scope: CallScope, known: number): Promise<number> {
  const from = known > 0 && (await blockAt(upstreams, known, scope)) ? known : 0;
  let found = from;
  let step = 1;
  while (await blockAt(upstreams, from + step, scope)) {
    found = from + step;
    step *= 2;
  }
  let missing = from + step;
  while (missing - found > 1) {
    const mid = Math.floor((found + missing) / 2);
    if (await blockAt(upstreams, mid, scope)) found = mid;
    else missing = mid;
  }
  return found;
}

/** A poll that found no new block still says the head it saw (none while the chain is empty). */
const headEvent = (height: number): LiveEvent[] =>
  height > 0 ? [{ kind: 'head', height, polledAt: Date.now() }] : [];

export interface BlockState {
  /** The last height delivered. */
  head: number;
}

/**
 * New blocks: the head is found when polling starts; each poll then asks for head + 1, and goes on
 * while blocks keep coming, up to `catchUp` blocks per poll (the rest on the next), so that several
 * new blocks are delivered in height order and none is skipped. A poller that takes the source
 * over with no stored state (Redis lost it: a restart, a failover) while this process has delivered
 * blocks continues from the last one it delivered (`delivered`), not from the head, which would
 * skip those found meanwhile. The last head seen is kept across the poller's stops and starts (a
 * source with no subscriber is not polled), so that finding it again costs a few reads.
 */
export function blockSource(
  upstreams: Upstreams,
  catchUp: number,
  delivered: () => number,
): Source<BlockState> {
  let known = 0;
  const after = async (from: number, before: number | null, scope: CallScope) => {
    const events: LiveEvent[] = [];
    for (let height = from + 1; events.length < catchUp && (before === null || height < before); height++) {
      const block = await blockAt(upstreams, height, scope);
      if (!block) break;
      events.push({ kind: 'block', block, polledAt: Date.now() });
    }
    return events;
  };
  return {
    key: 'blocks',
    async poll(state, scope) {
      const from = state?.head ?? delivered();
      if (from === 0) {
        known = await findHead(upstreams, scope, known);
        return { events: headEvent(known), state: { head: known } };
      }
      const events = await after(from, null, scope);
      const last = events.at(-1);
      known = last?.kind === 'block' ? last.block.height : from;
      return { events: events.length > 0 ? events : headEvent(known), state: { head: known } };
    },
    between: after,
  };
}

export interface ValidatorState {
  /** Each validator's data as last delivered, by operator address. */
  validators: Record<string, string>;
  statistics: string;
}

const fingerprint = (value: unknown) => JSON.stringify(value);

/**
 * What makes a validator's event: every field but the counters a live chain moves with each block
 * (blocks proposed, signed and missed, the uptime window and percentage, outstanding rewards, the
 * record's timestamp). Diffed on those too, every validator would be an event on every poll, and
 * `validatorUpdated` a re-send of the whole list; an event still carries their current values.
 */
export const validatorPrint = ({
  proposed: _proposed,
  signed: _signed,
  missed: _missed,
  uptimes: _uptimes,
  uptimePercentage: _uptimePercentage,
  outstandingRewards: _outstandingRewards,
  timestamp: _timestamp,
  ...state
}: Validator) => fingerprint(state);

/**
 * Validators and their statistics: the whole validator list on each poll (it also refreshes the
 * list the gateway's queries share), diffed per validator (tokens, status, jailing, commission,
 * moniker, description: what validatorPrint keeps) and for the statistics.
 */
export function validatorSource(
  upstreams: Upstreams,
  refreshed: (list: ValidatorList) => void,
): Source<ValidatorState> {
  return {
    key: 'validators',
    async poll(state, scope) {
      const list = await upstreams.stake.allValidators(scope);
      refreshed(list);
      const now = Date.now();
      const next: ValidatorState = { validators: {}, statistics: fingerprint(list.statistics) };
      const events: LiveEvent[] = [];
      for (const validator of list.validators) {
        const print = validatorPrint(validator);
        next.validators[validator.operatorAddress] = print;
        if (state && state.validators[validator.operatorAddress] !== print) {
          events.push({ kind: 'validator', validator, polledAt: now });
        }
      }
      if (state && state.statistics !== next.statistics) {
        events.push({ kind: 'statistics', statistics: list.statistics, polledAt: now });
      }
      return { events, state: next };
    },
  };
}

export interface FailedState {
  /**
   * Hashes of one page of the list, the newest delivered among them (or, at first, the list's
   * first page): a poll reads down to the page that holds one of them.
   */
  seen: string[];
  /**
   * Set when a poll read FAILED_MAX_PAGES pages without reaching `seen`: the page the next poll
   * goes on from (the last one read, read again: the list may have moved down meanwhile).
   */
  from?: number;
}

/** Failed transactions per page read: as many as one upstream page holds. */
export const FAILED_PAGE_SIZE = 100;
/** The most pages of failed transactions one poll reads; the rest on the next polls. */
export const FAILED_MAX_PAGES = 10;

/** An item's identity on the list: its hash, or what else identifies it. */
export const txKey = (tx: FailedTransaction) =>
  tx.hash ?? `${tx.txNumber ?? ''}:${tx.blockHeight ?? ''}:${tx.actionIndex ?? ''}`;

/**
 * Oldest first by the chain's own order (block, then transaction, then action), which holds
 * whichever way the upstream sorts its page; two without a height keep the order they came in.
 */
const chainOrder = (a: FailedTransaction, b: FailedTransaction) =>
  a.blockHeight === null || b.blockHeight === null
    ? 0
    : a.blockHeight - b.blockHeight ||
      (a.txNumber ?? 0) - (b.txNumber ?? 0) ||
      (a.actionIndex ?? 0) - (b.actionIndex ?? 0);

type PageReader = (page: number, scope: CallScope) => Promise<Page<FailedTransaction>>;

/** What one poll's read found: done, with the new ones (newest first) and the first page's hashes; or not yet. */
type ReadDown = { done: true; found: FailedTransaction[]; top: string[] } | { done: false; next: number };

/**
 * One poll's read of the list (newest first), from page `state.from` (or 1) down to the first page
 * that holds a hash of `state.seen`, or the list's end, at most FAILED_MAX_PAGES pages. The new
 * ones are those not in `seen`, each once (the list moving down between two reads shows some
 * twice). An explorer that answers the same page whatever is asked ends the read.
 */
async function readDown(read: PageReader, state: FailedState, scope: CallScope): Promise<ReadDown> {
  const known = new Set(state.seen);
  const first = state.from ?? 1;
  const found = new Map<string, FailedTransaction>();
  let top: string[] = [];
  let previous: string | null = null;
  for (let page = first; page < first + FAILED_MAX_PAGES; page++) {
    const { nodes, pageInfo } = await read(page, scope);
    const keys = nodes.map(txKey);
    const same = keys.join('\n');
    if (same === previous) break;
    previous = same;
    if (page === first) top = keys;
    nodes.forEach((tx, i) => {
      const key = keys[i] as string;
      if (!known.has(key) && !found.has(key)) found.set(key, tx);
    });
    const end = nodes.length < FAILED_PAGE_SIZE || !pageInfo.hasNextPage;
    if (end || keys.some((key) => known.has(key))) break;
    if (page === first + FAILED_MAX_PAGES - 1) return { done: false, next: page };
  }
  return { done: true, found: [...found.values()], top };
}

/**
 * Failed transactions, read with one credential: the failed-24h list, diffed by hash. A poll reads
 * its pages down to the last ones it knows, so that more new ones than a page holds are all
 * delivered, oldest first (the list is newest first: reversed, then put in the chain's order, in
 * case an upstream sorts otherwise). More than FAILED_MAX_PAGES pages of new ones: the poll
 * delivers nothing yet and the next goes on further down; once it reaches the known ones, it
 * delivers the oldest (from the page it started on down), and the next polls those above, so that
 * the order holds and none is lost, with the reads of each poll bounded.
 */
export function failedSource(upstreams: Upstreams, key: string, token: string): Source<FailedState> {
  const read: PageReader = (page, scope) =>
    upstreams.explorer.failedTransactions({ page, pageSize: FAILED_PAGE_SIZE, cursor: null }, token, scope);
  return {
    key,
    refusedNow: async (scope) => !(await explorerAccepts(upstreams, token, scope)),
    async poll(state, scope) {
      if (state === null) return { events: [], state: { seen: (await read(1, scope)).nodes.map(txKey) } };
      const result = await readDown(read, state, scope);
      if (!result.done) return { events: [], state: { seen: state.seen, from: result.next } };
      const now = Date.now();
      const events: LiveEvent[] = result.found
        .reverse()
        .sort(chainOrder)
        .map((transaction) => ({ kind: 'failedTransaction', transaction, polledAt: now }));
      return { events, state: { seen: result.top } };
    },
  };
}

/** Whether a token is good for the explorer's reads: one read with it (contract.md §6). */
export async function explorerAccepts(
  upstreams: Upstreams,
  token: string,
  scope: CallScope,
): Promise<boolean> {
  try {
    await upstreams.explorer.failedTransactions({ page: 1, pageSize: 1, cursor: null }, token, scope);
    return true;
  } catch (error) {
    if (error instanceof UpstreamError && error.extensions.code === 'UNAUTHENTICATED') return false;
    throw error;
  }
}
