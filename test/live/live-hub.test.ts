import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { type Devnet, startDevnet } from '../../src/devnet/index.js';
import { LocalBus } from '../../src/live/bus.js';
import type { LiveEvent } from '../../src/live/events.js';
import { LiveHub } from '../../src/live/hub.js';
import { blockAt, blockSource, failedSource, type Source } from '../../src/live/sources.js';
import { GatewayMetrics } from '../../src/ops/metrics.js';
import { createUpstreams, type Upstreams } from '../../src/upstream/index.js';
import type { FailedTransaction, Validator, ValidatorStatistics } from '../../src/upstream/models.js';

/**
 * The hub's own guarantee, whatever its bus delivers: blocks reach a subscriber in height order,
 * each once, even when the same block arrives twice (two pollers for a moment while Redis failed,
 * or a publish that timed out here but ran in Redis and was published again in process); and so do
 * validators, statistics and failed transactions, each kind by its own identity.
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

const validator = (operatorAddress: string, tokens: string, proposed: string): LiveEvent => ({
  kind: 'validator',
  validator: { operatorAddress, tokens, proposed } as unknown as Validator,
  polledAt: Date.now(),
});

const statistics = (totalStakedAmount: string): LiveEvent => ({
  kind: 'statistics',
  statistics: { totalStakedAmount } as unknown as ValidatorStatistics,
  polledAt: Date.now(),
});

const failed = (hash: string): LiveEvent => ({
  kind: 'failedTransaction',
  transaction: { hash, blockHeight: 1, txNumber: 1, actionIndex: 0 } as unknown as FailedTransaction,
  polledAt: Date.now(),
});

/** A source whose polls find nothing: the test publishes on the bus as a poller would. */
const quiet: Source<unknown> = { key: 'blocks', poll: async () => ({ events: [], state: {} }) };

/** A hub on `bus` whose own poller (every minute) never runs in a test: the test publishes. */
const hubOn = (bus: LocalBus, metrics: GatewayMetrics) =>
  new LiveHub({
    bus,
    intervalMs: 60_000,
    backlog: 100,
    remember: 20,
    metrics,
    logger: pino({ level: 'silent' }),
  });

/** A stream that never ends by itself (the test ends it). */
const noEnd = { cut: () => {}, onEnd: () => {} };

let hub: LiveHub | undefined;
afterEach(() => hub?.close());

