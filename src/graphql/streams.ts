import type { ServerResponse } from 'node:http';
import type { ExecutionResult } from 'graphql';

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
  private releases: (() => void)[] | null = [];
  private watching = false;

  constructor(private readonly res?: ServerResponse) {}

  /** Whether the stream has ended (its releases ran). */
  get ended(): boolean {
    return this.releases === null;
  }

  /** Runs `release` once when the stream ends; at once when it has ended already. */
  onEnd(release: () => void): void {
    if (this.releases === null) {
      release();
      return;
    }
    this.releases.push(release);
    this.watch();
  }

  /** Ends the stream: every release runs, once, each whatever the others do. */
  end(): void {
    const releases = this.releases;
    if (releases === null) return;
    this.releases = null;
    for (const release of releases) {
      try {
        release();
      } catch {
        // One failing release must not keep the others from giving back what they hold.
      }
    }
  }

  /** A reader that stopped reading: its connection is closed, and its stream ends. */
  cut(): void {
    this.res?.destroy();
    this.end();
  }

  /** The transport takes the group member over (it writes the stream itself). */
  adopt(member: LiveMemberLike): void {
    this.member = member;
  }

  /** The stream ends with its socket, which may have closed already. */
  private watch(): void {
    const res = this.res;
    if (this.watching || !res) return;
    this.watching = true;
    if (res.closed || res.destroyed) this.end();
    else res.once('close', () => this.end());
  }
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

/** What a transport needs of a group member it takes over. */
export interface LiveMemberLike {
  /** Pushes every event from now on (and any waiting) to `sink`. */
  attach(sink: LiveSink): void;
}
