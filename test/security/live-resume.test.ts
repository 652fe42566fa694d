import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { type Devnet, startDevnet } from '../../src/devnet/index.js';
import { UPSTREAM_COST } from '../../src/schema/builder.js';
import { devnetOptions, type ServedGateway, serveGateway, testSettings } from '../gateway/helpers.js';
import { type Subscription, subscribe } from '../support/sse.js';
import { until } from '../support/until.js';

/**
 * Replays that cost what they read (issue 35). A subscriber that comes back with `Last-Event-ID`
 * gets the blocks it missed: before, each distinct resume point formed a group of its own that
 * read every missed block from the search service again, unpriced (19 resumes: 381 reads for what
 * one plain subscriber reads once). Now the blocks of the last LIVE_CATCH_UP are replayed from
 * memory, and a gap that must be read is charged to the client's rate-limit budget first; a
 * poller that starts again finds the head from the last it knew, not from height 1.
 */

const BLOCKS = 'subscription { blockAdded { height } }';
const CATCH_UP = 20;

describe('subscribers resuming after a block', () => {
  let devnet: Devnet;
  let served: ServedGateway | null = null;
  const open: Subscription[] = [];

  beforeAll(async () => {
    devnet = await startDevnet(devnetOptions({ record: true }));
  });
  afterAll(async () => {
    await devnet?.close();
  });
  beforeEach(() => devnet.resetRecords());
  afterEach(async () => {
    for (const s of open.splice(0)) s.close();
    await served?.close();
    served = null;
  });

  async function start(rateLimitPoints = 0) {
    served = await serveGateway(
      {
        live: { ...loadConfig({}).live, pollMs: 30, catchUp: CATCH_UP, maxSubscriptionsPerClient: 100 },
        scale: { ...testSettings().scale, rateLimitPoints, rateLimitWindowMs: 600_000 },
      },
      devnet.urls,
    );
    return served;
  }

  const follow = async (url: string, lastEventId?: number) => {
    const s = await subscribe(url, BLOCKS, {
      headers: lastEventId === undefined ? {} : { 'last-event-id': String(lastEventId) },
    });
    open.push(s);
    return s;
  };
  const heights = (events: any[]) => events.map((e) => e.data.blockAdded.height);
  /** Reads of the search service that no poll made (a poll's requests carry `live-blocks-…`). */
  const replayReads = () =>
    devnet.requests.filter(
      (r) => r.service === 'scan' && !String(r.headers['x-request-id'] ?? '').startsWith('live-'),
    ).length;

  it('replays the last blocks from memory: 19 distinct resumes read nothing a plain subscriber does not', async () => {
    const { gateway, url } = await start();
    const viewer = await follow(url);
    await gateway.live.hub.afterPoll('blocks');
    const head = devnet.data.blocks.count;
    devnet.advance(CATCH_UP);
    expect(heights(await viewer.take(CATCH_UP))).toEqual(
      Array.from({ length: CATCH_UP }, (_, i) => head + 1 + i),
    );
    devnet.resetRecords();
    const resumes = await Promise.all(
      Array.from({ length: 19 }, (_, i) =>
        follow(url, head + 1 + i).then((s) => ({ s, after: head + 1 + i })),
      ),
    );
    for (const { s, after } of resumes) {
      expect(s.status).toBe(200);
      expect(heights(await s.take(head + CATCH_UP - after))).toEqual(
        Array.from({ length: head + CATCH_UP - after }, (_, i) => after + 1 + i),
      );
    }
    expect(replayReads()).toBe(0);
    // They joined the viewer's group: one group, whatever their resume points.
    expect((await gateway.metrics.subscriptionGroups.get()).values[0]?.value).toBe(1);
  });

  it('charges a gap it must read to the client’s budget: 19 resumes from far back read what the budget pays for', async () => {
    const budget = 500;
    const { url } = await start(budget);
    const head = devnet.data.blocks.count;
    const resumes = [];
    for (let i = 0; i < 19; i++) resumes.push(await follow(url, head - 1_000 + i));
    const admitted = resumes.filter((s) => s.status === 200).length;
    // Each admitted resume pays its subscription (one read) and the LIVE_CATCH_UP reads of its
    // gap, charged before any is made; past the budget, 429 and no read.
    const price = UPSTREAM_COST * (1 + CATCH_UP);
    expect(admitted).toBe(Math.floor(budget / price));
    expect(resumes.slice(admitted).every((s) => s.status === 429)).toBe(true);
    await until(() => replayReads() === admitted * CATCH_UP, {
      what: "the admitted resumes' gaps read, LIVE_CATCH_UP blocks each",
    });
    for (const s of resumes.slice(0, admitted))
      expect((await s.next()).data.blockAdded.height).toBeGreaterThan(head - 1_000);
    expect(replayReads()).toBe(admitted * CATCH_UP);
  });

  it('finds the head again from the last it knew when its poller starts again', async () => {
    const { gateway, url } = await start();
    const first = await follow(url);
    await gateway.live.hub.afterPoll('blocks');
    const cold = devnet.requests.filter((r) => r.service === 'scan').length;
    first.close();
    await until(() => gateway.live.hub.sources().length === 0, {
      what: "the blocks' poller stopped once its subscriber left",
    });
    devnet.resetRecords();
    const polled = gateway.live.hub.afterPoll('blocks');
    await follow(url);
    await polled;
    // The known head is still there, the one above it is not: two reads, where the search from
    // height 1 took about 2 log2(head).
    expect(devnet.requests.filter((r) => r.service === 'scan')).toHaveLength(2);
    expect(cold).toBeGreaterThan(2 * Math.floor(Math.log2(devnet.data.blocks.count)));
  });
});
