import DataLoader from 'dataloader';
import { addressKey, validatorAddressKeys } from '../lib/address.js';
import type { ContractQuery } from '../upstream/explorer/client.js';
import type { CallScope } from '../upstream/http.js';
import type { Upstreams } from '../upstream/index.js';
import type {
  Block,
  BuybackRound,
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
} from '../upstream/models.js';

/** Spellings of validators' addresses other than staking's that a directory remembers. */
const EXTRA_SPELLINGS = 4_096;

/**
 * The validator list indexed by every address a validator is known by: operator, consensus
 * (block proposers) and wallet, in any encoding. Services disagree on the bech32 prefix (the
 * search service names proposers `biyavalcons1…` where staking says `bybvalcons1…`) and on `0x…`
 * against bech32 accounts, so addresses match by their role and bytes (`addressKey`).
 */
export class ValidatorDirectory {
  /** Exact text as staking sent it: the common case, a map access with no decoding. */
  private readonly byText = new Map<string, Validator>();
  private readonly byKey = new Map<string, Validator>();
  private readonly maxText: number;

  constructor(readonly list: ValidatorList) {
    for (const v of list.validators) {
      for (const [address, key] of validatorAddressKeys(v)) {
        this.byText.set(address, v);
        this.byKey.set(key, v);
      }
    }
    this.maxText = this.byText.size + EXTRA_SPELLINGS;
  }

  find(address: string): Validator | null {
    const known = this.byText.get(address);
    if (known) return known;
    const found = this.byKey.get(addressKey(address)) ?? null;
    // Another spelling of a known validator's address (a delegation's, a proposer's) is decoded
    // once per list. Only spellings of the list's validators are kept, and at most
    // EXTRA_SPELLINGS of them (a caller could try every letter case of an address).
    if (found && this.byText.size < this.maxText) this.byText.set(address, found);
    return found;
  }

  /** The validator whose operator address is these 20 bytes (40 hex digits), in any encoding. */
  byOperator(hex: string): Validator | null {
    return this.byKey.get(`valoper:${hex}`) ?? null;
  }
}

/**
 * The validator list shared across requests for `ttlMs`. It is public data fetched without any
 * caller's token or signal, so one caller can neither see another's data through it nor cancel
 * another's read. Concurrent misses share one fetch; a failed fetch is not kept. A fresh list
 * already fetched is handed out as it is, not wrapped in a promise, so that a request joining
 * 20 rows to it answers them synchronously. With `shared` (REDIS_URL), a miss here reads the
 * list through Redis first (shared-cache.ts), and this cache is the first level in front of it:
 * an entry read from Redis lives only for what is left of its Redis TTL.
 */
export class ValidatorCache {
  private entry: {
    expires: number;
    value: Promise<ValidatorDirectory>;
    settled?: ValidatorDirectory;
  } | null = null;

  constructor(
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
    private readonly onLookup: (hit: boolean) => void = () => {},
    private readonly shared?: (
      fetch: () => Promise<ValidatorList>,
    ) => Promise<{ value: ValidatorList; ttlMs: number }>,
  ) {}

  /** A list just read by someone else (the live poller, every LIVE_POLL_MS): kept as a fresh entry. */
  refresh(list: ValidatorList): void {
    if (this.ttlMs === 0) return;
    const directory = new ValidatorDirectory(list);
    this.entry = { expires: this.now() + this.ttlMs, value: Promise.resolve(directory), settled: directory };
  }

  get(fetch: () => Promise<ValidatorList>): ValidatorDirectory | Promise<ValidatorDirectory> {
    if (this.ttlMs === 0) return fetch().then((list) => new ValidatorDirectory(list));
    const entry = this.entry;
    const hit = entry !== null && entry.expires > this.now();
    this.onLookup(hit);
    if (hit) return entry.settled ?? entry.value;
    let ttlMs = this.ttlMs;
    const list = this.shared
      ? this.shared(fetch).then((shared) => {
          ttlMs = Math.min(shared.ttlMs, this.ttlMs);
          return shared.value;
        })
      : fetch();
    const value = list.then((list) => new ValidatorDirectory(list));
    const fresh: NonNullable<ValidatorCache['entry']> = { expires: Number.POSITIVE_INFINITY, value };
    this.entry = fresh;
    value.then(
      (directory) => {
        fresh.settled = directory;
        fresh.expires = this.now() + ttlMs;
      },
      () => {
        if (this.entry === fresh) this.entry = null;
      },
    );
    return value;
  }
}

/** A loader whose keys are fetched one upstream call each, concurrently; equal keys share one call. */
function perKey<K, V, C = K>(fetch: (key: K) => Promise<V>, cacheKey?: (key: K) => C): DataLoader<K, V, C> {
  return new DataLoader<K, V, C>(
    async (keys) => {
      // One key, the common batch: its own outcome, without allSettled's array and promises.
      if (keys.length === 1)
        return fetch(keys[0] as K).then(
          (value) => [value],
          (reason: Error) => [reason],
        );
      const settled = await Promise.allSettled(keys.map(fetch));
      return settled.map((s) => (s.status === 'fulfilled' ? s.value : (s.reason as Error)));
    },
    cacheKey ? { cacheKeyFn: cacheKey } : {},
  );
}

export interface LoaderDeps {
  upstreams: Upstreams;
  validatorCache: ValidatorCache;
  /** The request's abort signal and trace, passed to every upstream call it makes. */
  scope: CallScope;
}

/**
 * Loaders for one GraphQL request: nothing here outlives the request or crosses callers. Each
 * loader is built on first use, so a request pays only for the ones its fields need.
 */
