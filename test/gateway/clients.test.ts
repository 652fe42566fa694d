import { createHash } from 'node:crypto';
import { ApolloClient, gql, HttpLink, InMemoryCache } from '@apollo/client';
import { Defer20220824Handler } from '@apollo/client/incremental';
import { PersistedQueryLink } from '@apollo/client/link/persisted-queries';
import { relayStylePagination } from '@apollo/client/utilities';
import { Client, fetchExchange } from '@urql/core';
import { cacheExchange } from '@urql/exchange-graphcache';
import { relayPagination } from '@urql/exchange-graphcache/extras';
import { isAbstractType } from 'graphql';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { schema } from '../../src/schema/index.js';
import { until } from '../support/until.js';
import { useGatewayOnDevnet } from './helpers.js';

/**
 * The graph as real client caches use it (contract.md §6), against the gateway on the devnet over
 * a real socket: Apollo Client (InMemoryCache with relayStylePagination, its persisted-queries
 * link, @defer, a subscription over its multipart HTTP protocol) and urql with Graphcache (relayPagination). Objects are
 * one cache record whichever operation reached them, pages merge into one list, and no cache
 * warning is printed.
 */

const env = useGatewayOnDevnet({ gateway: { live: { ...loadConfig({}).live, pollMs: 20 } } });
env.serveOverHttp();

/** Every warning or error a client library printed during a test: there must be none. */
let printed: string[] = [];
const original = { warn: console.warn, error: console.error };
beforeEach(() => {
  printed = [];
  console.warn = (...args: unknown[]) => printed.push(args.map(String).join(' '));
  console.error = (...args: unknown[]) => printed.push(args.map(String).join(' '));
});
afterEach(() => {
  console.warn = original.warn;
  console.error = original.error;
  expect(printed).toEqual([]);
});

/** The bodies the client sent, to see what left it. */
const sent: Record<string, unknown>[] = [];
const recordingFetch: typeof fetch = async (input, init) => {
  if (typeof init?.body === 'string') sent.push(JSON.parse(init.body));
  return fetch(input, init);
};

/** Apollo's possibleTypes, read from the schema as codegen's fragment-matcher would write them. */
const POSSIBLE_TYPES = Object.fromEntries(
  Object.values(schema.getTypeMap())
    .filter(isAbstractType)
    .map((type) => [type.name, schema.getPossibleTypes(type).map((object) => object.name)]),
);

/** Apollo's normalized records, by cache id (`Block:<id>`). */
const records = (client: ApolloClient) => client.cache.extract() as Record<string, Record<string, unknown>>;

/**
 * Apollo Client as a frontend sets it up: APQ and @defer over its HttpLink, and subscriptions over
 * the same link (Apollo's multipart HTTP subscriptions), with no link of the test's own.
 */
function apollo() {
  const http = new PersistedQueryLink({
    sha256: (text: string) => createHash('sha256').update(text).digest('hex'),
  }).concat(new HttpLink({ uri: env.url, fetch: recordingFetch }));
  const client = new ApolloClient({
    link: http,
    cache: new InMemoryCache({
      possibleTypes: POSSIBLE_TYPES,
      typePolicies: { Query: { fields: { validators: relayStylePagination(['pageSize']) } } },
    }),
    incrementalHandler: new Defer20220824Handler(),
  });
  return { client, close: () => client.stop() };
}

