/**
 * Keys sorted once at start, so that an exact lookup or a prefix range is two binary searches:
 * the devnet answers a search in microseconds and never scans its 100k+ rows per request. Rows
 * added as the chain moves on are inserted in order.
 */
export class SortedIndex {
  private keys: string[];
  private ids: Int32Array;

  constructor(keys: readonly string[]) {
    const order = Array.from(keys.keys()).sort((a, b) => {
      const x = keys[a] as string;
      const y = keys[b] as string;
      return x < y ? -1 : x > y ? 1 : 0;
    });
    this.ids = Int32Array.from(order);
    this.keys = order.map((i) => keys[i] as string);
  }

  private lowerBound(key: string): number {
    let lo = 0;
    let hi = this.keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.keys[mid] as string) < key) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Adds rows `first`, `first` + 1, … under `keys`, merged into key order in one pass. */
  addAll(keys: readonly string[], first: number): void {
    if (keys.length === 0) return;
    const added = keys.map((key, i) => ({ key, id: first + i })).sort((a, b) => (a.key < b.key ? -1 : 1));
    const mergedKeys: string[] = [];
    const mergedIds = new Int32Array(this.keys.length + added.length);
    let i = 0;
    let j = 0;
    while (i < this.keys.length || j < added.length) {
      const next = added[j];
      if (next && (i === this.keys.length || next.key < (this.keys[i] as string))) {
        mergedIds[mergedKeys.length] = next.id;
        mergedKeys.push(next.key);
        j++;
      } else {
        mergedIds[mergedKeys.length] = this.ids[i] as number;
        mergedKeys.push(this.keys[i] as string);
        i++;
      }
    }
    this.keys = mergedKeys;
    this.ids = mergedIds;
  }

  /** Position of the row whose key is exactly `key`, or -1. */
  find(key: string): number {
    const at = this.lowerBound(key);
    return this.keys[at] === key ? (this.ids[at] as number) : -1;
  }

  /**
   * Rows whose key starts with `prefix`: the full count, and the first `limit` row positions in key
   * order. An exact match sorts before every longer key with that prefix, so it always comes first.
   */
  prefix(prefix: string, limit: number): { count: number; ids: number[] } {
    const lo = this.lowerBound(prefix);
    const hi = this.lowerBound(`${prefix}\uffff`);
    const ids: number[] = [];
    for (let i = lo; i < Math.min(hi, lo + limit); i++) ids.push(this.ids[i] as number);
    return { count: hi - lo, ids };
  }
}
