import { ApolloClient, gql, HttpLink, InMemoryCache } from '@apollo/client';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { until } from '../support/until.js';
import { liveTestSettings, parseAnswer, preparedRequests, useGatewayOnDevnet } from './helpers.js';

/**
 * Apollo Client 4 as its documentation starts it, `new HttpLink({ uri })` and nothing else,
 * subscribes over Apollo's multipart HTTP protocol (contract.md §9, Transports): a real socket to
 * the gateway on the devnet, through the same pipeline, live groups and caps as SSE. Events arrive
 * in order as `{"payload": …}` parts, heartbeats `{}` keep an idle stream open, a refusal is the
 * protocol's `{"payload": null, "errors": […]}` which Apollo surfaces with its code, and a stream
 * Apollo unsubscribes from gives its place back. Apollo Client 4 names itself in every request's
 * extensions (`clientLibrary`), which routing reads past: its streams, like the raw requests below,
 * take the adapter's stream writer (http/sse.ts).
 */

const live = liveTestSettings();
const env = useGatewayOnDevnet({ gateway: { live } });
env.serveOverHttp();

const BLOCKS = gql`subscription Blocks { blockAdded { height } }`;
/** What Apollo Client 4's HttpLink sends for a subscription. */
const APOLLO_ACCEPT =
  'multipart/mixed;boundary=graphql;subscriptionSpec=1.0,application/graphql-response+json,application/json;q=0.9';

const active = async (gateway = env.gateway) =>
  (await gateway.metrics.subscriptions.get()).values[0]?.value ?? 0;

const client = (uri = env.url) =>
  new ApolloClient({ link: new HttpLink({ uri }), cache: new InMemoryCache() });

/** What one Apollo subscription received: its data, and the errors it surfaced. */
function follow(apollo: ApolloClient, query = BLOCKS) {
  const data: any[] = [];
  const errors: any[] = [];
  let completed = false;
  const subscription = apollo.subscribe({ query }).subscribe({
    next: (result) => {
      if (result.error) errors.push(result.error);
      else data.push(result.data);
    },
    error: (error) => errors.push(error),
    complete: () => {
      completed = true;
    },
  });
  return { data, errors, completed: () => completed, unsubscribe: () => subscription.unsubscribe() };
}

afterEach(async () => {
  await until(async () => (await active()) === 0, { what: "every test's streams closed" });
});