describe('Apollo Client', () => {
  it('keeps one record for the same block reached by two operations', async () => {
    const { client, close } = apollo();
    const height = 77;
    const byHeight = await client.query({
      query: gql`query ByHeight($h: Int!) { block(height: $h) { id height hash } }`,
      variables: { h: height },
    });
    const bySearch = await client.query({
      query: gql`query BySearch($q: String!) { search(query: $q) { results { target { ... on Block { id height hash transactionCount } } } } }`,
      variables: { q: String(height) },
    });
    const block = (byHeight.data as { block: { id: string } }).block;
    const found = (bySearch.data as { search: { results: { target: { id: string } }[] } }).search.results[0]
      ?.target;
    expect(found?.id).toBe(block.id);
    const blocks = Object.keys(records(client)).filter((key) => key.startsWith('Block:'));
    expect(blocks).toEqual([`Block:${block.id}`]);
    // The record holds what both operations read.
    expect(records(client)[`Block:${block.id}`]).toMatchObject({
      height,
      hash: env.devnet.data.blocks.hash[height - 1],
      transactionCount: env.devnet.data.blocks.txCount[height - 1],
    });
    close();
  });

  it('merges pages read by first/after into one list equal to a single page', async () => {
    const { client, close } = apollo();
    const query = gql`query Validators($first: Int!, $after: String) {
      validators(first: $first, after: $after) {
        edges { cursor node { id moniker } }
        pageInfo { hasNextPage endCursor }
      }
    }`;
    const first = await client.query({ query, variables: { first: 5 } });
    const endCursor = (first.data as any).validators.pageInfo.endCursor;
    const watched = client.watchQuery({ query, variables: { first: 5 } });
    await watched.fetchMore({ variables: { first: 5, after: endCursor } });
    const merged = (client.readQuery({ query, variables: { first: 5 } }) as any).validators.edges.map(
      (e: { node: { id: string } }) => e.node.id,
    );
    const single = await client.query({ query, variables: { first: 10 }, fetchPolicy: 'network-only' });
    expect(merged).toEqual(
      (single.data as any).validators.edges.map((e: { node: { id: string } }) => e.node.id),
    );
    expect(merged).toHaveLength(10);
    close();
  });

  it('registers a document through the persisted-queries link, then sends its hash alone', async () => {
    const { client, close } = apollo();
    const query = gql`query Stats { validatorStatistics { totalValidators activeValidators } }`;
    sent.length = 0;
    await client.query({ query, fetchPolicy: 'network-only' });
    await client.query({ query, fetchPolicy: 'network-only' });
    // By hash (unknown), then with the document, then by hash alone.
    expect(sent.map((body) => ('query' in body ? 'document' : 'hash'))).toEqual(['hash', 'document', 'hash']);
    close();
  });

  it('receives a deferred fragment after the rest', async () => {
    const { client, close } = apollo();
    const results: any[] = [];
    const query = gql`query Deferred { validatorStatistics { totalValidators } ... @defer { validators(first: 2) { edges { node { id moniker } } } } }`;
    await new Promise<void>((resolve, reject) => {
      client.watchQuery({ query }).subscribe({
        next: (result) => {
          if (result.data === undefined) return;
          results.push(result.data);
          if ((result.data as any)?.validators) resolve();
        },
        error: reject,
      });
    });
    // The first result has the rest and not the deferred field; the last adds it to the rest.
    expect(results[0]).toEqual({
      __typename: 'Query',
      validatorStatistics: { __typename: 'ValidatorStatistics', totalValidators: expect.any(String) },
    });
    expect(results.at(-1)).toMatchObject({ validatorStatistics: results[0].validatorStatistics });
    expect(results.at(-1).validators.edges).toHaveLength(2);
    close();
  });

  it('writes a block a blockAdded event carried into the same record a query of it reads', async () => {
    const { client, close } = apollo();
    const events: { id: string; height: number; hash: string }[] = [];
    const subscription = client
      .subscribe({ query: gql`subscription Blocks { blockAdded { id height hash } }` })
      .subscribe({
        next: (result) => {
          if (!result.data)
            throw new Error(
              `no data: ${(result.error as any)?.response?.status} ${String((result.error as any)?.message)}`,
            );
          events.push((result.data as any).blockAdded);
        },
      });
    await env.gateway.live.hub.afterPoll('blocks');
    const [height] = env.devnet.advance(1).heights as [number];
    await until(() => events.length > 0, { what: "Apollo's subscription given the new block" });
    const [event] = events as [{ id: string; height: number; hash: string }];
    expect(event.height).toBe(height);
    expect(records(client)[`Block:${event.id}`]).toMatchObject({ height, hash: event.hash });
    const read = await client.query({
      query: gql`query Added($h: Int!) { block(height: $h) { id height hash transactionCount } }`,
      variables: { h: height },
    });
    expect((read.data as any).block.id).toBe(event.id);
    expect(Object.keys(records(client)).filter((key) => key === `Block:${event.id}`)).toHaveLength(1);
    subscription.unsubscribe();
    close();
  });
});

