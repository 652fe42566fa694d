import { Client, cacheExchange, fetchExchange } from '@urql/core';
import { describe, expect, it } from 'vitest';
import { useGatewayOnDevnet } from './helpers.js';

/**
 * urql as its documentation starts it (`new Client({ url, exchanges })`), against the gateway on
 * the devnet over a real socket. urql 5+ (`@urql/core` 6+) sends a query as a GET when it fits in
 * a URL (`preferGetMethod: 'within-url-limit'`), with no header a plain form could not send: the
 * CSRF prevention refuses it, and its refusal names the header to send. With the README's
 * `fetchOptions`, the same client reads its data.
 */

const env = useGatewayOnDevnet();
env.serveOverHttp();

const QUERY = 'query Stats { validatorStatistics { totalValidators } }';

/** Every request the client sent: its method. */
function recording(methods: string[]): typeof fetch {
  return (input, init) => {
    methods.push(init?.method ?? 'GET');
    return fetch(input, init);
  };
}

describe('urql with its defaults', () => {
  it('sends a query as a GET, refused with an error that names x-graphql-csrf, before any upstream call', async () => {
    const methods: string[] = [];
    const client = new Client({
      url: env.url,
      exchanges: [cacheExchange, fetchExchange],
      fetch: recording(methods),
    });
    const result = await client.query(QUERY, {}).toPromise();
    expect(methods).toEqual(['GET']);
    expect(result.data).toBeUndefined();
    expect(result.error?.response?.status).toBe(403);
    expect(result.error?.graphQLErrors).toHaveLength(1);
    const [error] = result.error?.graphQLErrors ?? [];
    expect(error?.message).toBe(
      'CSRF prevention: send the header x-graphql-csrf: 1 (or apollo-require-preflight: true) with a GET, or use POST with content-type application/json.',
    );
    expect(error?.extensions.code).toBe('BAD_USER_INPUT');
    expect(env.devnet.requests).toEqual([]);
  });

  it("reads its data with the README's fetchOptions, still as a GET", async () => {
    const methods: string[] = [];
    const client = new Client({
      url: env.url,
      exchanges: [cacheExchange, fetchExchange],
      fetchOptions: { headers: { 'x-graphql-csrf': '1' } },
      fetch: recording(methods),
    });
    const result = await client.query(QUERY, {}).toPromise();
    expect(methods).toEqual(['GET']);
    expect(result.error).toBeUndefined();
    expect(result.data).toEqual({
      validatorStatistics: {
        __typename: 'ValidatorStatistics',
        totalValidators: String(env.devnet.data.validators.length),
      },
    });
  });
});
