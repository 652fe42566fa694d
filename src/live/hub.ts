import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import { UpstreamError } from '../errors.js';
import { errorSummary } from '../ops/logger.js';
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
  /** LIVE_CATCH_UP: the latest events with an id (blocks) each source keeps for resuming subscribers. */
  remember: number;
}

/** What a subscription stream gives the hub: its end (live/index.ts StreamOptions). */
export interface StreamEnd {
  /** Closes the subscriber's connection (its client stopped reading). */
  cut(): void;
  /** Runs `release` once the stream ends, however it ends (at once if it has). */
  onEnd(release: () => void): void;
}

export interface SubscribeOptions<T> extends StreamEnd {
  /** The event as this subscriber's field answers it, or undefined when it is not for it. */
  accept(event: LiveEvent): T | undefined;
}

interface Subscriber {
  offer(event: LiveEvent): void;
  /** The source failed for good (its credential refused): the stream ends with `error`. */
  fail(error: Error): void;
  end(): void;
}

interface Feed {
  poller: SourcePoller<unknown>;
  subscribers: Set<Subscriber>;
  stop: () => void;
  /**
   * The latest events with an id (blocks) this process delivered while it listened, oldest
   * first, LIVE_CATCH_UP at most: a resuming subscriber's replay, read from memory. Heard through
   * Redis as well, so that a client moving to this instance finds what it missed on another.
   */
  recent: LiveEvent[];
  /** What this process delivered of the source (blocks: the last height). */
  delivered: DeliveredEvents;
}

/**
 * A source's events in order, as heard from the bus: a block past the next height, or a Redis
 * reconnect (pub/sub keeps nothing for an absent listener), first reads what this process missed
 * (`Source.between`, at most LIVE_CATCH_UP blocks), and events heard meanwhile wait behind it.
 * Without a gap, an event is delivered at once.
 */
class Gaps {
  private filling = false;
  private readonly waiting: LiveEvent[] = [];

  constructor(
    private readonly source: Source<unknown>,
    private readonly delivered: DeliveredEvents,
    private readonly deliver: (event: LiveEvent) => void,
    private readonly logger: Logger,
  ) {}

  event(event: LiveEvent): void {
    if (this.filling) {
      this.waiting.push(event);
      return;
    }
    const last = this.delivered.height;
    if (event.kind === 'block' && last > 0 && event.block.height > last + 1 && this.source.between) {
      this.waiting.push(event);
      void this.fill(last, event.block.height);
      return;
    }
    this.deliver(event);
  }

  /** The bus heard nothing for a while: read on from the last block delivered, until one is missing. */
  resumed(): void {
    const last = this.delivered.height;
    if (!this.filling && last > 0 && this.source.between) void this.fill(last, null);
  }

  private async fill(after: number, before: number | null): Promise<void> {
    this.filling = true;
    try {
      for (const event of (await this.source.between?.(after, before, {})) ?? []) this.deliver(event);
    } catch (error) {
      this.logger.warn({ err: errorSummary(error as Error), source: this.source.key }, 'live gap not read');
    } finally {
      this.filling = false;
    }
    // What waited goes through again, in order: the event that found the gap as it is (a gap
    // this read could not fill is not read again for it), a gap beyond it is read too.
    for (const event of this.waiting.splice(0)) {
      if (before !== null && event.kind === 'block' && event.block.height <= before) this.deliver(event);
      else this.event(event);
    }
  }
}

/** What every subscriber of a source whose poll was refused is told. */
const refusedError = () =>
  new UpstreamError('explorer', 'UNAUTHENTICATED', 'the live source’s token was refused', undefined, 401, {
    http: { status: 401 },
  });

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

  /** The last block height of `source` (by key) this process delivered while it listens; 0: none. */
  deliveredHeight(source: string): number {
    return this.feeds.get(source)?.delivered.height ?? 0;
  }

  /**
   * The latest events of `source` (by key) this process delivered while it listened, oldest first;
   * empty when it does not listen (what it heard before may have a gap since).
   */
  recent(source: string): readonly LiveEvent[] {
    return this.feeds.get(source)?.recent ?? [];
  }

  /**
   * A stream of `source`'s events as `accept` answers them; the source is polled while it has one.
   * The subscriber leaves when its stream ends (`onEnd`), however it ends.
   */
  subscribe<T>(source: Source<unknown>, options: SubscribeOptions<T>): AsyncIterableIterator<T> {
    const queue: T[] = [];
    let waiting: { resolve(result: IteratorResult<T>): void; reject(error: Error): void } | null = null;
    let done = this.closed;
    let failure: Error | null = null;
    const finish = () => {
      if (done) return;
      done = true;
      this.leave(source.key, subscriber);
      waiting?.resolve({ value: undefined, done: true });
      waiting = null;
    };
    const subscriber: Subscriber = {
      offer: (event) => {
        const value = options.accept(event);
        if (value === undefined || done) return;
        if (typeof value === 'object' && value !== null) this.stamp(value, event.polledAt, eventId(event));
        if (waiting) {
          waiting.resolve({ value, done: false });
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
      fail: (error) => {
        if (done) return;
        failure = error;
        const pending = waiting;
        waiting = null;
        if (pending) {
          failure = null;
          pending.reject(error);
        }
        finish();
      },
      end: finish,
    };
    if (!done) {
      this.join(source, subscriber);
      options.onEnd(finish);
    }
    const iterator: AsyncIterableIterator<T> = {
      next: () => {
        const value = queue.shift();
        if (value !== undefined) return Promise.resolve({ value, done: false });
        if (failure) {
          const error = failure;
          failure = null;
          return Promise.reject(error);
        }
        if (done) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve, reject) => {
          waiting = { resolve, reject };
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
      const recent: LiveEvent[] = [];
      // Every event reaches this process's subscribers once (blocks in height order), even when
      // it arrives twice: a repeat goes no further (delivered.ts).
      const delivered = new DeliveredEvents();
      const deliver = (event: LiveEvent) => {
        if (!delivered.fresh(event)) return;
        if (event.kind === 'block') {
          this.stamp(event.block, event.polledAt, eventId(event));
          recent.push(event);
          if (recent.length > this.options.remember) recent.shift();
        }
        for (const each of subscribers) each.offer(event);
      };
      const heard = new Gaps(source, delivered, deliver, this.options.logger);
      const stop = this.options.bus.listen(
        source.key,
        (event) => {
          if (event.kind !== 'refused') heard.event(event);
          else void this.refused(source, subscribers);
        },
        () => heard.resumed(),
      );
      const poller = new SourcePoller(source, this.options);
      feed = { poller, subscribers, stop, recent, delivered };
      this.feeds.set(source.key, feed);
      feed.poller.start();
    }
    feed.subscribers.add(subscriber);
  }

  /**
   * A source's credential was refused, as the bus says: its streams end, once one read with the
   * credential confirms it (a `refused` heard from Redis may be old, or not the deployment's own).
   */
  private async refused(source: Source<unknown>, subscribers: Set<Subscriber>): Promise<void> {
    const confirmed = source.refusedNow ? await source.refusedNow({}).catch(() => false) : true;
    if (!confirmed) {
      this.options.logger.warn(
        { source: 'failed' },
        'live source refusal not confirmed by the explorer: streams kept',
      );
      return;
    }
    for (const each of [...subscribers]) each.fail(refusedError());
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