describe('urql with Graphcache', () => {
  /** Types without an id of their own are parts of their parent (no key). */
  const embedded = [
    'PageInfo',
    'ValidatorPage',
    'ValidatorEdge',
    'Commission',
    'Coin',
    'ValidatorStatistics',
    'SearchResults',
    'SearchResult',
  ];
  const urql = () =>
    new Client({
      url: env.url,
      // urql sends queries as GETs where they fit in a URL (CDN-cacheable): with the header that
      // tells the gateway's CSRF prevention the request is not a plain form's.
      fetchOptions: { headers: { 'x-graphql-csrf': '1' } },
      exchanges: [
        cacheExchange({
          keys: Object.fromEntries(embedded.map((type) => [type, () => null])),
          resolvers: { Query: { validators: relayPagination() } },
        }),
        fetchExchange,
      ],
    });

  it('merges pages read by first/after into one list equal to a single page', async () => {
    const client = urql();
    const query = `query Validators($first: Int!, $after: String) {
      validators(first: $first, after: $after) { edges { cursor node { id moniker } } pageInfo { hasNextPage endCursor } }
    }`;
    const first = await client.query(query, { first: 4 }).toPromise();
    expect(first.error).toBeUndefined();
    const endCursor = first.data.validators.pageInfo.endCursor;
    await client.query(query, { first: 4, after: endCursor }).toPromise();
    const merged = await client.query(query, { first: 4 }, { requestPolicy: 'cache-only' }).toPromise();
    const single = await client.query(query, { first: 8 }, { requestPolicy: 'network-only' }).toPromise();
    const ids = (data: any) => data.validators.edges.map((e: { node: { id: string } }) => e.node.id);
    expect(ids(merged.data)).toEqual(ids(single.data));
    expect(ids(merged.data)).toHaveLength(8);
  });

  it('merges what two operations read of one validator into its one record', async () => {
    const client = urql();
    const height = 42;
    // A: the block's proposer, with its moniker, which B does not select.
    const A =
      'query A($h: Int!) { block(height: $h) { id proposerValidator { id operatorAddress moniker tokens } } }';
    const a = await client.query(A, { h: height }).toPromise();
    expect(a.error).toBeUndefined();
    const proposer = a.data.block.proposerValidator;
    // The chain moves until the proposer's tokens change.
    const record = env.devnet.data.validators.find(
      (v) => env.devnet.stakeAddress(v.operator_address) === proposer.operatorAddress,
    );
    if (!record) throw new Error(`no devnet validator ${proposer.operatorAddress}`);
    const before = record.tokens;
    while (record.tokens === before) env.devnet.advance(1);
    // B: the same validator by its id, without the moniker: its tokens as they are now.
    const b = await client
      .query('query B($id: ID!) { node(id: $id) { ... on Validator { id tokens } } }', { id: proposer.id })
      .toPromise();
    expect(b.error).toBeUndefined();
    expect(b.data.node.tokens).not.toBe(proposer.tokens);
    // A, read from the cache alone, has its own moniker and B's tokens: one record, written by both.
    env.devnet.resetRecords();
    const cached = await client.query(A, { h: height }, { requestPolicy: 'cache-only' }).toPromise();
    expect(cached.error).toBeUndefined();
    expect(cached.data.block.proposerValidator).toEqual({
      ...proposer,
      tokens: b.data.node.tokens,
    });
    expect(env.devnet.requests).toHaveLength(0);
  });

  it('keeps one record for the same block reached by two operations', async () => {
    const client = urql();
    const height = 91;
    // The block by height selects its hash; the search reaches it selecting its transaction count.
    await client
      .query('query ($h: Int!) { block(height: $h) { id height hash } }', { h: height })
      .toPromise();
    const bySearch = await client
      .query(
        'query ($q: String!) { search(query: $q) { results { target { ... on Block { id transactionCount } } } } }',
        { q: String(height) },
      )
      .toPromise();
    const target = bySearch.data.search.results[0].target;
    // A block with both, read from the cache alone: only one record written by both operations has it.
    env.devnet.resetRecords();
    const cached = await client
      .query(
        'query ($h: Int!) { block(height: $h) { id hash transactionCount } }',
        { h: height },
        { requestPolicy: 'cache-only' },
      )
      .toPromise();
    expect(cached.error).toBeUndefined();
    expect(cached.data.block).toEqual({
      id: target.id,
      hash: env.devnet.data.blocks.hash[height - 1],
      transactionCount: env.devnet.data.blocks.txCount[height - 1],
    });
    expect(env.devnet.requests).toHaveLength(0);
  });
});
