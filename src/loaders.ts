import DataLoader from 'dataloader';
import type { ContractQuery } from './upstream/explorer/client.js';
import type { Upstreams } from './upstream/index.js';
import type {
  Block,
  BuybackRoundUpdate,
  Contract,
  Delegation,
  FailedTransaction,
  Page,
  PageArgs,
  SearchResults,
  Suggestions,
  Transaction,
  Validator,
  ValidatorList,
} from './upstream/models.js';

/**
 * The validator list indexed by every address a validator is known by: operator, consensus
 * (block proposers) and wallet.
 */
export class ValidatorDirectory {
  private readonly byAddress = new Map<string, Validator>();

  constructor(readonly list: ValidatorList) {
    for (const v of list.validators) {
      this.byAddress.set(v.walletAddress.toLowerCase(), v);
      this.byAddress.set(v.consensusAddress.toLowerCase(), v);
      this.byAddress.set(v.operatorAddress.toLowerCase(), v);
    }
  }

  find(address: string): Validator | null {
    return this.byAddress.get(address.toLowerCase()) ?? null;
  }
}

/**
 * The validator list shared across requests for `ttlMs`. It is public data fetched without any
 * caller's token or signal, so one caller can neither see another's data through it nor cancel
 * another's read. Concurrent misses share one fetch; a failed fetch is not kept.
 */
export class ValidatorCache {
  private entry: { expires: number; value: Promise<ValidatorDirectory> } | null = null;

  constructor(
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  get(fetch: () => Promise<ValidatorList>): Promise<ValidatorDirectory> {
    if (this.ttlMs === 0) return fetch().then((list) => new ValidatorDirectory(list));
    const entry = this.entry;
    if (entry && entry.expires > this.now()) return entry.value;
    const value = fetch().then((list) => new ValidatorDirectory(list));
    const fresh = { expires: Number.POSITIVE_INFINITY, value };
    this.entry = fresh;
    value.then(
      () => {
        fresh.expires = this.now() + this.ttlMs;
      },
      () => {
        if (this.entry === fresh) this.entry = null;
      },
    );
    return value;
  }
}

/** A loader whose keys are fetched one upstream call each, concurrently; equal keys share one call. */
function perKey<K, V>(
  fetch: (key: K) => Promise<V>,
  cacheKey?: (key: K) => string,
): DataLoader<K, V, string | K> {
  return new DataLoader<K, V, string | K>(
    async (keys) => {
      const settled = await Promise.allSettled(keys.map(fetch));
      return settled.map((s) => (s.status === 'fulfilled' ? s.value : (s.reason as Error)));
    },
    cacheKey ? { cacheKeyFn: cacheKey } : {},
  );
}

export interface LoaderDeps {
  upstreams: Upstreams;
  validatorCache: ValidatorCache;
  signal?: AbortSignal | undefined;
}

export type Loaders = ReturnType<typeof createLoaders>;

/** Loaders for one GraphQL request: nothing here outlives the request or crosses callers. */
export function createLoaders({ upstreams, validatorCache, signal }: LoaderDeps) {
  const suggestions = perKey((text: string) => upstreams.scan.suggestions(text, signal));
  const search = perKey((text: string) => upstreams.scan.search(text, signal));
  let directory: Promise<ValidatorDirectory> | null = null;
  const validatorDirectory = () => {
    directory ??= validatorCache.get(() => upstreams.stake.allValidators());
    return directory;
  };

  return {
    suggestions: suggestions as DataLoader<string, Suggestions>,
    search: search as DataLoader<string, SearchResults>,
    /** A block by height, through the suggestions for that height (exact values come first). */
    async block(height: number): Promise<Block | null> {
      const s = await suggestions.load(String(height));
      return s.blocks.find((b) => b.height === height) ?? null;
    },
    /** A transaction by hash, through the suggestions for that hash. */
    async transaction(hash: string): Promise<Transaction | null> {
      const key = hash.toLowerCase();
      const s = await suggestions.load(key);
      return s.transactions.find((t) => t.hash.toLowerCase() === key) ?? null;
    },
    validatorDirectory,
    validator: new DataLoader<string, Validator | null>(async (addresses) => {
      const dir = await validatorDirectory();
      return addresses.map((a) => dir.find(a));
    }),
    delegations: perKey(
      (k: { delegator: string } & PageArgs) => upstreams.stake.delegations(k.delegator, k, signal),
      (k) => JSON.stringify([k.delegator, k.page, k.pageSize, k.cursor]),
    ) as DataLoader<{ delegator: string } & PageArgs, Page<Delegation>, string>,
    contracts: perKey(
      (k: { query: ContractQuery; token: string }) =>
        upstreams.explorer.contractsBySymbol(k.query, k.token, signal),
      (k) => JSON.stringify([k.query, k.token]),
    ) as DataLoader<{ query: ContractQuery; token: string }, Page<Contract>, string>,
    failedTransactions: perKey(
      (k: { args: PageArgs; token: string }) =>
        upstreams.explorer.failedTransactions(k.args, k.token, signal),
      (k) => JSON.stringify([k.args, k.token]),
    ) as DataLoader<{ args: PageArgs; token: string }, Page<FailedTransaction>, string>,
    /** Not a loader: a write is sent exactly once and never batched or cached. */
    updateBuybackRound: (update: BuybackRoundUpdate, token: string) =>
      upstreams.stake.updateBuybackRound(update, token, signal),
  };
}
