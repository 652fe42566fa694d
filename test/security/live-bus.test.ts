import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { type LiveBus, LocalBus, RedisBus } from '../../src/live/bus.js';
import type { LiveEvent } from '../../src/live/events.js';
import { RedisStore } from '../../src/scale/redis.js';
import { RedisValues } from '../../src/scale/redis-values.js';
import { useDevnetAndRedis } from '../gateway/helpers.js';
import { until } from '../support/until.js';

/**
 * Each source's events reach its own listeners only. Two private sources (two callers' failed
 * transactions) publish bursts back to back, faster than their listeners read: before, the bus
 * queued every channel's waiting messages in one buffer (graphql-yoga's createPubSub with one
 * `repeaterBuffer`), so one channel's reader took another's messages, and on Redis the events a
 * listener took of another channel failed their signature and were lost.
 */

const SECRET = 'live-bus-test-secret-0123456789';
const SOURCES = ['failed:caller-a', 'failed:caller-b'] as const;

/** `count` events of `source`, each naming its source and place. */
const burst = (source: string, count: number): LiveEvent[] =>
  Array.from({ length: count }, (_, i) => ({
    kind: 'failedTransaction',
    transaction: { hash: `${source}#${i}` } as never,
    polledAt: i,
  }));

/** Listens to both sources; what each heard, by source. */
function listenAll(bus: LiveBus) {
  const heard = new Map<string, string[]>(SOURCES.map((s) => [s, []]));
  const stops = SOURCES.map((source) =>
    bus.listen(source, (event) => {
      heard
        .get(source)
        ?.push(event.kind === 'failedTransaction' ? String(event.transaction.hash) : event.kind);
    }),
  );
  return {
    heard,
    stop: () => {
      for (const stop of stops) stop();
    },
  };
}

const expected = (source: string, count: number) =>
  burst(source, count).map((e) => (e as any).transaction.hash);

describe('the live bus: every source to its own listeners', () => {
  const env = useDevnetAndRedis();
  const closers: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
  });

  it('in process (no Redis): bursts of two sources published back to back', async () => {
    const bus: LiveBus = new LocalBus();
    const { heard, stop } = listenAll(bus);
    closers.push(stop);
    for (const source of SOURCES) await bus.publish(source, burst(source, 50), null);
    await until(() => [...heard.values()].flat().length === 100, { what: 'every event delivered' });
    for (const source of SOURCES) expect(heard.get(source)).toEqual(expected(source, 50));
  });

  it('through Redis pub/sub: bursts of two sources published back to back', async () => {
    const store = new RedisStore({ url: env.redis.url, timeoutMs: 1_000, logger: pino({ level: 'silent' }) });
    const rejected: string[] = [];
    const values = new RedisValues(SECRET, (kind) => rejected.push(kind));
    const bus = new RedisBus({ store, prefix: 'live-bus-test:', values }, { leaseMs: 5_000 });
    const { heard, stop } = listenAll(bus);
    closers.push(async () => {
      stop();
      await bus.close();
      await store.close();
    });
    await until(
      async () => {
        const channels = (await env.inspect.call('PUBSUB', 'CHANNELS', 'live-bus-test:*')) as string[];
        return channels.length === 2;
      },
      { what: 'both channels listened to' },
    );
    for (const source of SOURCES) expect(await bus.claim(source)).toEqual({ claim: 'taken', state: null });
    for (const source of SOURCES) expect(await bus.publish(source, burst(source, 50), null)).toBe(true);
    await until(() => [...heard.values()].flat().length === 100, { what: 'every event delivered' });
    for (const source of SOURCES) expect(heard.get(source)).toEqual(expected(source, 50));
    expect(rejected).toEqual([]);
  });
});
