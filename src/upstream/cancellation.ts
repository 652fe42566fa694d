import { EventEmitter } from 'node:events';

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
 * An abort signal on an EventEmitter. Node builds every `AbortSignal` as an EventTarget, which
 * costs more than the rest of a small upstream call's bookkeeping; the gateway makes one of these
 * per request and per upstream call instead. undici accepts it as a request's `signal`.
 */
export class Cancellation extends EventEmitter implements AbortLike {
  aborted = false;
  reason: unknown = undefined;

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.emit('abort');
  }

  /** As AbortSignal's: GraphQL executors check it between fields. */
  throwIfAborted(): void {
    if (this.aborted) throw this.reason;
  }

  addEventListener(_type: 'abort', listener: () => void, options?: { once?: boolean }): void {
    if (options?.once) this.once('abort', listener);
    else this.on('abort', listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    this.off('abort', listener);
  }
}