export class Loaders {
  private suggestionsLoader?: DataLoader<string, Suggestions>;
  private searchLoader?: DataLoader<string, SearchResults>;
  private delegationsLoader?: DataLoader<{ delegator: string } & PageArgs, Page<Delegation>, string>;
  private contractsLoader?: DataLoader<{ query: ContractQuery; token: string }, Page<Contract>, string>;
  private failedLoader?: DataLoader<{ args: PageArgs; token: string }, Page<FailedTransaction>, string>;
  /** The request's validator directory: a promise until it is at hand, then the directory itself. */
  private directory?: ValidatorDirectory | Promise<ValidatorDirectory>;

  constructor(private readonly deps: LoaderDeps) {}

  /** The request's abort signal and trace, for an upstream call made outside a loader. */
  get scope(): CallScope {
    return this.deps.scope;
  }

  /**
   * Starts afresh: what the request's loaders remembered is forgotten. A subscription resolves each
   * event as a request of its own, so that a stream open for hours neither grows nor answers from
   * data read for an earlier event.
   */
  renew(): void {
    this.suggestionsLoader = undefined;
    this.searchLoader = undefined;
    this.delegationsLoader = undefined;
    this.contractsLoader = undefined;
    this.failedLoader = undefined;
    this.directory = undefined;
  }

  get suggestions(): DataLoader<string, Suggestions> {
    const { upstreams, scope } = this.deps;
    this.suggestionsLoader ??= perKey((text: string) => upstreams.scan.suggestions(text, scope));
    return this.suggestionsLoader;
  }

  get search(): DataLoader<string, SearchResults> {
    const { upstreams, scope } = this.deps;
    this.searchLoader ??= perKey((text: string) => upstreams.scan.search(text, scope));
    return this.searchLoader;
  }

  /** A block by height, through the suggestions for that height (exact values come first). */
  async block(height: number): Promise<Block | null> {
    const s = await this.suggestions.load(String(height));
    return s.blocks.find((b) => b.height === height) ?? null;
  }

  /** A transaction by hash, through the suggestions for that hash. */
  async transaction(hash: string): Promise<Transaction | null> {
    const key = hash.toLowerCase();
    const s = await this.suggestions.load(key);
    return s.transactions.find((t) => t.hash.toLowerCase() === key) ?? null;
  }

  /** The validator list, read at most once per request (and shared across requests by the cache). */
  private directoryNow(): ValidatorDirectory | Promise<ValidatorDirectory> {
    if (this.directory === undefined) {
      const { upstreams, validatorCache, scope } = this.deps;
      // Shared by every caller within the TTL, so never cancelled by this one's signal.
      const directory = validatorCache.get(() => upstreams.stake.allValidators({ trace: scope.trace }));
      this.directory = directory;
      if (directory instanceof Promise)
        directory.then(
          (value) => {
            this.directory = value;
          },
          () => {},
        );
    }
    return this.directory;
  }

  validatorDirectory(): Promise<ValidatorDirectory> {
    return Promise.resolve(this.directoryNow());
  }

  /**
   * A validator by any of its addresses. Not a DataLoader: the whole list is one read per request
   * already, so every lookup is a map access, answered at once when the list is at hand.
   */
  validator(address: string): Validator | null | Promise<Validator | null> {
    const directory = this.directoryNow();
    return directory instanceof ValidatorDirectory
      ? directory.find(address)
      : directory.then((d) => d.find(address));
  }

  get delegations(): DataLoader<{ delegator: string } & PageArgs, Page<Delegation>, string> {
    const { upstreams, scope } = this.deps;
    this.delegationsLoader ??= perKey(
      async (k: { delegator: string } & PageArgs) => {
        await this.learnAccountEncoding();
        return upstreams.stake.delegations(k.delegator, k, scope);
      },
      (k) => JSON.stringify([k.delegator, k.page, k.pageSize, k.cursor]),
    );
    return this.delegationsLoader;
  }

  /**
   * Staking is called with accounts in its own encoding, which it shows in the validator list.
   * Until that is known (a new process, no BECH32_PREFIX), the list is read first: the same read
   * the delegations' validator joins use. If it fails, the address goes as the caller gave it.
   */
  private async learnAccountEncoding(): Promise<void> {
    if (this.deps.upstreams.stake.accounts.encoding) return;
    await this.validatorDirectory().catch(() => {});
  }

  get contracts(): DataLoader<{ query: ContractQuery; token: string }, Page<Contract>, string> {
    const { upstreams, scope } = this.deps;
    this.contractsLoader ??= perKey(
      (k: { query: ContractQuery; token: string }) =>
        upstreams.explorer.contractsBySymbol(k.query, k.token, scope),
      (k) => JSON.stringify([k.query, k.token]),
    );
    return this.contractsLoader;
  }

  get failedTransactions(): DataLoader<{ args: PageArgs; token: string }, Page<FailedTransaction>, string> {
    const { upstreams, scope } = this.deps;
    this.failedLoader ??= perKey(
      (k: { args: PageArgs; token: string }) => upstreams.explorer.failedTransactions(k.args, k.token, scope),
      (k) => JSON.stringify([k.args, k.token]),
    );
    return this.failedLoader;
  }

  /** Not a loader: a write is sent exactly once and never batched or cached. */
  updateBuybackRound(update: BuybackRoundUpdate, token: string): Promise<BuybackRound> {
    return this.deps.upstreams.stake.updateBuybackRound(update, token, this.deps.scope);
  }
}
