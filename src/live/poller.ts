import type { Logger } from 'pino';
import { UpstreamError } from '../errors.js';
import { errorSummary } from '../ops/logger.js';
import type { GatewayMetrics } from '../ops/metrics.js';
import { finishPollTrace, startPollTrace } from '../ops/request-trace.js';
import { Cancellation } from '../upstream/cancellation.js';
import type { LiveBus } from './bus.js';
import type { Source } from './sources.js';

export interface PollerOptions {
  bus: LiveBus;
  /** LIVE_POLL_MS: from the end of one poll to the start of the next. */
  intervalMs: number;
  metrics: GatewayMetrics;
  logger: Logger;
  /** Told of each poll's end, by the source's label: `ok`, `error`, `elsewhere` or `undecided`. */
  polled?(label: string, result: PollOutcome): void;
}

/** `undecided`: whether this process holds the source was unknown (Redis did not answer), so it did not poll. */
export type PollOutcome = 'ok' | 'error' | 'elsewhere' | 'undecided';

/**
 * One source polled while it has a subscriber in this process: a poll right away, then one every
 * interval, each only when this process holds the source (bus.ts), whatever the number of
 * subscribers. A poll that fails delivers nothing and keeps the state, so the next good one fills
 * the gap.
 */
export class SourcePoller<S> {
  private state: S | null = null;
  private timer: NodeJS.Timeout | undefined;
  /** Bumped by each start and stop: a poll still under way from before schedules nothing. */
  private generation = 0;
  private running = false;
  /** Cancels the upstream calls of the polls of one start, at the stop that follows it. */
  private cancel = new Cancellation();
  private polls = 0;

  constructor(
    private readonly source: Source<S>,
    private readonly options: PollerOptions,
  ) {}

  /** The source's metric label: `blocks`, `validators` or `failed` (never a credential's hash). */
  get label(): string {
    return this.source.key.startsWith('failed:') ? 'failed' : this.source.key;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.cancel = new Cancellation();
    this.schedule(++this.generation, 0);
  }

  /**
   * Stops polling and gives the source up. What was delivered is forgotten here (Redis keeps it a
   * while for the next holder): a source started again later begins from the chain as it is then.
   */
  async stop(): Promise<void> {
    this.running = false;
    this.generation++;
    this.state = null;
    clearTimeout(this.timer);
    // A poll under way reads for nobody now: its upstream calls are cancelled.
    this.cancel.abort(new Error('source given up'));
    await this.options.bus.release(this.source.key);
  }

  private schedule(generation: number, delayMs: number): void {
    if (this.running && generation === this.generation) {
      this.timer = setTimeout(() => void this.tick(generation), delayMs);
    }
  }

  private async tick(generation: number): Promise<void> {
    const { bus, logger } = this.options;
    try {
      const claimed = await bus.claim(this.source.key);
      if (generation !== this.generation) return;
      if (claimed.claim === 'elsewhere') {
        // What this process delivered is behind what the holder has since: never poll from it.
        this.state = null;
        this.outcome('elsewhere');
        return;
      }
      // Another process may hold the source and deliver its events here: polling too would
      // deliver them twice. What this process delivered stays, for when it holds the lease again.
      if (claimed.claim === 'undecided') {
        this.outcome('undecided');
        return;
      }
      // A process that just became the poller continues from what the previous one delivered (or
      // from its own last state, when the stored one is older than what it has seen: bus.ts).
      if (claimed.claim === 'taken') this.state = claimed.state as S | null;
      await bus.hold(this.source.key, () => this.poll(generation));
    } catch (error) {
      logger.warn({ err: errorSummary(error as Error), source: this.label }, 'live poll failed');
    } finally {
      this.schedule(generation, this.options.intervalMs);
    }
  }

  private outcome(result: PollOutcome): void {
    this.options.metrics.observePoll(this.label, result);
    this.options.polled?.(this.label, result);
  }

  private async poll(generation: number): Promise<void> {
    const { bus, metrics } = this.options;
    const trace = startPollTrace(this.label, ++this.polls);
    try {
      const result = await this.source.poll(this.state, { trace, signal: this.cancel });
      if (generation !== this.generation) return;
      finishPollTrace(trace, null);
      if (await bus.publish(this.source.key, result.events, result.state)) {
        this.state = result.state;
        // A head (sources.ts) is what the poll saw, not an event for subscribers.
        metrics.observeLiveEvents(this.label, result.events.filter((e) => e.kind !== 'head').length);
        this.outcome('ok');
      } else this.outcome('elsewhere');
    } catch (error) {
      finishPollTrace(trace, error as Error);
      // Stopped meanwhile: its calls were cancelled, and no poll failed.
      if (generation !== this.generation) return;
      this.outcome('error');
      // A credential the upstream refuses will not be accepted on the next poll either: the
      // source's subscribers (every instance's) are told, and their streams end.
      if (error instanceof UpstreamError && error.extensions.code === 'UNAUTHENTICATED') {
        await bus.publish(this.source.key, [{ kind: 'refused', polledAt: Date.now() }], this.state);
      }
    }
  }
}
