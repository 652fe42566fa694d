import { blockIndex, blockTimeAt, type DevnetData, drawBlock, TX_TYPES } from './data.js';
import { HttpError, type Reply } from './http.js';
import { allowOnly } from './params.js';
import { SortedIndex } from './sorted-index.js';

/**
 * The search service (upstream-api.md 4.1 and 4.2).
 *
 * Suggestions match the lowercased text as a prefix: block heights for digits; transaction hashes,
 * block hashes and addresses for `0x…` text. Exact values come first; at most 10 per category;
 * `counts` are the full match counts.
 *
 * selectedCategory: the category of an exact match if there is one; otherwise the category with the
 * most matches (ties in the order transactions, blocks, addresses); `transactions` when nothing matches.
 * submitTarget: where Enter goes when the text names exactly one thing, that is an exact match, or a
 * single match over all categories; null (keep the panel open) otherwise.
 */

const MAX_SUGGESTIONS = 10;
const MAX_QUERY_BYTES = 256;
const CATEGORIES = ['transactions', 'blocks', 'addresses'] as const;
type Category = (typeof CATEGORIES)[number];

type SubmitTarget =
  | { kind: 'transaction'; hash: string }
  | { kind: 'block'; height: number }
  | { kind: 'address'; address: string };

function searchText(query: URLSearchParams): string {
  allowOnly(query, ['q']);
  const q = query.get('q');
  if (q === null) throw new HttpError(400, 'query parameter q is required');
  if (q.includes('\0')) throw new HttpError(400, 'search text contains a null byte');
  if (Buffer.byteLength(q, 'utf8') > MAX_QUERY_BYTES) {
    throw new HttpError(400, `search text is longer than ${MAX_QUERY_BYTES} bytes`);
  }
  return q;
}

/** The devnet's search index over one chain: the suggestions and exact matches of 4.1 and 4.2. */
class SearchIndex {
  private readonly txIndex: SortedIndex;
  private readonly blockIndex: SortedIndex;
  private readonly addressIndex: SortedIndex;
  /** Blocks and transactions indexed so far: the chain may have moved on since. */
  private indexed: { blocks: number; txs: number };

  constructor(private readonly data: DevnetData) {
    this.txIndex = new SortedIndex(data.txs.hash);
    this.blockIndex = new SortedIndex(data.blocks.hash);
    this.addressIndex = new SortedIndex(data.addresses);
    this.indexed = { blocks: data.blocks.hash.length, txs: data.txs.count };
  }

  /** Indexes the blocks and transactions added since the last search. */
  private sync(): void {
    const { blocks, txs } = this.data;
    this.blockIndex.addAll(blocks.hash.slice(this.indexed.blocks), this.indexed.blocks);
    this.txIndex.addAll(txs.hash.slice(this.indexed.txs, txs.count), this.indexed.txs);
    this.indexed = { blocks: blocks.hash.length, txs: txs.count };
  }

  private get maxHeight(): number {
    return this.data.blocks.count;
  }

  /**
   * The lowest height held in full: below it only a block's own record is answered (by its exact
   * height), drawn again from the seed as an archive would serve it, so that a client finds the
   * head of a chain that has run since its genesis by galloping from height 1.
   */
  private get minHeight(): number {
    return this.data.blocks.first;
  }

  txSuggestion(i: number) {
    const { blocks, txs, addresses } = this.data;
    return {
      hash: txs.hash[i] as string,
      blockHeight: txs.height[i] as number,
      blockActionIndex: txs.actionIndex[i] as number,
      blockTime: blocks.time[blockIndex(blocks, txs.height[i] as number)] as number,
      initiator: addresses[txs.initiator[i] as number] as string,
      type: TX_TYPES[txs.type[i] as number] as string,
    };
  }

  blockSuggestion(height: number) {
    const { blocks, validators } = this.data;
    if (height < this.minHeight) return this.archivedBlock(height);
    const i = blockIndex(blocks, height);
    return {
      height,
      hash: blocks.hash[i] as string,
      blockTime: blocks.time[i] as number,
      transactionCount: blocks.txCount[i] as number,
      // The tip block may still receive actions; every earlier block is final.
      actionCountComplete: height < this.maxHeight,
      proposer: validators[blocks.proposer[i] as number]?.consensus_address as string,
    };
  }

  /** A block below the window (a block is a function of the seed and its height alone: data.ts). */
  private archivedBlock(height: number) {
    const { seed, addresses, contracts, proposers, clock, validators } = this.data;
    const draw = drawBlock(seed, height, addresses.length - contracts.length, proposers);
    return {
      height,
      hash: draw.hash,
      blockTime: blockTimeAt(clock, height),
      transactionCount: draw.txs.length,
      actionCountComplete: true,
      proposer: validators[draw.proposer]?.consensus_address as string,
    };
  }

