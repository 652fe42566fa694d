import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { exampleVariables } from '../../src/devnet/examples.js';
import { preparedRequests, useGatewayOnDevnet } from './helpers.js';

/**
 * The socket project's own proof (vitest.config.ts runs this file there only): the domain tests'
 * requests reach the gateway's node:http listener and, warmed once per document, are answered by
 * their prepared requests, as hot requests are in production; a warm-up leaves nothing in the
 * records a test reads.
 */

const DIR = new URL('../../operations/', import.meta.url);
/** The frontends' queries and the mutation: every operation that can have a prepared request. */
const operations = readdirSync(DIR)
  .filter((file) => file.endsWith('.graphql'))
  .map((file) => readFileSync(new URL(file, DIR), 'utf8'))
  .filter((text) => !/^\s*subscription\b/m.test(text))
  .map((text) => ({ text, name: /^\s*(?:query|mutation)\s+(\w+)/m.exec(text)?.[1] as string }));

const env = useGatewayOnDevnet();
env.serveOverHttp();

/** graphql_requests_total of the gateway, read from its /metrics over the socket. */
async function requestsTotal(): Promise<number> {
  const text = await (await fetch(env.url.replace('/graphql', '/metrics'))).text();
  return [...text.matchAll(/^graphql_requests_total\{[^}]*\} (\d+)$/gm)].reduce(
    (n, m) => n + Number(m[1]),
    0,
  );
}

/** Each operation once, one after the other (each request's path is told by the counter's step). */
async function sendAll(): Promise<void> {
  for (const { text, name } of operations) {
    const res = await env.gql(text, {
      variables: exampleVariables(env.devnet.data)[name],
      token: env.devnet.token,
    });
    expect(res.errors, name).toBeUndefined();
  }
}

describe('the domain tests over a socket', () => {
  it('answers every frontend query and the mutation by its prepared request, warmed once per document', async () => {
    expect(operations.length).toBe(9);
    const [prepared, requests] = [await preparedRequests(env.url), await requestsTotal()];
    await sendAll();
    // One warm-up and one prepared request per document.
    expect(await preparedRequests(env.url)).toBe(prepared + operations.length);
    expect(await requestsTotal()).toBe(requests + 2 * operations.length);
    // Sent again: no warm-up, every request prepared.
    await sendAll();
    expect(await preparedRequests(env.url)).toBe(prepared + 2 * operations.length);
    expect(await requestsTotal()).toBe(requests + 3 * operations.length);
  });

  it("leaves the warm-up's upstream calls out of the records: a test sees its own request's", async () => {
    const text = 'query Fresh($q: String!) { searchSuggestions(query: $q) { query } }';
    const before = await preparedRequests(env.url);
    const res = await env.gql(text, { variables: { q: '4242' } });
    expect(res.data).toEqual({ searchSuggestions: { query: '4242' } });
    expect(await preparedRequests(env.url)).toBe(before + 1);
    expect(env.devnet.requests.map((r) => new URLSearchParams(r.query).get('q'))).toEqual(['4242']);
    expect(env.devnet.counts).toEqual({ scan: 1, explorer: 0, stake: 0 });
  });
});
