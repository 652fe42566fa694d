import { connect } from 'node:net';
import { createClient } from 'graphql-sse';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { subscribe } from '../support/sse.js';
import { until } from '../support/until.js';
import { liveTestSettings, notPolls, readAnswer, useGatewayOnDevnet } from './helpers.js';

/**
 * Live updates over real SSE sockets against the devnet, in every dialect (contract.md §6): each
 * subscription delivers what the devnet produced, in order, once; polls are one per interval
 * whatever the number of subscribers; tokens, caps, stalled readers and outages.
 */

const live = liveTestSettings();
const env = useGatewayOnDevnet({
  gateway: { live },
  devnet: { extraTokens: ['second-caller'] },
});
env.serveOverHttp();

const afterPoll = (label: string) => env.gateway.live.hub.afterPoll(label);

const metric = async (name: string) => {
  const found = (await env.gateway.metrics.registry.getMetricsAsJSON()).find((m) => m.name === name);
  return (found?.values ?? []).reduce((sum, v) => sum + Number(v.value), 0);
};

// Every test closes its streams; the next starts once the gateway has seen them go (no poller
// left), so that no test's requests or figures include another's.
afterEach(async () => {
  await until(() => env.gateway.live.hub.sources().length === 0, {
    what: "every live source given up after the test's streams closed",
  });
});

const BLOCKS = 'subscription Blocks { blockAdded { height hash proposer proposerValidator { moniker } } }';

describe('blockAdded', () => {
  it('delivers every new block in height order, once, with its joins resolved', async () => {
    const sub = await subscribe(env.url, BLOCKS);
    expect(sub.status).toBe(200);
    expect(sub.headers.get('content-type')).toMatch(/^text\/event-stream/);
    // The first poll finds the head; blocks after it are events.
    await afterPoll('blocks');
    const { heights } = env.devnet.advance(3);
    const events = await sub.take(3);
    expect(events.map((e) => e.data.blockAdded.height)).toEqual(heights);
    const { blocks } = env.devnet.data;
    for (const e of events) {
      expect(e.data.blockAdded.hash).toBe(blocks.hash[e.data.blockAdded.height - 1]);
      expect(e.data.blockAdded.proposerValidator.moniker).toEqual(expect.any(String));
    }
    // Nothing delivered twice: the next event is the next block.
    const [next] = env.devnet.advance(1).heights;
    expect((await sub.next()).data.blockAdded.height).toBe(next);
    sub.close();
  });

  it('polls once per interval whatever the number of subscribers, and stops when the last one leaves', async () => {
    const subs = await Promise.all(Array.from({ length: 40 }, () => subscribe(env.url, BLOCKS)));
    await afterPoll('blocks');
    env.devnet.resetRecords();
    for (let i = 0; i < 3; i++) await afterPoll('blocks');
    // Each poll asks the search service for head + 1, once.
    expect(env.devnet.requests.filter((r) => r.service === 'scan')).toHaveLength(3);
    const [height] = env.devnet.advance(1).heights;
    const received = await Promise.all(subs.map((s) => s.next()));
    expect(received.map((e) => e.data.blockAdded.height)).toEqual(subs.map(() => height));
    for (const s of subs) s.close();
    await until(() => env.gateway.live.hub.sources().length === 0, {
      what: "the blocks' source given up once the last subscriber left",
    });
    await until(async () => (await metric('graphql_subscriptions_active')) === 0, {
      what: 'no subscription counted active',
    });
  });

  it('loses no block to an upstream outage: the stream stays open and the next good poll fills the gap', async () => {
    const sub = await subscribe(env.url, BLOCKS);
    await afterPoll('blocks');
    env.devnet.setFailing('scan');
    const { heights } = env.devnet.advance(2);
    expect(await afterPoll('blocks')).toBe('error');
    env.devnet.setFailing(null);
    const events = await sub.take(2);
    expect(events.map((e) => e.data.blockAdded.height)).toEqual(heights);
    expect(sub.messages.every((m) => m.event === 'next')).toBe(true);
    sub.close();
  });

  it('is never answered from the response cache, and a request that takes no event stream is refused and holds nothing', async () => {
    const sub = await subscribe(env.url, BLOCKS);
    await afterPoll('blocks');
    env.devnet.advance(1);
    await sub.next();
    expect(await metric('graphql_response_cache_entries')).toBe(0);
    sub.close();
    const json = await fetch(env.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ query: BLOCKS }),
    });
    expect(json.status).toBe(406);
    // The refused stream gave its place back and left its source (else the poller ran for it).
    await until(async () => (await metric('graphql_subscriptions_active')) === 0, {
      what: 'no subscription counted active, the refused one included',
    });
    await until(() => env.gateway.live.hub.sources().length === 0, {
      what: "the blocks' source given up, no poller left for the refused stream",
    });
  });

  it('works with the graphql-sse client and with an EventSource-style GET', async () => {
    const client = createClient({ url: env.url, singleConnection: false, retryAttempts: 0 });
    const viaClient = client.iterate<{ blockAdded: { height: number } }>({ query: BLOCKS });
    const first = viaClient.next();
    const get = await subscribe(env.url, BLOCKS, { method: 'GET' });
    expect(get.status).toBe(200);
    await until(() => env.gateway.live.hub.sources().includes('blocks'), {
      what: "the blocks' source started for both subscribers",
    });
    await afterPoll('blocks');
    const [height] = env.devnet.advance(1).heights;
    expect((await first).value?.data?.blockAdded.height).toBe(height);
    expect((await get.next()).data.blockAdded.height).toBe(height);
    await viaClient.return?.();
    get.close();
    client.dispose();
  });
});