describe('LiveHub', () => {
  it('delivers a block that arrives again only once, and never one below the last delivered', async () => {
    const bus = new LocalBus();
    const metrics = new GatewayMetrics(() => ({ scan: 'closed', explorer: 'closed', stake: 'closed' }));
    hub = hubOn(bus, metrics);
    const stream = hub.subscribe(quiet, {
      accept: (event) => (event.kind === 'block' ? event.block.height : undefined),
      cut: () => {},
      onEnd: () => {},
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

  it('delivers a validator, the statistics or a failed transaction that arrives again only once', async () => {
    const bus = new LocalBus();
    const metrics = new GatewayMetrics(() => ({ scan: 'closed', explorer: 'closed', stake: 'closed' }));
    hub = hubOn(bus, metrics);
    const name = (event: LiveEvent) =>
      event.kind === 'validator'
        ? `${event.validator.operatorAddress}=${event.validator.tokens}`
        : event.kind === 'statistics'
          ? `stats=${event.statistics.totalStakedAmount}`
          : event.kind === 'failedTransaction'
            ? `failed ${event.transaction.hash}`
            : undefined;
    const validators = hub.subscribe({ ...quiet, key: 'validators' }, { accept: name, ...noEnd });
    const transactions = hub.subscribe({ ...quiet, key: 'failed:x' }, { accept: name, ...noEnd });
    // The same change from two pollers (a counter that moves with every block differs: not a change).
    await bus.publish('validators', [validator('v1', '10', '1'), statistics('10')]);
    await bus.publish('validators', [
      validator('v1', '10', '2'),
      statistics('10'),
      validator('v2', '5', '1'),
    ]);
    // A real change back and forth is an event each time.
    await bus.publish('validators', [
      validator('v1', '11', '3'),
      validator('v1', '10', '4'),
      statistics('11'),
    ]);
    const seen: string[] = [];
    for (let i = 0; i < 6; i++) seen.push((await validators.next()).value as string);
    expect(seen).toEqual(['v1=10', 'stats=10', 'v2=5', 'v1=11', 'v1=10', 'stats=11']);
    await bus.publish('failed:x', [failed('a'), failed('b')]);
    await bus.publish('failed:x', [failed('b'), failed('a'), failed('c')]);
    const hashes: string[] = [];
    for (let i = 0; i < 3; i++) hashes.push((await transactions.next()).value as string);
    expect(hashes).toEqual(['failed a', 'failed b', 'failed c']);
    // Nothing else is waiting: the next event of each is the next one published.
    await bus.publish('validators', [statistics('12')]);
    await bus.publish('failed:x', [failed('d')]);
    expect((await validators.next()).value).toBe('stats=12');
    expect((await transactions.next()).value).toBe('failed d');
    await validators.return?.();
    await transactions.return?.();
    expect(hub.sources()).toEqual([]);
  });
});

/** A LocalBus whose listeners can be told that the bus was away and is back, as a Redis reconnect does. */
class ResumingBus extends LocalBus {
  readonly resumes: (() => void)[] = [];
  override listen(source: string, deliver: (event: LiveEvent) => void, resumed?: () => void): () => void {
    if (resumed) this.resumes.push(resumed);
    return super.listen(source, deliver);
  }
}

describe('LiveHub on the devnet: what a listener missed', () => {
  let devnet: Devnet;
  let upstreams: Upstreams;
  beforeAll(async () => {
    devnet = await startDevnet({ seed: 'live-hub-gaps', record: true });
    upstreams = createUpstreams({
      urls: devnet.urls,
      timeoutMs: 5_000,
      connections: 2,
      resilience: { failureThreshold: 1000, halfOpenAfterMs: 1000 },
      dialects: loadConfig({}).dialects,
    });
  });
  afterAll(async () => {
    await upstreams?.close();
    await devnet?.close();
  });

  const metrics = () => new GatewayMetrics(() => ({ scan: 'closed', explorer: 'closed', stake: 'closed' }));
  const real = async (height: number): Promise<LiveEvent> => ({
    kind: 'block',
    block: (await blockAt(upstreams, height, {})) as NonNullable<Awaited<ReturnType<typeof blockAt>>>,
    polledAt: Date.now(),
  });
  /** The heights the devnet was asked for through the search service since its records were reset. */
  const asked = () =>
    devnet.requests.filter((r) => r.service === 'scan').map((r) => new URLSearchParams(r.query).get('q'));
  const heights = async (stream: AsyncIterableIterator<unknown>, n: number) => {
    const seen: unknown[] = [];
    for (let i = 0; i < n; i++) seen.push((await stream.next()).value);
    return seen;
  };

  /**
   * A hub on a bus the test can resume, and a blockAdded stream of it whose source reads the
   * devnet's blocks between two heights; the hub's own poller finds nothing (the test publishes).
   */
  const blockStream = () => {
    const bus = new ResumingBus();
    const live = hubOn(bus, metrics());
    hub = live;
    const source = { ...blockSource(upstreams, 20, () => live.deliveredHeight('blocks')), poll: quiet.poll };
    const stream = live.subscribe(source, {
      accept: (e) => (e.kind === 'block' ? e.block.height : undefined),
      ...noEnd,
    });
    return { bus, stream };
  };

  it('reads the blocks between the last delivered and one beyond the next, before it', async () => {
    const { bus, stream } = blockStream();
    const head = devnet.data.blocks.count;
    await bus.publish('blocks', [await real(head - 4)]);
    expect(await heights(stream, 1)).toEqual([head - 4]);
    devnet.resetRecords();
    await bus.publish('blocks', [await real(head - 1), await real(head)]);
    expect(await heights(stream, 4)).toEqual([head - 3, head - 2, head - 1, head]);
    // Only the missing heights were read (and the two the test read itself).
    expect(asked()).toEqual([head - 1, head, head - 3, head - 2].map(String));
    await stream.return?.();
  });

  it('reads on from the last block delivered when the bus is back, until a height is missing', async () => {
    const { bus, stream } = blockStream();
    const head = devnet.data.blocks.count;
    await bus.publish('blocks', [await real(head - 2)]);
    expect(await heights(stream, 1)).toEqual([head - 2]);
    devnet.resetRecords();
    for (const resumed of bus.resumes) resumed();
    expect(await heights(stream, 2)).toEqual([head - 1, head]);
    expect(asked()).toEqual([head - 1, head, head + 1].map(String));
    // What the poller publishes next of those is not delivered again.
    const [next] = devnet.advance(1).heights;
    await bus.publish('blocks', [await real(head), await real(next as number)]);
    expect(await heights(stream, 1)).toEqual([next]);
    await stream.return?.();
  });

  it('ends private streams on a refusal only once the explorer confirms it', async () => {
    const bus = new LocalBus();
    hub = hubOn(bus, metrics());
    const accept = (e: LiveEvent) => (e.kind === 'failedTransaction' ? e.transaction.hash : undefined);
    const accepted = hub.subscribe(failedSource(upstreams, 'failed:good', devnet.token), {
      accept,
      ...noEnd,
    });
    const revoked = hub.subscribe(failedSource(upstreams, 'failed:bad', 'not-a-devnet-token'), {
      accept,
      ...noEnd,
    });
    const refused: LiveEvent = { kind: 'refused', polledAt: Date.now() };
    await bus.publish('failed:good', [refused]);
    await bus.publish('failed:bad', [refused]);
    await expect(revoked.next()).rejects.toMatchObject({ extensions: { code: 'UNAUTHENTICATED' } });
    // The token the explorer accepts keeps its stream: the next transaction is delivered.
    await bus.publish('failed:good', [failed('after-refusal')]);
    expect((await accepted.next()).value).toBe('after-refusal');
    await accepted.return?.();
  });
});
