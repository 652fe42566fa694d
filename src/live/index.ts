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
import { LiveHub } from './hub.js';
import { blockSource, explorerAccepts, failedSource, type Source, validatorSource } from './sources.js';

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
    settings: LiveSettings,
    private readonly deps: LiveDeps,
  ) {
    const bus = deps.redis
      ? new RedisBus(deps.redis.store, { prefix: deps.redis.prefix, leaseMs: settings.leaseMs })
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

  blockAdded(stream: StreamOptions): AsyncIterableIterator<Block> {
    return this.hub.subscribe(this.blocks, {
      ...stream,
      accept: (event) => (event.kind === 'block' ? event.block : undefined),
    });
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

  /** When the poll that found a value a subscription stream handed out was answered. */
  polledAt(value: unknown): number | undefined {
    return this.hub.polledAt(value);
  }

  close(): Promise<void> {
    return this.hub.close();
  }
}