describe('validatorUpdated and validatorStatisticsUpdated', () => {
  it('delivers each validator that changed, the one asked for, and the statistics', async () => {
    const all = await subscribe(
      env.url,
      'subscription { validatorUpdated { operatorAddress tokens jailed } }',
    );
    const stats = await subscribe(
      env.url,
      'subscription { validatorStatisticsUpdated { totalStakedAmount timestamp } }',
    );
    await afterPoll('validators');
    let moved: string[] = [];
    while (moved.length === 0) moved = env.devnet.advance(1).validators;
    const onWire = moved.map((v) => env.devnet.stakeAddress(v));
    const updates = await all.take(onWire.length);
    expect(updates.map((e) => e.data.validatorUpdated.operatorAddress).sort()).toEqual([...onWire].sort());
    for (const e of updates) {
      const record = env.devnet.data.validators.find(
        (v) => env.devnet.stakeAddress(v.operator_address) === e.data.validatorUpdated.operatorAddress,
      );
      expect(e.data.validatorUpdated.tokens).toBe(record?.tokens);
    }
    expect((await stats.next()).data.validatorStatisticsUpdated.timestamp).toBe(
      env.devnet.data.statistics.timestamp,
    );
    all.close();
    stats.close();

    // One validator, by its operator address: the first event is that one, whoever else moved.
    const target = env.devnet.data.validators[7]?.operator_address as string;
    const one = await subscribe(
      env.url,
      `subscription { validatorUpdated(operatorAddress: "${target}") { operatorAddress } }`,
    );
    await afterPoll('validators');
    while (!env.devnet.advance(1).validators.includes(target));
    expect((await one.next()).data.validatorUpdated.operatorAddress).toBe(env.devnet.stakeAddress(target));
    one.close();
  });

  it('refuses a malformed operatorAddress with BAD_USER_INPUT and no stream, before any upstream call', async () => {
    const res = await fetch(env.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        query: 'subscription { validatorUpdated(operatorAddress: "nobody") { moniker } }',
      }),
    });
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const body = await readAnswer(res);
    expect(body.errors[0].extensions).toEqual({ code: 'BAD_USER_INPUT', argument: 'operatorAddress' });
    expect(env.gateway.live.hub.sources()).not.toContain('validators');
    // Polls of other tests' streams may still run (their requests are `live-…`); this request made none.
    expect(notPolls(env.devnet.requests)).toEqual([]);
  });
});

