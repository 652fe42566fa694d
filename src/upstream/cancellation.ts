/**
 * What an upstream call needs of an abort signal. A WHATWG `AbortSignal` (Yoga's request signal)
 * is one; so is a {@link Cancellation}.
 */
export interface AbortLike {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/**
 * An abort signal as a plain list of listeners. Node builds every `AbortSignal` as an EventTarget,
 * and an EventEmitter costs its own bookkeeping (and warns past ten listeners, which a request
 * reading many pages reaches), more than the rest of a small upstream call's; the gateway makes one
 * of these per request and per upstream call instead. undici accepts it as a request's `signal`.
 * It aborts once: every listener runs once, even after one throws, and a listener added
 * afterwards never runs (as with AbortSignal).
 */
export class Cancellation implements AbortLike {
  aborted = false;
  reason: unknown = undefined;
  private listeners: (() => void)[] | null = null;

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const listeners = this.listeners;
    this.listeners = null;
    if (!listeners) return;
    // Every listener runs, whichever throws (as with AbortSignal); the first error is thrown after.
    let failed: { error: unknown } | null = null;
    for (const listener of listeners) {
      try {
        listener();
      } catch (error) {
        failed ??= { error };
      }
    }
    if (failed) throw failed.error;
  }

  /** As AbortSignal's: GraphQL executors check it between fields. */
  throwIfAborted(): void {
    if (this.aborted) throw this.reason;
  }

  addEventListener(_type: 'abort', listener: () => void): void {
    if (this.aborted) return;
    if (this.listeners) this.listeners.push(listener);
    else this.listeners = [listener];
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const at = this.listeners?.indexOf(listener) ?? -1;
    if (at >= 0) this.listeners?.splice(at, 1);
  }
}
