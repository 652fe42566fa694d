import { EventEmitter } from 'node:events';
import { DeliveredEvents } from './delivered.js';
import type { LiveEvent } from './events.js';
import { type PollerOptions, type PollOutcome, SourcePoller } from './poller.js';
import type { Source } from './sources.js';

/**
 * This process's live updates: the subscribers of each source, and its poller while it has any.
 * Each source is listened to once (bus.ts) and its events handed to every subscriber's own queue,
 * which a subscriber's stream drains as its client reads. A queue that reaches LIVE_BACKLOG
 * events (a client that stopped reading while its socket's buffers filled) is cut off: its stream
 * ends and its connection is closed, so a stalled reader never holds more than that.
 */

/** When a value's poll was answered, and its event's id (blocks: the height) if it has one. */
export interface Stamp {
  polledAt: number;
  id: string | undefined;
}

/** An event's id, for the events a client can resume after (SSE's Last-Event-ID): a block's height. */
const eventId = (event: LiveEvent): string | undefined =>
  event.kind === 'block' ? String(event.block.height) : undefined;

export interface HubOptions extends PollerOptions {
  /** LIVE_BACKLOG: events waiting for one subscriber before it is cut off. */
  backlog: number;
}

export interface SubscribeOptions<T> {
  /** The event as this subscriber's field answers it, or undefined when it is not for it. */
  accept(event: LiveEvent): T | undefined;
  /** Closes the subscriber's connection (its client stopped reading). */
  cut(): void;
}

interface Subscriber {
  offer(event: LiveEvent): void;
  end(): void;
}

interface Feed {
  poller: SourcePoller<unknown>;
  subscribers: Set<Subscriber>;
  stop: () => void;
}

export class LiveHub {
  private readonly feeds = new Map<string, Feed>();
  private readonly polls = new EventEmitter();
  /** The stamp of each value handed out, while the value lives: delivery is timed where it is written. */
  private readonly stamps = new WeakMap<object, Stamp>();
  private closed = false;

  constructor(private readonly options: HubOptions) {
    this.polls.setMaxListeners(0);
    this.options = { ...options, polled: (label, result) => this.polls.emit(label, result) };
  }

  /**
   * What is known of a value this hub handed out: when the poll that found it was answered (ms
   * since the epoch), and the event's id where events have an order a client can resume from.
   */
  stampOf(value: unknown): Stamp | undefined {
    return typeof value === 'object' && value !== null ? this.stamps.get(value) : undefined;
  }

  /** Records a value's stamp (a value handed out by a replay, too). */
  stamp(value: object, polledAt: number, id: string | undefined): void {
    this.stamps.set(value, { polledAt, id });
  }

  /** Resolves when the next poll of a source (by label: blocks, validators, failed) ends, with how it went. */
  afterPoll(label: string): Promise<PollOutcome> {
    return new Promise((resolve) => this.polls.once(label, resolve));
  }

  /** The sources polled (or listened to) now, by key. */
  sources(): string[] {
    return [...this.feeds.keys()];
  }

  /** Who polls each source of this process (for /readyz). */
  holders(): Promise<Record<string, string>> {
    return this.options.bus.holders(this.sources());
  }

  /** A stream of `source`'s events as `accept` answers them; the source is polled while it has one. */
  subscribe<T>(source: Source<unknown>, options: SubscribeOptions<T>): AsyncIterableIterator<T> {
    const queue: T[] = [];
    let waiting: ((result: IteratorResult<T>) => void) | null = null;
    let done = this.closed;
    const finish = () => {
      if (done) return;
      done = true;
      this.leave(source.key, subscriber);
      waiting?.({ value: undefined, done: true });
      waiting = null;
    };
    const subscriber: Subscriber = {
      offer: (event) => {
        const value = options.accept(event);
        if (value === undefined || done) return;
        if (typeof value === 'object' && value !== null) this.stamp(value, event.polledAt, eventId(event));
        if (waiting) {
          waiting({ value, done: false });
          waiting = null;
        } else if (queue.length >= this.options.backlog) {
          this.options.metrics.observeCut();
          queue.length = 0;
          finish();
          options.cut();
        } else {
          queue.push(value);
        }
      },
      end: finish,
    };
    if (!done) this.join(source, subscriber);
    const iterator: AsyncIterableIterator<T> = {
      next: () => {
        const value = queue.shift();
        if (value !== undefined) return Promise.resolve({ value, done: false });
        if (done) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve) => {
          waiting = resolve;
        });
      },
      return: () => {
        finish();
        return Promise.resolve({ value: undefined, done: true });
      },
      [Symbol.asyncIterator]: () => iterator,
    };
    return iterator;
  }

  private join(source: Source<unknown>, subscriber: Subscriber): void {
    let feed = this.feeds.get(source.key);
    if (!feed) {
      const subscribers = new Set<Subscriber>();
      // Every event reaches this process's subscribers once (blocks in height order), even when
      // it arrives twice: a repeat goes no further (delivered.ts).
      const delivered = new DeliveredEvents();
      const stop = this.options.bus.listen(source.key, (event) => {
        if (!delivered.fresh(event)) return;
        for (const each of subscribers) each.offer(event);
      });
      feed = { poller: new SourcePoller(source, this.options), subscribers, stop };
      this.feeds.set(source.key, feed);
      feed.poller.start();
    }
    feed.subscribers.add(subscriber);
  }

  private leave(key: string, subscriber: Subscriber): void {
    const feed = this.feeds.get(key);
    if (!feed?.subscribers.delete(subscriber) || feed.subscribers.size > 0) return;
    this.feeds.delete(key);
    feed.stop();
    void feed.poller.stop();
  }

  /** Ends every stream (SIGTERM: each completes) and stops every poller. */
  async close(): Promise<void> {
    this.closed = true;
    const feeds = [...this.feeds.values()];
    for (const feed of feeds) for (const subscriber of [...feed.subscribers]) subscriber.end();
    await Promise.all(feeds.map((feed) => feed.poller.stop()));
    await this.options.bus.close();
  }
}