describe('failedTransactionAdded', () => {
  const FAILED = 'subscription { failedTransactionAdded { hash blockHeight error } }';

  it('delivers new failed transactions oldest first, read with the caller’s token', async () => {
    const sub = await subscribe(env.url, FAILED, { token: env.devnet.token });
    expect(sub.status).toBe(200);
    await afterPoll('failed');
    const added: string[] = [];
    while (added.length < 3) added.push(...env.devnet.advance(1).failedTxs);
    const events = await sub.take(added.length);
    expect(events.map((e) => e.data.failedTransactionAdded.hash)).toEqual(added);
    sub.close();
  });

  it('answers UNAUTHENTICATED and opens no stream without a token, or with one the explorer refuses', async () => {
    for (const token of [undefined, 'stolen-token']) {
      const res = await fetch(env.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
        body: JSON.stringify({ query: FAILED }),
      });
      expect(res.status).toBe(401);
      const body = await res.json();
      expect(body.errors[0].extensions.code).toBe('UNAUTHENTICATED');
      expect(JSON.stringify(body)).not.toContain('stolen-token');
    }
    // The refused token cost one explorer read; no token, none.
    expect(env.devnet.requests.filter((r) => r.service === 'explorer')).toHaveLength(1);
    expect(env.gateway.live.hub.sources().some((s) => s.startsWith('failed:'))).toBe(false);
  });

  it('never gives one caller what another caller’s token read', async () => {
    const mine = await subscribe(env.url, FAILED, { token: env.devnet.token });
    const theirs = await subscribe(env.url, FAILED, { token: 'second-caller' });
    // Two credentials, two sources, each polled with its own token.
    await until(() => env.gateway.live.hub.sources().filter((s) => s.startsWith('failed:')).length === 2, {
      what: 'a failed-transactions source for each token',
    });
    await afterPoll('failed');
    await afterPoll('failed');
    // Both streams work: each gets the next failure, read with its own token (a stream that
    // received nothing at all cannot pass what follows).
    const shared: string[] = [];
    while (shared.length < 1) shared.push(...env.devnet.advance(1).failedTxs);
    const hashes = (events: any[]) => events.map((e) => e.data.failedTransactionAdded.hash);
    expect(hashes(await mine.take(shared.length))).toEqual(shared);
    expect(hashes(await theirs.take(shared.length))).toEqual(shared);
    env.devnet.revokeToken('second-caller');
    const added: string[] = [];
    while (added.length < 1) added.push(...env.devnet.advance(1).failedTxs);
    expect((await mine.next()).data.failedTransactionAdded.hash).toBe(added[0]);
    // The other caller's source is refused from now on: its stream is told so and ends, having got
    // nothing of mine, and its token is polled no more.
    const refused = await theirs.next();
    expect(refused.errors.map((e: any) => e.extensions.code)).toEqual(['UNAUTHENTICATED']);
    expect(await theirs.ended).toBe('complete');
    expect(theirs.messages.filter((m) => m.event === 'next')).toHaveLength(shared.length + 1);
    await until(() => env.gateway.live.hub.sources().filter((s) => s.startsWith('failed:')).length === 1, {
      what: "the refused token's source given up, mine left",
    });
    const tokens = new Set(
      env.devnet.requests.filter((r) => r.service === 'explorer').map((r) => r.headers.authorization),
    );
    expect(tokens).toEqual(new Set([`Bearer ${env.devnet.token}`, 'Bearer second-caller']));
    env.devnet.grantToken('second-caller');
    mine.close();
    theirs.close();
  });
});

