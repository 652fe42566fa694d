import { describe, expect, it } from 'vitest';
import { useGatewayOnDevnet } from './helpers.js';

/**
 * The node:http fast path must answer exactly as Yoga does: same status, media type and body,
 * for successes and for every kind of error. Each request goes both ways and is compared.
 */

const env = useGatewayOnDevnet();
env.serveOverHttp();

interface Exchange {
  status: number;
  type: string | null;
  body: string;
}

async function both(body: string, headers: Record<string, string> = {}): Promise<[Exchange, Exchange]> {
  const init = { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body };
  const read = async (res: Response): Promise<Exchange> => ({
    status: res.status,
    type: res.headers.get('content-type'),
    body: await res.text(),
  });
  return [
    await read(await fetch(env.url, init)),
    await read(await env.gateway.yoga.fetch('http://gateway.test/graphql', init)),
  ];
}

const request = (query: string, variables?: Record<string, unknown>) => JSON.stringify({ query, variables });

describe('fast path parity with Yoga', () => {
  it.each([
    ['a query with variables', request('query($h: Int!) { block(height: $h) { height hash } }', { h: 42 })],
    [
      'a 100-row page',
      request('{ validators(pageSize: 100) { nodes { moniker tokens commission { rate } } } }'),
    ],
    ['an input error in a resolver', request('{ validators(page: 0) { nodes { moniker } } }')],
    ['a validation error', request('{ validatorz { moniker } }')],
    ['a syntax error', request('{ validators( }')],
    [
      'a variable that does not coerce',
      request('query($h: Int!) { block(height: $h) { hash } }', { h: 'x' }),
    ],
    ['a missing variable', request('query($h: Int!) { block(height: $h) { hash } }')],
    ['a field that needs a token', request('{ failedTransactions { nodes { hash } } }')],
    ['an unknown operation name', JSON.stringify({ query: '{ __typename }', operationName: 'Nope' })],
    [
      'a cost over the limit',
      request(
        '{ searchSuggestions(query: "0x") { addresses { delegations(pageSize: 100) { nodes { shares } } } } }',
      ),
    ],
    [
      'a mutation refused before any upstream call',
      request(
        'mutation { updateBuybackRound(input: { roundId: "r", totalSlots: 0 }) { round { roundId } } }',
      ),
    ],
  ])('answers %s alike', async (_label, body) => {
    const [fast, yoga] = await both(body, { authorization: 'Bearer not-used-here' });
    expect(fast).toEqual(yoga);
  });

  it.each([
    ['a batch', JSON.stringify([{ query: '{ __typename }' }])],
    ['invalid JSON', '{"query": '],
    ['a body without a query', JSON.stringify({ variables: {} })],
    [
      'an extensions field',
      JSON.stringify({ query: '{ __typename }', extensions: { persistedQuery: { version: 1 } } }),
    ],
  ])('hands %s to Yoga with its body intact', async (_label, body) => {
    const [fast, yoga] = await both(body);
    expect(fast).toEqual(yoga);
    expect(fast.status).toBeGreaterThanOrEqual(200);
  });

  it('leaves other media types to Yoga', async () => {
    const [fast, yoga] = await both(request('{ validatorz }'), {
      accept: 'application/graphql-response+json',
    });
    expect(fast).toEqual(yoga);
    expect(fast.status).toBe(400);
  });
});
