import type { AbortLike } from '../upstream/cancellation.js';
import type { LiveEvent } from './events.js';
import type { LiveHub } from './hub.js';
import type { Source } from './sources.js';

/**
 * The chain's head, one place (contract.md §9, "The chain in answers"): the height the block poller
 * last saw, heard like any live event (with Redis, from the deployment's one poller over the bus),
 * so that answers are stamped with it, public latest-state answers kept until it moves, and a
 * Min-Chain-Height request waits for it. While something needs the head (a held answer, a waiting
 * request: `hold`), the block source is listened to as a subscriber would, which keeps it polled;
 * otherwise the head is known only while subscribers keep it polled. Unknown (null) before the
 * first poll, and when nothing was heard for a while (the upstream down, the poller undecided).
 */

/** How many recent heights measure the block interval. */
const MEASURED = 8;

interface Waiter {
  min: number;
  deadline: number;
  resolve(height: number | null): void;
}

export class ChainHead {
  private known = 0;
  private heardAt = 0;
  /** When each of the latest new heights was heard: [height, ms], oldest first. */
  private readonly arrivals: [number, number][] = [];
  private readonly listeners = new Set<(height: number) => void>();
  private readonly waiters = new Set<Waiter>();
  /** One timer for every waiter: the earliest deadline. */
  private waitTimer: NodeJS.Timeout | undefined;
  private neededUntil = 0;
  private holdTimer: NodeJS.Timeout | undefined;
  private listening: AsyncIterableIterator<never> | null = null;
  private closed = false;

  /** `staleMs`: how long a head heard stays known with nothing heard since. */
  constructor(
    private readonly hub: LiveHub,
    private readonly source: Source<unknown>,
    private readonly staleMs: number,
  ) {}

  /** The head known now, or null (nothing heard yet, or not for `staleMs`). */
  height(): number | null {
    return this.known > 0 && Date.now() - this.heardAt <= this.staleMs ? this.known : null;
  }

  /** The block interval as heard (ms per block over the latest heights), or null before two blocks. */
  blockIntervalMs(): number | null {
    const first = this.arrivals[0];
    const last = this.arrivals.at(-1);
    if (!first || !last || last[0] === first[0]) return null;
    return (last[1] - first[1]) / (last[0] - first[0]);
  }

  /** How long until the next block is expected (0 when overdue), or null when unknown. */
  nextBlockInMs(): number | null {
    const interval = this.blockIntervalMs();
    const last = this.arrivals.at(-1);
    if (interval === null || !last || this.height() === null) return null;
    return Math.max(0, last[1] + interval - Date.now());
  }

  /** Hears each new height; returns the way to stop hearing. */
  onHeight(listener: (height: number) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Keeps the block source polled for at least `forMs` from now. Called on every latest answer:
   * it moves a deadline, and one timer (armed once) checks it, not a timer reset per call.
   */
  hold(forMs: number): void {
    if (this.closed) return;
    this.neededUntil = Math.max(this.neededUntil, Date.now() + forMs);
    if (!this.listening) this.listen();
    if (this.holdTimer === undefined) this.armHold();
  }

  private armHold(): void {
    this.holdTimer = setTimeout(
      () => {
        this.holdTimer = undefined;
        this.letGo();
      },
      Math.max(0, this.neededUntil - Date.now()),
    );
    this.holdTimer.unref();
  }

  /**
   * The head once it is at least `min`: at once when it is, else when it gets there; null when
   * `timeoutMs` passes first, `signal` aborts, or the head closes. The source is held meanwhile.
   */
  waitFor(min: number, timeoutMs: number, signal?: AbortLike): Promise<number | null> {
    const now = this.height();
    if (now !== null && now >= min) return Promise.resolve(now);
    if (this.closed || signal?.aborted || timeoutMs <= 0) return Promise.resolve(null);
    this.hold(timeoutMs);
    return new Promise((resolve) => {
      const abort = () => waiter.resolve(null);
      const waiter: Waiter = {
        min,
        deadline: Date.now() + timeoutMs,
        resolve: (height) => {
          this.waiters.delete(waiter);
          signal?.removeEventListener('abort', abort);
          resolve(height);
        },
      };
      this.waiters.add(waiter);
      signal?.addEventListener('abort', abort);
      this.scheduleWaiters();
    });
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.holdTimer);
    this.holdTimer = undefined;
    clearTimeout(this.waitTimer);
    for (const waiter of [...this.waiters]) waiter.resolve(null);
    this.stopListening();
  }

  /** What the block source's events say of the head: a block's height, or a poll's head. */
  private heard(event: LiveEvent): void {
    const height = event.kind === 'block' ? event.block.height : event.kind === 'head' ? event.height : 0;
    if (height <= 0) return;
    this.heardAt = Date.now();
    if (height <= this.known) return;
    // The first height heard measures nothing: it came when listening began, not when it was made.
    if (this.known > 0) {
      this.arrivals.push([height, this.heardAt]);
      if (this.arrivals.length > MEASURED) this.arrivals.shift();
    }
    this.known = height;
    for (const waiter of [...this.waiters]) if (waiter.min <= height) waiter.resolve(height);
    for (const listener of this.listeners) listener(height);
  }

  private listen(): void {
    // As a subscriber that takes nothing: `accept` hears every event, and nothing is queued.
    this.listening = this.hub.subscribe<never>(this.source, {
      cut: () => {},
      onEnd: () => {},
      accept: (event) => {
        this.heard(event);
        return undefined;
      },
    });
  }

  /** The hold's deadline came: listened to on if it moved meanwhile, else no more. */
  private letGo(): void {
    if (Date.now() < this.neededUntil) this.armHold();
    else this.stopListening();
  }

  private stopListening(): void {
    const listening = this.listening;
    this.listening = null;
    // Listened to no more, the head is no longer heard: unknown from now on (not `staleMs` later),
    // and the interval measured again from the next two blocks heard.
    this.heardAt = 0;
    this.known = 0;
    this.arrivals.length = 0;
    void listening?.return?.();
  }

  private scheduleWaiters(): void {
    clearTimeout(this.waitTimer);
    if (this.waiters.size === 0) return;
    const next = Math.min(...[...this.waiters].map((w) => w.deadline));
    this.waitTimer = setTimeout(
      () => {
        const now = Date.now();
        for (const waiter of [...this.waiters]) if (waiter.deadline <= now) waiter.resolve(null);
        this.scheduleWaiters();
      },
      Math.max(0, next - Date.now()),
    );
    this.waitTimer.unref();
  }
}