describe('limits', () => {
  it('cuts off a subscriber that stops reading, holding no more than LIVE_BACKLOG events for it', async () => {
    // Fat events (each names its proposer 60 times over), so that the reader's socket buffers fill
    // within a few dozen events: then the gateway's backlog for it does.
    const limits = { ...loadConfig({}).limits, aliases: 100, tokens: 10_000, complexity: 1_000_000 };
    const gateway = env.coldGateway({ live: { ...live, catchUp: 50, backlog: 50 }, limits });
    const { url, close } = await env.listenOn(gateway);
    const { port } = new URL(url);
    const aliases = Array.from({ length: 60 }, (_, i) => `v${i}: proposerValidator { ...V }`).join(' ');
    const body = JSON.stringify({
      query: `subscription { blockAdded { height hash ${aliases} } }
        fragment V on Validator { moniker description imageUrl operatorAddress consensusAddress walletAddress uptimes commission { rate maxRate maxChangeRate updateTime } }`,
    });
    const socket = connect(Number(port), '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(
      `POST /graphql HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\naccept: text/event-stream\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    // The client never reads: its socket's buffers fill, then the gateway's backlog for it.
    socket.pause();
    await gateway.live.hub.afterPoll('blocks');
    const value = async (name: string) =>
      (await gateway.metrics.registry.getSingleMetric(name)?.get())?.values[0]?.value;
    // The chain keeps moving until the gateway gives up on the reader (after that nothing polls).
    const moving = setInterval(() => env.devnet.advance(100), 20);
    // Filling loopback's socket buffers (megabytes) with these events takes 12 to 15 s on two cores.
    await until(async () => (await value('live_subscribers_cut_total')) === 1, {
      what: 'the reader that stopped reading cut',
      within: 60_000,
    });
    clearInterval(moving);
    await until(() => gateway.live.hub.sources().length === 0, {
      what: "the blocks' source given up once the reader was cut",
    });
    const closed = new Promise((resolve) => socket.once('close', resolve));
    socket.resume();
    await closed;
    expect(await value('graphql_subscriptions_active')).toBe(0);
    await close();
  }, 90_000);

  it('refuses subscriptions beyond MAX_SUBSCRIPTIONS_PER_CLIENT and MAX_SUBSCRIPTIONS: RATE_LIMITED, no stream', async () => {
    const gateway = env.coldGateway({
      live: { ...live, maxSubscriptions: 3, maxSubscriptionsPerClient: 2 },
      scale: { ...loadConfig({}).scale, rateLimitPoints: 0, trustProxy: 1 },
    });
    const { url, close } = await env.listenOn(gateway);
    const active = async () =>
      (await gateway.metrics.registry.getSingleMetric('graphql_subscriptions_active')?.get())?.values[0]
        ?.value;
    const from = (client: string) => ({ headers: { 'x-forwarded-for': client } });
    const a1 = await subscribe(url, BLOCKS, from('10.0.0.1'));
    const a2 = await subscribe(url, BLOCKS, from('10.0.0.1'));
    // An event-stream client (EventSource, graphql-sse) is told in its stream, so that an
    // EventSource comes back by itself (eventsource-refusal.test.ts); the stream then ends.
    const a3 = await subscribe(url, BLOCKS, from('10.0.0.1'));
    expect(a3.status).toBe(200);
    expect((await a3.next()).errors[0].extensions).toEqual({ code: 'RATE_LIMITED', retryAfterMs: 1_000 });
    expect(await a3.ended).toBe('complete');
    // A client that takes JSON too is answered in JSON: 429 with retry-after.
    const a4 = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'x-forwarded-for': '10.0.0.1',
      },
      body: JSON.stringify({ query: BLOCKS }),
    });
    expect(a4.status).toBe(429);
    expect(a4.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(await active()).toBe(2);
    const b1 = await subscribe(url, BLOCKS, from('10.0.0.2'));
    expect(b1.status).toBe(200);
    expect(await active()).toBe(3);
    const c1 = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json',
        'x-forwarded-for': '10.0.0.3',
      },
      body: JSON.stringify({ query: BLOCKS }),
    });
    expect(c1.status).toBe(429);
    const refusal = await c1.json();
    expect(refusal.errors[0].extensions).toMatchObject({
      code: 'RATE_LIMITED',
      retryAfterMs: expect.any(Number),
    });
    // A stream that ends gives its place back.
    a1.close();
    await until(async () => (await active()) === 2, {
      what: 'the place of the closed stream given back (two active)',
    });
    const c2 = await subscribe(url, BLOCKS, from('10.0.0.3'));
    expect(c2.status).toBe(200);
    expect(await active()).toBe(3);
    for (const s of [a2, b1, c2]) s.close();
    await close();
  });
});
