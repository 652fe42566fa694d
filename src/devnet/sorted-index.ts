/**
 * Keys sorted once at start, so that an exact lookup or a prefix range is two binary searches:
 * the devnet answers a search in microseconds and never scans its 100k+ rows per request. Rows
 * added as the chain moves on are inserted in order.
 */
export class SortedIndex {
  private readonly keys: string[];
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

  /** Adds row `id` under `key`, in key order. */
  add(key: string, id: number): void {
    const at = this.lowerBound(key);
    this.keys.splice(at, 0, key);
    const ids = new Int32Array(this.ids.length + 1);
    ids.set(this.ids.subarray(0, at));
    ids[at] = id;
    ids.set(this.ids.subarray(at), at + 1);
    this.ids = ids;
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
