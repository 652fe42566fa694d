import type { ServerResponse } from 'node:http';
import type { ExecutionResult } from 'graphql';
import type { AbortLike } from '../upstream/cancellation.js';

/**
 * A subscription stream's one end (contract.md §8, "A stream ends in one place"). Whatever holds
 * something for a stream (its place among the subscription caps, its member of a live group, its
 * source's subscriber, the transport's writer and ping) registers its release here, and however the
 * stream ends (its client gone before, during or after subscribe, a refusal, a write error, a cut
 * slow reader, completion, shutdown), `end()` runs every release once. A release registered after
 * the end runs at once: a stream whose client left while it subscribed leaves nothing behind.
 *
 * The socket is watched only once something is registered, so that a query's request (which has a
 * handle too, in its context) pays nothing for it.
 */
export class StreamHandle {
  /** The group member a transport that writes the stream itself takes over (http/sse.ts). */
  member: LiveMemberLike | null = null;
  /**
   * What runs at the end. Grown by concat, which allocates what it holds, not by push (room for
   * 17) or a spread (as much): a process holds one of these per open stream.
   */
  private releases: readonly Release[] | null = [];
  private watching = false;

  /**
   * `res`: the socket the stream ends with. `cancel`: the subscribe-time work of the request (its
   * upstream calls), cancelled if the socket closes before `started()`; the handle then watches the
   * socket from the start.
   */
  constructor(
    private readonly res?: ServerResponse,
    private cancel?: AbortLike & { abort(reason: unknown): void },
  ) {
    if (cancel) this.watch();
  }

  /** Whether the stream has ended (its releases ran). */
  get ended(): boolean {
    return this.releases === null;
  }

  /** Runs `release` once when the stream ends; at once when it has ended already. */
  onEnd(release: Release): void {
    if (this.releases === null) {
      run(release);
      return;
    }
    this.releases = this.releases.concat(release);
    this.watch();
  }

  /** Ends the stream: its member leaves, and every release runs, once, each whatever the others do. */
  end(): void {
    const releases = this.releases;
    if (releases === null) return;
    this.releases = null;
    this.member?.leave();
    for (const release of releases) run(release);
  }

  /** A reader that stopped reading: its connection is closed, and its stream ends. */
  cut(): void {
    this.res?.destroy();
    this.end();
  }

  /** The group member this stream is: it leaves when the stream ends (at once if it has). */
  adopt(member: LiveMemberLike): void {
    this.member = member;
    if (this.ended) member.leave();
    else this.watch();
  }

  /** The stream has started: nothing of its request's subscribe-time work is left to cancel. */
  started(): void {
    this.cancel = undefined;
  }

  /** The socket closed: the request's work is cancelled, and the stream ends. */
  closed(): void {
    this.cancel?.abort(new Error('client disconnected'));
    this.end();
  }

  /** The stream ends with its socket, which may have closed already. */
  private watch(): void {
    const res = this.res as Watched | undefined;
    if (this.watching || !res) return;
    this.watching = true;
    if (res.closed || res.destroyed) {
      this.closed();
      return;
    }
    // One listener function for every stream, the handle on the response: no closure per stream.
    res[HANDLE] = this;
    res.on('close', closeHandle);
  }
}

/** What a stream's end runs: a function, or an object that gives back what it holds. */
export type Release = (() => void) | { release(): void };

const run = (release: Release) => {
  try {
    if (typeof release === 'function') release();
    else release.release();
  } catch {
    // One failing release must not keep the others from giving back what they hold.
  }
};

const HANDLE = Symbol('stream handle');
type Watched = ServerResponse & { [HANDLE]?: StreamHandle };
function closeHandle(this: Watched): void {
  this[HANDLE]?.closed();
}

/** One event as every member of a group gets it. */
export interface Delivery {
  result: ExecutionResult;
  /** When the poll that found the event was answered (ms since the epoch). */
  polledAt: number;
  /** The event's id a client can resume after (SSE's `id:`), where events have one. */
  id: string | undefined;
}

/** A transport that writes a member's events itself, at its socket's pace (http/sse.ts). */
export interface LiveSink {
  /** One event, in order; the sink keeps at most LIVE_BACKLOG of them waiting, then cuts. */
  deliver(delivery: Delivery): void;
  /** The group's source ended: the stream completes. */
  complete(): void;
}

/** What a stream's handle and its transport need of its group member. */
export interface LiveMemberLike {
  /** Pushes every event from now on (and any waiting) to `sink`. */
  attach(sink: LiveSink): void;
  /** Leaves its group (the stream ended). */
  leave(): void;
}

/** A stream with no age: it lasts until something else ends it. */
export const NEVER = Number.POSITIVE_INFINITY;

/** A stream's age is drawn at random in [AGE_FLOOR × MAX_STREAM_AGE_MS, MAX_STREAM_AGE_MS]. */
const AGE_FLOOR = 0.8;

/** Ages are checked at least this many times over MAX_STREAM_AGE_MS: a stream ends at most a twentieth late. */
const CHECKS_PER_AGE = 20;

/**
 * MAX_STREAM_AGE_MS (issue 49): how old a stream may grow before it is ended in the way its client
 * comes back by itself (a `retry:` and no end over SSE, 1001 over WebSocket), through the load
 * balancer, to whichever pod it picks. After a rollout, the reconnections of each drained pod pile
 * onto the pods still up; ages spread the streams over every pod again. Each stream's age is drawn
 * in [0.8 × max, max], so that streams opened together (a drain's reconnections) do not end
 * together. The one place a stream's age is decided: the transports ask it when a stream opens,
 * and check on the keep-alive tick they already run (`beat`), with no timer per stream. 0: off.
 */
export class StreamAges {
  constructor(readonly maxMs: number) {}

  /** The process's clock for ages: monotonic (a wall clock set back would age nothing), in whole ms. */
  now(): number {
    return Math.floor(performance.now());
  }

  /** When a stream that opens now reaches its age (on `now()`'s clock); NEVER when ages are off. */
  deadline(): number {
    if (this.maxMs <= 0) return NEVER;
    const min = Math.ceil(this.maxMs * AGE_FLOOR);
    return this.now() + min + Math.floor(Math.random() * (this.maxMs - min + 1));
  }

  /** The beat of a keep-alive timer of `keepAliveMs` that checks ages too (`aged`: whether its streams have one). */
  beat(keepAliveMs: number, aged = true): Beat {
    const checkMs =
      aged && this.maxMs > 0 ? Math.max(10, Math.ceil(this.maxMs / CHECKS_PER_AGE)) : keepAliveMs;
    return new Beat(Math.min(keepAliveMs, checkMs), keepAliveMs);
  }
}

/**
 * One timer's beat for a set of streams: their ages checked on every beat, their keep-alive on
 * every beat that falls `keepAliveMs` after the last one. With ages of 30 minutes the beat is the
 * keep-alive's own; only ages shorter than twenty keep-alives make it beat faster.
 */
export class Beat {
  private readonly keepAliveEvery: number;
  private count = 0;

  constructor(
    readonly everyMs: number,
    keepAliveMs: number,
  ) {
    this.keepAliveEvery = Math.max(1, Math.round(keepAliveMs / everyMs));
  }

  /** The next beat: whether it is also the keep-alive's. */
  next(): boolean {
    this.count = (this.count + 1) % this.keepAliveEvery;
    return this.count === 0;
  }
}
