import SchemaBuilder from '@pothos/core';
import { type GraphQLField, isObjectType, parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import { isPublicOperation } from '../../src/graphql/plugins/response-cache.js';
import CacheScopePlugin, { declaredCacheScope } from '../../src/schema/cache-scope.js';
import { schema } from '../../src/schema/index.js';
import { parseAnswer, readAnswer, useGatewayOnDevnet } from './helpers.js';

const env = useGatewayOnDevnet({ gateway: { responseCacheTtlMs: 60_000 } });
env.serveOverHttp();

/** Every field of every object type of the built schema, introspection aside. */
function everyField(): { coordinate: string; field: GraphQLField<unknown, unknown> }[] {
  return Object.values(schema.getTypeMap()).flatMap((type) =>
    isObjectType(type) && !type.name.startsWith('__')
      ? Object.values(type.getFields()).map((field) => ({ coordinate: `${type.name}.${field.name}`, field }))
      : [],
  );
}

describe('cache scope, declared on the fields', () => {
  it('is declared by every field: public or private at the root, exposed properties part of their parent', () => {
    const fields = everyField();
    expect(fields.length).toBeGreaterThan(100);
    const missing = fields
      .filter(({ field }) => declaredCacheScope(field) === undefined)
      .map(({ coordinate }) => coordinate);
    expect(missing).toEqual([]);
    const rootParent = fields
      .filter(({ coordinate }) => coordinate.startsWith('Query.'))
      .filter(({ field }) => declaredCacheScope(field) === 'parent')
      .map(({ coordinate }) => coordinate);
    expect(rootParent).toEqual([]);
    const exposedNotParent = fields
      .filter(({ field }) => field.extensions.pothosExposedField !== undefined)
      .filter(({ field }) => declaredCacheScope(field) !== 'parent')
      .map(({ coordinate }) => coordinate);
    expect(exposedNotParent).toEqual([]);
  });

  it('gives the root fields and every join (a field that may call an upstream) their verdicts', () => {
    const declared = Object.fromEntries(
      everyField().flatMap(({ coordinate, field }) => {
        const scope = declaredCacheScope(field);
        return scope && scope !== 'parent' ? [[coordinate, scope]] : [];
      }),
    );
    expect(declared).toEqual({
      'Query.validators': 'public',
      'Query.validator': 'public',
      'Query.validatorStatistics': 'public',
      'Query.search': 'public',
      'Query.searchSuggestions': 'public',
      'Query.block': 'public',
      'Query.transaction': 'public',
      'Query.delegations': 'private',
      'Query.contractsBySymbol': 'private',
      'Query.failedTransactions': 'private',
      // An id may name a caller's own entity (a delegation, a failed transaction, a contract).
      'Query.node': 'private',
      'Query.nodes': 'private',
      'Mutation.updateBuybackRound': 'private',
      'Address.delegations': 'private',
      'Address.validator': 'public',
      'Block.proposerValidator': 'public',
      'Delegation.validator': 'public',
      'SearchResult.target': 'public',
      'Transaction.block': 'public',
      // Events alike for every subscriber, but for those read with a caller's token.
      'Subscription.blockAdded': 'public',
      'Subscription.failedTransactionAdded': 'private',
      'Subscription.validatorUpdated': 'public',
      'Subscription.validatorStatisticsUpdated': 'public',
    });
  });

  it('refuses to build a schema with a field that forgot its scope, naming the field', () => {
    const forgottenRoot = new SchemaBuilder<{ Context: { loaders: unknown } }>({
      plugins: [CacheScopePlugin],
      scopeAuth: { authScopes: () => ({}) },
    });
    forgottenRoot.queryType({});
    // @ts-expect-error: TypeScript already requires cacheScope on a root query field.
    forgottenRoot.queryField('forgotten', (t) => t.string({ resolve: () => 'x' }));
    expect(() => forgottenRoot.toSchema()).toThrow('Query.forgotten declares no cacheScope');

    const forgottenJoin = new SchemaBuilder<{ Context: { loaders: unknown } }>({
      plugins: [CacheScopePlugin],
      scopeAuth: { authScopes: () => ({}) },
    });
    const Thing = forgottenJoin.objectRef<{ id: string }>('Thing').implement({
      fields: (t) => ({
        id: t.exposeString('id'),
        // A resolver of its own, even one that never looks at the context, declares its scope.
        owner: t.string({ resolve: (thing) => `${thing.id}-owner` }),
      }),
    });
    forgottenJoin.queryType({});
    forgottenJoin.queryField('thing', (t) =>
      t.field({ type: Thing, cacheScope: 'public', resolve: () => ({ id: '1' }) }),
    );
    expect(() => forgottenJoin.toSchema()).toThrow('Thing.owner declares no cacheScope');
  });
});

describe('an operation’s verdict, derived from the schema', () => {
  const publicOf = (source: string, operationName?: string) =>
    isPublicOperation(schema, parse(source), operationName);

  it('is public only for a query whose every selected field is public', () => {
    expect(
      publicOf('{ validators { nodes { moniker commission { rate } } } validatorStatistics { timestamp } }'),
    ).toBe(true);
    expect(publicOf('{ block(height: 1) { hash proposerValidator { moniker } } __typename }')).toBe(true);
    expect(publicOf('{ __schema { queryType { name } } }')).toBe(true);
    expect(
      publicOf('{ validators { nodes { moniker } } delegations(delegator: "x") { nodes { shares } } }'),
    ).toBe(false);
    expect(publicOf('{ failedTransactions { nodes { hash } } }')).toBe(false);
    expect(publicOf('mutation { updateBuybackRound(input: { roundId: "r" }) { round { id } } }')).toBe(false);
    // Nested below a public root, in an inline fragment or a named one: still private.
    expect(
      publicOf(
        '{ search(query: "x") { results { target { ... on Address { delegations { nodes { shares } } } } } } }',
      ),
    ).toBe(false);
    expect(
      publicOf(`{ search(query: "x") { results { target { ...A } } } }
        fragment A on Address { ...B }
        fragment B on Address { delegations { pageInfo { total } } }`),
    ).toBe(false);
    // Only the operation that runs, and the fragments it reaches, are judged.
    const two = `query Public { validators { nodes { ...V } } }
      query Live { delegations(delegatorAddress: "x") { nodes { shares } } }
      fragment V on Validator { moniker }`;
    expect(publicOf(two, 'Public')).toBe(true);
    expect(publicOf(two, 'Live')).toBe(false);
    expect(publicOf(two)).toBe(false);
  });

  it('reuses a public answer: the second identical request calls no upstream', async () => {
    const query = `query Overview($height: Int!) {
      validatorStatistics { totalValidators }
      block(height: $height) { hash proposerValidator { moniker } }
    }`;
    const variables = { height: 3 };
    const first = await env.gql(query, { variables });
    expect(first.errors).toBeUndefined();
    expect(first.data.validatorStatistics.totalValidators).toBe(env.devnet.data.statistics.total_validators);
    expect(first.data.block.hash).toBe(env.devnet.data.blocks.hash[2]);
    const scanCalls = env.devnet.requests.filter((r) => r.service === 'scan');
    expect(scanCalls).toHaveLength(1);

    env.devnet.resetRecords();
    expect(await env.gql(query, { variables })).toEqual(first);
    expect(env.devnet.requests).toHaveLength(0);
  });

  it('never reuses an answer that selects Address.delegations, even in a fragment below a public root', async () => {
    const [delegator] = [...env.devnet.data.delegations.keys()];
    const query = `query Holdings($q: String!) { search(query: $q) { results { target { ...Holdings } } } }
      fragment Holdings on Address { address delegations(pageSize: 1) { pageInfo { total } } }`;
    const variables = { q: delegator };
    const first = await env.gql(query, { variables });
    expect(first.errors).toBeUndefined();
    const firstCalls = env.devnet.requests.map((r) => `${r.service} ${r.path}`);
    // The search found the address, and its delegations were read from staking.
    expect(env.devnet.requests.map((r) => r.service)).toEqual(['scan', 'stake']);

    env.devnet.resetRecords();
    expect(await env.gql(query, { variables })).toEqual(first);
    expect(env.devnet.requests.map((r) => `${r.service} ${r.path}`)).toEqual(firstCalls);
  });
});

describe('CDN headers', () => {
  const publicQuery = '{ validatorStatistics { totalValidators activeValidators } }';
  const getUrl = (base: string, query: string) => `${base}?query=${encodeURIComponent(query)}`;
  // A GET must carry a header a plain HTML form cannot set (CSRF prevention).
  const getHeaders = { accept: 'application/json', 'x-graphql-csrf': '1' };

  it('answers a public GET with public, max-age and an entity tag, and 304 when the caller has it', async () => {
    const url = getUrl('http://gateway.test/graphql', publicQuery);
    const first = await env.gateway.yoga.fetch(url, { headers: getHeaders });
    expect(first.status).toBe(200);
    expect(first.headers.get('cache-control')).toBe('public, max-age=60');
    const etag = first.headers.get('etag');
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{27}"$/);
    expect(await readAnswer(first)).toEqual({
      data: {
        validatorStatistics: {
          totalValidators: env.devnet.data.statistics.total_validators,
          activeValidators: env.devnet.data.statistics.active_validators,
        },
      },
    });

    const again = await env.gateway.yoga.fetch(url, {
      headers: { ...getHeaders, 'if-none-match': etag ?? '' },
    });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe('');
    expect(again.headers.get('etag')).toBe(etag);
    expect(again.headers.get('cache-control')).toBe('public, max-age=60');

    const stale = await env.gateway.yoga.fetch(url, {
      headers: { ...getHeaders, 'if-none-match': '"other"' },
    });
    expect(stale.status).toBe(200);
    expect(stale.headers.get('etag')).toBe(etag);
  });

  it('answers 304 with no body over a real socket', async () => {
    const url = getUrl(env.url, publicQuery);
    const first = await fetch(url, { headers: getHeaders });
    expect(first.status).toBe(200);
    const body = await first.text();
    const etag = first.headers.get('etag') ?? '';
    expect(etag).not.toBe('');
    expect(first.headers.get('cache-control')).toBe('public, max-age=60');
    expect(parseAnswer(body).data.validatorStatistics.totalValidators).toBe(
      env.devnet.data.statistics.total_validators,
    );

    const again = await fetch(url, { headers: { ...getHeaders, 'if-none-match': etag } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe('');
    expect(again.headers.get('etag')).toBe(etag);
  });

  it('answers a GET that selects a private field no-store, without an entity tag', async () => {
    const [delegator] = [...env.devnet.data.delegations.keys()];
    const query = `{ validatorStatistics { totalValidators } delegations(delegatorAddress: "${delegator}") { pageInfo { total } } }`;
    const res = await env.gateway.yoga.fetch(getUrl('http://gateway.test/graphql', query), {
      headers: getHeaders,
    });
    expect(res.status).toBe(200);
    expect((await readAnswer(res)).errors).toBeUndefined();
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('etag')).toBeNull();
  });

  it('answers a POST no-store, even for a public query, on Yoga’s path and on the socket', async () => {
    const post = () => ({
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ query: publicQuery }),
    });
    const viaYoga = await env.gateway.yoga.fetch('http://gateway.test/graphql', post());
    const viaSocket = await fetch(env.url, post());
    for (const res of [viaYoga, viaSocket]) {
      expect(res.status).toBe(200);
      expect((await readAnswer(res)).data.validatorStatistics.totalValidators).toBe(
        env.devnet.data.statistics.total_validators,
      );
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(res.headers.get('etag')).toBeNull();
    }
  });
});