  /** Heights held whose decimal text starts with `digits`: the count, and the highest `limit` (exact first). */
  heightsByPrefix(digits: string): { count: number; heights: number[] } {
    const { maxHeight, minHeight } = this;
    if (digits.startsWith('0') || digits.length > String(maxHeight).length) return { count: 0, heights: [] };
    const p = Number(digits);
    const ranges: [number, number][] = [];
    for (let scale = 1; p * scale <= maxHeight; scale *= 10) {
      const lo = Math.max(p * scale, minHeight);
      const hi = Math.min((p + 1) * scale - 1, maxHeight);
      if (lo <= hi) ranges.push([lo, hi]);
    }
    const exact = p >= 1 && p <= maxHeight;
    // An exact height below the window is answered too (archivedBlock), and counted.
    const count = ranges.reduce((n, [lo, hi]) => n + hi - lo + 1, exact && p < minHeight ? 1 : 0);
    const heights = exact ? [p] : [];
    for (let r = ranges.length - 1; r >= (exact ? 1 : 0) && heights.length < MAX_SUGGESTIONS; r--) {
      const [lo, hi] = ranges[r] as [number, number];
      for (let h = hi; h >= lo && heights.length < MAX_SUGGESTIONS; h--) heights.push(h);
    }
    return { count, heights };
  }

  suggest(q: string): Reply {
    this.sync();
    const text = q.toLowerCase();
    const transactions: ReturnType<SearchIndex['txSuggestion']>[] = [];
    const blockHits: ReturnType<SearchIndex['blockSuggestion']>[] = [];
    const addresses: { address: string }[] = [];
    const counts: Record<Category, number> = { transactions: 0, blocks: 0, addresses: 0 };
    let exact: { category: Category; target: SubmitTarget } | null = null;

    if (/^\d+$/.test(text)) {
      const { count, heights } = this.heightsByPrefix(text);
      counts.blocks = count;
      for (const h of heights) blockHits.push(this.blockSuggestion(h));
      if (heights[0] === Number(text))
        exact = { category: 'blocks', target: { kind: 'block', height: heights[0] } };
    } else if (/^0x[0-9a-f]*$/.test(text)) {
      const t = this.txIndex.prefix(text, MAX_SUGGESTIONS);
      const b = this.blockIndex.prefix(text, MAX_SUGGESTIONS);
      const a = this.addressIndex.prefix(text, MAX_SUGGESTIONS);
      counts.transactions = t.count;
      counts.blocks = b.count;
      counts.addresses = a.count;
      for (const i of t.ids) transactions.push(this.txSuggestion(i));
      for (const i of b.ids) blockHits.push(this.blockSuggestion(this.minHeight + i));
      for (const i of a.ids) addresses.push({ address: this.data.addresses[i] as string });
      if (transactions[0]?.hash === text)
        exact = { category: 'transactions', target: { kind: 'transaction', hash: text } };
      else if (blockHits[0]?.hash === text) {
        exact = { category: 'blocks', target: { kind: 'block', height: blockHits[0].height } };
      } else if (addresses[0]?.address === text) {
        exact = { category: 'addresses', target: { kind: 'address', address: text } };
      }
    }

    const total = counts.transactions + counts.blocks + counts.addresses;
    let submitTarget: SubmitTarget | null = exact?.target ?? null;
    if (!submitTarget && total === 1) {
      if (transactions[0]) submitTarget = { kind: 'transaction', hash: transactions[0].hash };
      else if (blockHits[0]) submitTarget = { kind: 'block', height: blockHits[0].height };
      else if (addresses[0]) submitTarget = { kind: 'address', address: addresses[0].address };
    }
    const busiest = CATEGORIES.reduce((best, c) => (counts[c] > counts[best] ? c : best), CATEGORIES[0]);
    return {
      body: {
        query: q,
        transactions,
        blocks: blockHits,
        addresses,
        counts,
        selectedCategory: exact?.category ?? busiest,
        submitTarget,
      },
    };
  }

  exactSearch(q: string): Reply {
    this.sync();
    const results: { kind: string; identity: string; matched: string; canonicalUrl: string }[] = [];
    if (/^\d+$/.test(q)) {
      const height = q.length <= 10 ? Number(q) : 0;
      if (height >= 1 && height <= this.maxHeight) {
        results.push({
          kind: 'block',
          identity: String(height),
          matched: q,
          canonicalUrl: `/blocks/${height}`,
        });
      }
    } else if (/^0x[0-9a-fA-F]{40}$/.test(q)) {
      const address = q.toLowerCase();
      if (this.addressIndex.find(address) !== -1) {
        results.push({
          kind: 'address',
          identity: address,
          matched: q,
          canonicalUrl: `/addresses/${address}`,
        });
      }
    } else if (/^0x[0-9a-fA-F]{64}$/.test(q)) {
      const hash = q.toLowerCase();
      const b = this.blockIndex.find(hash);
      if (b !== -1)
        results.push({
          kind: 'block',
          identity: String(this.minHeight + b),
          matched: q,
          canonicalUrl: `/blocks/${this.minHeight + b}`,
        });
      if (this.txIndex.find(hash) !== -1) {
        results.push({
          kind: 'transaction',
          identity: hash,
          matched: q,
          canonicalUrl: `/transactions/${hash}`,
        });
      }
    }
    return { body: { query: q, results } };
  }
}

export function createScanRoutes(data: DevnetData) {
  const index = new SearchIndex(data);
  return {
    '/api/v1/dex/search': {
      GET: ({ query }: { query: URLSearchParams }) => index.suggest(searchText(query)),
    },
    '/api/v1/search': {
      GET: ({ query }: { query: URLSearchParams }) => index.exactSearch(searchText(query)),
    },
  };
}