describe("Apollo Client's HttpLink (multipart subscriptions)", () => {
  it('receives blocks in order, and its stream gives its place back when it unsubscribes', async () => {
    const blocks = follow(client());
    await until(async () => (await active()) === 1, { what: "Apollo's subscription open" });
    await env.gateway.live.hub.afterPoll('blocks');
    const { heights } = env.devnet.advance(3);
    await until(() => blocks.data.length === 3, { what: 'three blocks received by Apollo' });
    expect(blocks.data.map((d) => d.blockAdded.height)).toEqual(heights);
    expect(blocks.errors).toEqual([]);
    blocks.unsubscribe();
    await until(async () => (await active()) === 0, {
      what: 'graphql_subscriptions_active back to 0 after unsubscribe',
      within: 1_000,
    });
  });

  it('answers in the protocol: its media type, a heartbeat first, each event one `payload` part', async () => {
    const abort = new AbortController();
    const res = await fetch(env.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: APOLLO_ACCEPT },
      body: JSON.stringify({ query: 'subscription { blockAdded { height } }' }),
      signal: abort.signal,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('multipart/mixed;boundary="graphql";subscriptionSpec="1.0"');
    expect(res.headers.get('x-accel-buffering')).toBe('no');
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = '';
    const read = async (until: (text: string) => boolean) => {
      while (!until(text)) text += decoder.decode((await reader.read()).value, { stream: true });
    };
    const PART = '\r\ncontent-type: application/json; charset=utf-8\r\n\r\n';
    await read((t) => t.length >= `\r\n--graphql${PART}{}\r\n--graphql`.length);
    expect(text).toBe(`\r\n--graphql${PART}{}\r\n--graphql`);
    await env.gateway.live.hub.afterPoll('blocks');
    const [height] = env.devnet.advance(1).heights;
    await read((t) => t.includes('"payload"'));
    await read((t) => t.endsWith('\r\n--graphql'));
    expect(text.slice(text.indexOf('"payload"') - 1)).toBe(
      `{"payload":{"data":{"blockAdded":{"height":${height}}}}}\r\n--graphql`,
    );
    // An idle stream gets a heartbeat within Apollo Router's five seconds.
    const before = text.length;
    await read((t) => t.length > before && t.endsWith('\r\n--graphql'));
    expect(text.slice(before)).toBe(`${PART}{}\r\n--graphql`);
    abort.abort();
  });

  it('surfaces a private subscription without a token as UNAUTHENTICATED, and opens no stream', async () => {
    const failed = follow(client(), gql`subscription { failedTransactionAdded { hash } }`);
    await until(() => failed.errors.length === 1, { what: 'Apollo surfacing the refusal' });
    const [error] = failed.errors;
    expect(error.errors.map((e: any) => e.extensions.code)).toEqual(['UNAUTHENTICATED']);
    expect(error.errors[0].message).toMatch(/needs an `Authorization: Bearer <token>` header/);
    await until(failed.completed, { what: "the refused subscription's observable complete" });
    expect(failed.data).toEqual([]);
    expect(await active()).toBe(0);
  });

  it('writes a refusal as the protocol’s fatal message: payload null, errors without locations', async () => {
    const res = await fetch(env.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: APOLLO_ACCEPT },
      body: JSON.stringify({ query: 'subscription { blockAdded { nope } }' }),
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    const parts = text.split('\r\n--graphql');
    expect(parts.at(-1)).toBe('--\r\n');
    const fatal = parseAnswer(parts[1]?.slice(parts[1].indexOf('\r\n\r\n')) ?? '');
    expect(fatal.payload).toBeNull();
    expect(fatal.errors).toEqual([
      { message: 'Cannot query field "nope" on type "Block".', extensions: { code: 'BAD_USER_INPUT' } },
    ]);
  });

  it('counts against MAX_SUBSCRIPTIONS_PER_CLIENT as SSE does: one over is RATE_LIMITED, surfaced by Apollo', async () => {
    const capped = env.coldGateway({ live: { ...live, maxSubscriptionsPerClient: 1 } });
    const { url, close } = await env.listenOn(capped);
    const first = follow(client(url));
    await until(async () => (await active(capped)) === 1, { what: 'the first stream open' });
    const second = follow(client(url));
    await until(() => second.errors.length === 1, { what: 'the second refused' });
    expect(second.errors[0].errors[0].extensions).toEqual({
      code: 'RATE_LIMITED',
      retryAfterMs: expect.any(Number),
    });
    expect(await active(capped)).toBe(1);
    first.unsubscribe();
    await until(async () => (await active(capped)) === 0, { what: 'the first stream closed' });
    await close();
  });
});

describe('extensions other than an APQ registration', () => {
  // Apollo Client 4 sends `extensions: { clientLibrary }` with every request, Apollo's
  // GraphQLWsLink `extensions: {}`: neither is a registration, so neither leaves the adapter.
  const hot = useGatewayOnDevnet({
    gateway: { documents: { ...loadConfig({}).documents, keepAfter: 1, compileAfter: 1 } },
  });
  hot.serveOverHttp();

  it('keep a hot query on its prepared request', async () => {
    const query = 'query Head { validatorStatistics { totalValidators } }';
    const extensions = { clientLibrary: { name: '@apollo/client', version: '4.3.8' } };
    const before = await preparedRequests(hot.url);
    for (let i = 0; i < 4; i++) {
      const res = await fetch(hot.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ operationName: 'Head', query, variables: {}, extensions }),
      });
      expect(parseAnswer(await res.text()).data.validatorStatistics.totalValidators).toBe(
        String(hot.devnet.data.validators.length),
      );
    }
    // The first runs the pipeline (kept and compiled at its first use); the next three are prepared.
    expect((await preparedRequests(hot.url)) - before).toBe(3);
  });
});
