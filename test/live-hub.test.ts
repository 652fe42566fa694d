import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalBus } from '../src/live/bus.js';
import type { LiveEvent } from '../src/live/events.js';
import { LiveHub } from '../src/live/hub.js';
import type { Source } from '../src/live/sources.js';
import { GatewayMetrics } from '../src/ops/metrics.js';

/**
 * The hub's own guarantee, whatever its bus delivers: blocks reach a subscriber in height order,
 * each once, even when the same block arrives twice (two pollers for a moment while Redis failed,
 * or a publish that timed out here but ran in Redis and was published again in process).
 */

const block = (height: number): LiveEvent => ({
  kind: 'block',
  block: {
    height,
    hash: `h${height}`,
    blockTime: 0,
    transactionCount: 0,
    actionCountComplete: true,
    proposer: 'p',
  },
  polledAt: Date.now(),
});

/** A source whose polls find nothing: the test publishes on the bus as a poller would. */
const quiet: Source<unknown> = { key: 'blocks', poll: async () => ({ events: [], state: {} }) };

let hub: LiveHub | undefined;
afterEach(() => hub?.close());

describe('LiveHub', () => {
  it('delivers a block that arrives again only once, and never one below the last delivered', async () => {
    const bus = new LocalBus();
    const metrics = new GatewayMetrics(() => ({ scan: 'closed', explorer: 'closed', stake: 'closed' }));
    hub = new LiveHub({ bus, intervalMs: 60_000, backlog: 100, metrics, logger: pino({ level: 'silent' }) });
    const stream = hub.subscribe(quiet, {
      accept: (event) => (event.kind === 'block' ? event.block.height : undefined),
      cut: () => {},
    });
    await bus.publish('blocks', [block(5), block(6)]);
    await bus.publish('blocks', [block(6), block(7)]);
    await bus.publish('blocks', [block(4), block(8)]);
    const heights: number[] = [];
    for (let i = 0; i < 4; i++) heights.push((await stream.next()).value as number);
    expect(heights).toEqual([5, 6, 7, 8]);
    await stream.return?.();
    expect(hub.sources()).toEqual([]);
  });
});
