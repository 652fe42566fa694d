import { createHmac } from 'node:crypto';
import type { Logger } from 'pino';
import { GatewayError, UpstreamError } from '../errors.js';
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
import { ChainHead } from './head.js';
import { LiveHub, type Stamp, type StreamEnd } from './hub.js';
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

/** What a subscription stream needs of its request: its one end (live/streams.ts). */
export type StreamOptions = StreamEnd;

/** What a subscriber resuming after a block missed (see `missedBlocks`). */
export interface MissedBlocks {
  /** How many blocks must be read from the search service: charged before any is. */
  reads: number;
  /** The blocks after the resume point, oldest first; `stopped` ends the reads early. */
  read(stopped: () => boolean): Promise<Block[]>;
}

/**
 * The credential of a token as Redis keys and channels know it: an HMAC-SHA256 keyed by the
 * deployment's secret (contract.md §7), labelled so that no other use of the secret signs the same
 * text. Never the token, nor a bare hash of it that anyone holding the token (or guessing it) could
 * compute and look for in Redis.
 */
const credential = (secret: string, token: string) =>
  createHmac('sha256', secret).update(`live-token\u0000${token}`).digest('base64url').slice(0, 22);

/** A subscriber's token the explorer refused: UNAUTHENTICATED, HTTP 401, no stream. */
const tokenRefused = () =>
  new UpstreamError('explorer', 'UNAUTHENTICATED', 'token refused at subscribe', undefined, 401, {
    http: { status: 401 },
  });

/** Only the stream's end, not whatever else the object that gives it holds. */
const streamEnd = (stream: StreamOptions): StreamEnd => ({
  cut: () => stream.cut(),
  onEnd: (release) => stream.onEnd(release),
});

export class LiveUpdates {
  readonly hub: LiveHub;
  /** The chain's head as the block poller sees it (head.ts). */
  readonly head: ChainHead;
  /** Token checks under way, by credential: concurrent ones share one explorer read. */
  private readonly checking = new Map<string, Promise<GatewayError | null>>();
  private readonly blocks: Source<unknown>;
  private readonly validators: Source<unknown>;

  constructor(
    private readonly settings: LiveSettings,
    private readonly deps: LiveDeps,
  ) {
    const bus = deps.redis ? new RedisBus(deps.redis, { leaseMs: settings.leaseMs }) : new LocalBus();
    this.hub = new LiveHub({
      bus,
      intervalMs: settings.pollMs,
      backlog: settings.backlog,
      remember: settings.catchUp,
      metrics: deps.metrics,
      logger: deps.logger,
    });
    this.blocks = blockSource(deps.upstreams, settings.catchUp, () =>
      this.hub.deliveredHeight('blocks'),
    ) as Source<unknown>;
    this.validators = validatorSource(deps.upstreams, deps.validatorsRead) as Source<unknown>;
    // Heard at least every poll (a head event when no block came): three polls or one lease
    // (another instance's poller lost, and a new one taking over) without a word, and it is unknown.
    this.head = new ChainHead(this.hub, this.blocks, Math.max(3 * settings.pollMs, settings.leaseMs));
  }

  /** Every new block, in height order, none skipped. */
  blockAdded(stream: StreamOptions): AsyncIterableIterator<Block> {
    return this.hub.subscribe(this.blocks, {
      ...streamEnd(stream),
      accept: (event) => (event.kind === 'block' ? event.block : undefined),
    });
  }

  /**
   * What a subscriber resuming after block `after` (SSE's Last-Event-ID) missed, read from memory:
   * the latest LIVE_CATCH_UP blocks this process delivered while it listened (heard through Redis
   * too). Only where memory does not reach back to `after` + 1 are blocks read from the search
   * service, at most LIVE_CATCH_UP of them (all of them when memory is empty: nothing tells how
   * many are missing), and the caller charges `reads` first. A gap longer than LIVE_CATCH_UP is
   * not read: the subscriber gets what memory holds, then the live blocks.
   */
  missedBlocks(after: number): MissedBlocks {
    const inMemory = () => this.hub.recent('blocks').flatMap((e) => (e.kind === 'block' ? [e.block] : []));
    const oldest = inMemory()[0]?.height;
    const { catchUp } = this.settings;
    const gap = oldest === undefined ? catchUp : oldest - after - 1;
    const reads = gap > 0 && gap <= catchUp ? gap : 0;
    return {
      reads,
      read: async (stopped) => {
        const read: Block[] = [];
        for (let height = after + 1; read.length < reads && !stopped(); height++) {
          const block = await blockAt(this.deps.upstreams, height, {});
          if (!block) break;
          this.hub.stamp(block, Date.now(), String(block.height));
          read.push(block);
        }
        const last = read.at(-1)?.height ?? after;
        return [...read, ...inMemory().filter((block) => block.height > last)];
      },
    };
  }

  /** Every validator whose data changed, or only the one known by `address` (any of its addresses, either encoding). */
  validatorUpdated(stream: StreamOptions, address: string | null): AsyncIterableIterator<Validator> {
    const key = address === null ? null : addressKey(address);
    const matches = (v: Validator) => key === null || validatorAddressKeys(v).some(([, k]) => k === key);
    return this.hub.subscribe(this.validators, {
      ...streamEnd(stream),
      accept: (event) =>
        event.kind === 'validator' && matches(event.validator) ? event.validator : undefined,
    });
  }

  validatorStatisticsUpdated(stream: StreamOptions): AsyncIterableIterator<ValidatorStatistics> {
    return this.hub.subscribe(this.validators, {
      ...streamEnd(stream),
      accept: (event) => (event.kind === 'statistics' ? event.statistics : undefined),
    });
  }

  /**
   * New failed transactions as read with `token`, delivered only to subscribers of the same token.
   * The token is first checked by one explorer read with it: refused, the subscription is.
   */
  async failedTransactionAdded(
    stream: StreamOptions,
    token: string,
    scope: CallScope,
  ): Promise<AsyncIterableIterator<FailedTransaction>> {
    const refusal = await this.checkToken(token, scope);
    if (refusal) throw refusal;
    const source = failedSource(this.deps.upstreams, `failed:${credential(this.deps.secret, token)}`, token);
    return this.hub.subscribe(source as Source<unknown>, {
      ...streamEnd(stream),
      accept: (event) => (event.kind === 'failedTransaction' ? event.transaction : undefined),
    });
  }

  /**
   * Whether the explorer accepts `token` now: null when it does, else the refusal (UNAUTHENTICATED,
   * HTTP 401) or the explorer's failure. One explorer read with it, at every subscribe and every
   * join of a group (a token revoked since its group started is refused); concurrent checks of one
   * token share their read.
   */
  checkToken(token: string, scope: CallScope): Promise<GatewayError | null> {
    const key = credential(this.deps.secret, token);
    let check = this.checking.get(key);
    if (!check) {
      check = explorerAccepts(this.deps.upstreams, token, scope).then(
        (accepted) => (accepted ? null : tokenRefused()),
        (error: unknown) => (error instanceof GatewayError ? error : tokenRefused()),
      );
      this.checking.set(key, check);
      void check.finally(() => this.checking.delete(key));
    }
    return check;
  }

  /** When the poll that found a value a subscription stream handed out was answered, and its event id. */
  stampOf(value: unknown): Stamp | undefined {
    return this.hub.stampOf(value);
  }

  close(): Promise<void> {
    this.head.close();
    return this.hub.close();
  }
}
