import { createHmac } from 'node:crypto';
import type { Logger } from 'pino';
import { addressKey, validatorAddressKeys } from '../lib/address.js';
import type { GatewayMetrics } from '../ops/metrics.js';
import type { KeyedRedis } from '../scale/redis.js';
import type { CallScope } from '../upstream/http.js';
import type { Upstreams } from '../upstream/index.js';
import type {
  Block,
  FailedTransaction,
  Validator,
  ValidatorList,
  ValidatorStatistics,
} from '../upstream/models.js';
import { LocalBus, RedisBus } from './bus.js';
import { LiveHub, type Stamp } from './hub.js';
import {
  blockAt,
  blockSource,
  explorerAccepts,
  failedSource,
  type Source,
  validatorSource,
} from './sources.js';

/**
 * Live updates (contract.md §6): the upstreams push nothing, so the gateway polls each source once
 * per deployment and pushes what changed to every subscriber. The subscription fields of the graph
 * (schema/live.ts) open their streams here.
 */

export interface LiveSettings {
  /** LIVE_POLL_MS: from the end of one poll to the start of the next. */
  pollMs: number;
  /** LIVE_LEASE_MS: how long a poller's lease in Redis lives unless renewed. */
  leaseMs: number;
  /** LIVE_BACKLOG: events waiting for one subscriber before it is cut off. */
  backlog: number;
  /** LIVE_CATCH_UP: the most new blocks one poll delivers (the rest on the next). */
  catchUp: number;
}

export interface LiveDeps {
  upstreams: Upstreams;
  metrics: GatewayMetrics;
  logger: Logger;
  /** With REDIS_URL: one poller per source across the deployment, events through Redis. */
  redis: KeyedRedis | null;
  /** The deployment's secret (CURSOR_SECRET): keys the HMAC that names a caller's token in Redis. */
  secret: string;
  /** Told of each validator list a poll read: the list queries share is refreshed with it. */
  validatorsRead(list: ValidatorList): void;
}

/** What a subscription stream needs of its request. */
export interface StreamOptions {
  /** Closes the subscriber's connection (it stopped reading). */
  cut(): void;
}

/**
 * The credential of a token as Redis keys and channels know it: an HMAC-SHA256 keyed by the
 * deployment's secret (contract.md §7), labelled so that no other use of the secret signs the same
 * text. Never the token, nor a bare hash of it that anyone holding the token (or guessing it) could
 * compute and look for in Redis.
 */
const credential = (secret: string, token: string) =>
  createHmac('sha256', secret).update(`live-token\u0000${token}`).digest('base64url').slice(0, 22);

export class LiveUpdates {
  readonly hub: LiveHub;
  private readonly blocks: Source<unknown>;
  private readonly validators: Source<unknown>;

  constructor(
    private readonly settings: LiveSettings,
    private readonly deps: LiveDeps,
  ) {
    const bus = deps.redis
      ? new RedisBus(deps.redis, { leaseMs: settings.leaseMs })
      : new LocalBus();
    this.hub = new LiveHub({
      bus,
      intervalMs: settings.pollMs,
      backlog: settings.backlog,
      metrics: deps.metrics,
      logger: deps.logger,
    });
    this.blocks = blockSource(deps.upstreams, settings.catchUp) as Source<unknown>;
    this.validators = validatorSource(deps.upstreams, deps.validatorsRead) as Source<unknown>;
  }

  /**
   * Every new block; after `resumeAfter` (the height a reconnecting client last received, SSE's
   * Last-Event-ID), first the blocks it missed, at most LIVE_CATCH_UP of them, read from the search
   * service, then the live ones above them: a stream that moved to another instance misses nothing.
   */
  blockAdded(stream: StreamOptions, resumeAfter: number | null = null): AsyncIterableIterator<Block> {
    const live = this.hub.subscribe(this.blocks, {
      ...stream,
      accept: (event) =>
        event.kind === 'block' && (resumeAfter === null || event.block.height > resumeAfter)
          ? event.block
          : undefined,
    });
    return resumeAfter === null ? live : this.resumed(live, resumeAfter);
  }

  /**
   * The blocks after `after` read from the search service, then `live`'s above them. A plain
   * iterator, not an async generator: ending it ends `live` at once, even while it waits for a block.
   */
  private resumed(live: AsyncIterableIterator<Block>, after: number): AsyncIterableIterator<Block> {
    const missed: Block[] = [];
    let last = after;
    let stopped = false;
    const replay = async () => {
      for (let i = 0; i < this.settings.catchUp && !stopped; i++) {
        const block = await blockAt(this.deps.upstreams, last + 1, {});
        if (!block) return;
        this.hub.stamp(block, Date.now(), String(block.height));
        missed.push(block);
        last = block.height;
      }
    };
    // A replay the search service fails goes no further: the live blocks follow what was read.
    let replayed: Promise<void> | null = null;
    const iterator: AsyncIterableIterator<Block> = {
      next: async () => {
        replayed ??= replay().catch(() => undefined);
        await replayed;
        const block = missed.shift();
        if (block) return { value: block, done: false };
        for (;;) {
          const next = await live.next();
          if (next.done || next.value.height > last) return next;
        }
      },
      return: async () => {
        // A replay still reading stops at its next block.
        stopped = true;
        missed.length = 0;
        return (await live.return?.()) ?? { value: undefined, done: true };
      },
      [Symbol.asyncIterator]: () => iterator,
    };
    return iterator;
  }

  /** Every validator whose data changed, or only the one known by `address` (any of its addresses, either encoding). */
  validatorUpdated(stream: StreamOptions, address: string | null): AsyncIterableIterator<Validator> {
    const key = address === null ? null : addressKey(address);
    const matches = (v: Validator) => key === null || validatorAddressKeys(v).some(([, k]) => k === key);
    return this.hub.subscribe(this.validators, {
      ...stream,
      accept: (event) =>
        event.kind === 'validator' && matches(event.validator) ? event.validator : undefined,
    });
  }

  validatorStatisticsUpdated(stream: StreamOptions): AsyncIterableIterator<ValidatorStatistics> {
    return this.hub.subscribe(this.validators, {
      ...stream,
      accept: (event) => (event.kind === 'statistics' ? event.statistics : undefined),
    });
  }

  /**
   * New failed transactions as read with `token`, delivered only to subscribers of the same token.
   * The token is first checked by one explorer read with it: false when the explorer refuses it.
   */
  async failedTransactionAdded(
    stream: StreamOptions,
    token: string,
    scope: CallScope,
  ): Promise<AsyncIterableIterator<FailedTransaction> | false> {
    if (!(await explorerAccepts(this.deps.upstreams, token, scope))) return false;
    const source = failedSource(this.deps.upstreams, `failed:${credential(this.deps.secret, token)}`, token);
    return this.hub.subscribe(source as Source<unknown>, {
      ...stream,
      accept: (event) => (event.kind === 'failedTransaction' ? event.transaction : undefined),
    });
  }

  /** When the poll that found a value a subscription stream handed out was answered, and its event id. */
  stampOf(value: unknown): Stamp | undefined {
    return this.hub.stampOf(value);
  }

  close(): Promise<void> {
    return this.hub.close();
  }
}
