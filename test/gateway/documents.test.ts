import { describe, expect, it } from 'vitest';
import type { Gateway } from '../../src/gateway.js';
import { parseAnswer, useGatewayOnDevnet } from './helpers.js';

/**
 * The prepared documents (src/graphql/pipeline/): one LRU bounded in entries and bytes, sizes in
 * /metrics, and queries compiled only once hot, answering byte for byte what the interpreter did.
 */

/** A metric's value as /metrics would report it (the first series, or the one with `labels`). */
async function metric(gateway: Gateway, name: string): Promise<number> {
  const found = await gateway.metrics.registry.getSingleMetric(name)?.get();
  if (!found) throw new Error(`no metric ${name}`);
  return found.values[0]?.value ?? 0;
}

/** Runs a document through a gateway (Yoga's fetch) and returns the answer's exact text. */
async function run(gateway: Gateway, query: string) {
  const res = await gateway.yoga.fetch('http://gateway.test/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query }),
  });
  expect(res.status).toBe(200);
  return res.text();
}

/** POSTs a document over the gateway's socket and returns the answer's exact text. */
async function post(url: string, query: string, variables: Record<string, unknown> = {}) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query, variables }),
  });
  expect(res.status).toBe(200);
  return res.text();
}

describe('the prepared-document cache', () => {
  const env = useGatewayOnDevnet({
    gateway: {
      documents: {
        maxEntries: 3,
        maxBytes: 1_000_000,
        keepAfter: 2,
        compileAfter: 3,
        compileWindowMs: 60_000,
      },
    },
  });
  env.serveOverHttp();

  it('keeps a document from its second use: the first leaves only its text, with the doorkeeper', async () => {
    const gateway = env.coldGateway();
    const query = `query Twice { validatorStatistics { totalValidators } }`;
    const sizes: [number, number][] = [];
    for (let i = 0; i < 2; i++) {
      parseAnswer(await run(gateway, query));
      sizes.push([
        await metric(gateway, 'graphql_document_cache_entries'),
        await metric(gateway, 'graphql_document_doorkeeper_entries'),
      ]);
    }
    expect(sizes).toEqual([
      [0, 1],
      [1, 0],
    ]);
    expect(await metric(gateway, 'graphql_document_cache_bytes')).toBe(2_048 + 80 * query.length);
  });

  it('remembers at most 4 × DOCUMENT_CACHE_ENTRIES texts not yet kept, however many arrive', async () => {
    const gateway = env.coldGateway();
    for (let i = 0; i < 15; i++)
      parseAnswer(await run(gateway, `query Once${i} { validatorStatistics { totalValidators } }`));
    expect(await metric(gateway, 'graphql_document_doorkeeper_entries')).toBe(12);
    expect(await metric(gateway, 'graphql_document_cache_entries')).toBe(0);
  });

  it('keeps at most DOCUMENT_CACHE_ENTRIES documents, evicting the least recently used', async () => {
    const gateway = env.coldGateway();
    const entries: number[] = [];
    for (let i = 0; i < 5; i++) {
      for (let use = 0; use < 2; use++) {
        const body = parseAnswer(
          await run(gateway, `query Q${i} { validatorStatistics { totalValidators } }`),
        );
        expect(Number(body.data.validatorStatistics.totalValidators)).toBeGreaterThan(0);
      }
      entries.push(await metric(gateway, 'graphql_document_cache_entries'));
    }
    expect(entries).toEqual([1, 2, 3, 3, 3]);
  });

  it('keeps at most DOCUMENT_CACHE_BYTES of them, however few entries that is', async () => {
    // Each of these is charged 2 KB + 80 bytes per character: two fit in the 875,000 bytes kept
    // documents may use (seven eighths of 1,000,000), not three.
    const padded = (i: number) =>
      `query Big${i} { validatorStatistics { totalValidators } } # ${'x'.repeat(5_000)}`;
    const gateway = env.coldGateway();
    for (let i = 0; i < 3; i++) for (let use = 0; use < 2; use++) parseAnswer(await run(gateway, padded(i)));
    const bytes = await metric(gateway, 'graphql_document_cache_bytes');
    expect(await metric(gateway, 'graphql_document_cache_entries')).toBe(2);
    expect(bytes).toBe(2 * (2_048 + 80 * padded(0).length));
  });

  it('interprets a query until its third use, then compiles it; both answer the same bytes', async () => {
    const query = `query Table($n: Int!) { validators(pageSize: $n) { pageInfo { total } nodes { moniker operatorAddress status tokens commission { rate } } } }`;
    const before = await metric(env.gateway, 'graphql_compilations_total');
    const answers: string[] = [];
    const compiledAfterEach: number[] = [];
    for (let i = 0; i < 4; i++) {
      answers.push(await post(env.url, query, { n: 50 }));
      compiledAfterEach.push((await metric(env.gateway, 'graphql_compilations_total')) - before);
    }
    expect(compiledAfterEach).toEqual([0, 0, 1, 1]);
    expect(await metric(env.gateway, 'graphql_compiled_operations')).toBe(1);
    expect(parseAnswer(answers[0] as string).data.validators.nodes).toHaveLength(50);
    for (const answer of answers) expect(answer).toBe(answers[0]);
  });

  it('answers errors alike, interpreted and compiled, located at every node of a merged field', async () => {
    // Partial data: one root field refused by its resolver (a malformed address), selected twice
    // under one response key (merged, so its error has two locations), and one field answered.
    const query = `query Mixed {
  delegations(delegatorAddress: "not-an-address") { pageInfo { total } }
  ... on Query { delegations(delegatorAddress: "not-an-address") { pageInfo { total } } }
  validatorStatistics { totalValidators }
}`;
    const before = await metric(env.gateway, 'graphql_compilations_total');
    const answers: string[] = [];
    const compiledAfterEach: number[] = [];
    for (let i = 0; i < 4; i++) {
      answers.push(await post(env.url, query));
      compiledAfterEach.push((await metric(env.gateway, 'graphql_compilations_total')) - before);
    }
    expect(compiledAfterEach).toEqual([0, 0, 1, 1]);
    expect(parseAnswer(answers[0] as string).errors[0].locations).toEqual([
      { line: 2, column: 3 },
      { line: 3, column: 18 },
    ]);
    const first = parseAnswer(answers[0] as string);
    expect(first.errors.map((e: { extensions: { code: string } }) => e.extensions.code)).toEqual([
      'BAD_USER_INPUT',
    ]);
    expect(Number(first.data.validatorStatistics.totalValidators)).toBeGreaterThan(0);
    for (const answer of answers) expect(answer).toBe(answers[0]);
  });

  it('keeps an empty operationName apart from an absent one, once the query is compiled', async () => {
    const query = `{ validatorStatistics { totalValidators } }`;
    const named = (operationName: string | null) =>
      fetch(env.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query, operationName }),
      }).then(async (res) => parseAnswer(await res.text()));
    for (let i = 0; i < 3; i++) expect((await named(null)).errors).toBeUndefined();
    const empty = await named('');
    expect(empty.data).toBeUndefined();
    expect(empty.errors.map((e: { extensions: { code: string } }) => e.extensions.code)).toEqual([
      'BAD_USER_INPUT',
    ]);
  });

  it('compiles the mutation once hot, answering as interpreted and sending one PUT per request', async () => {
    const before = await metric(env.gateway, 'graphql_compilations_total');
    const mutation = `mutation { updateBuybackRound(input: { roundId: "round-006", totalSlots: 120 }) { round { totalSlots } } }`;
    const answers: string[] = [];
    const compiledAfterEach: number[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await fetch(env.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${env.devnet.token}` },
        body: JSON.stringify({ query: mutation }),
      });
      answers.push(await res.text());
      compiledAfterEach.push((await metric(env.gateway, 'graphql_compilations_total')) - before);
    }
    // Compiled on its third execution (COMPILE_AFTER 3), as a query is.
    expect(compiledAfterEach).toEqual([0, 0, 1, 1]);
    expect(parseAnswer(answers[0] as string).data.updateBuybackRound.round.totalSlots).toBe(120);
    for (const answer of answers) expect(answer).toBe(answers[0]);
    expect(env.devnet.requests.filter((r) => r.method === 'PUT')).toHaveLength(4);
  });

  it('drops a compiled plan with its document when the document is evicted', async () => {
    const gateway = env.coldGateway();
    for (let i = 0; i < 3; i++)
      parseAnswer(await run(gateway, `query Hot { validatorStatistics { activeValidators } }`));
    expect(await metric(gateway, 'graphql_compiled_operations')).toBe(1);
    const bytes = await metric(gateway, 'graphql_document_cache_bytes');
    // The plan counts in the entry's bytes: 8 KB and 2 KB per field selected (two here).
    expect(bytes).toBe(
      2_048 + 80 * 'query Hot { validatorStatistics { activeValidators } }'.length + 8_192 + 2 * 2_048,
    );
    // Three other documents, each used twice, push it out of the three-entry cache.
    for (let i = 0; i < 3; i++)
      for (let use = 0; use < 2; use++)
        parseAnswer(await run(gateway, `query Push${i} { validatorStatistics { totalValidators } }`));
    expect(await metric(gateway, 'graphql_compiled_operations')).toBe(0);
  });
});

describe('the public response cache', () => {
  const env = useGatewayOnDevnet({ gateway: { responseCacheTtlMs: 60_000, responseCacheEntries: 2 } });

  it('keeps at most RESPONSE_CACHE_ENTRIES answers', async () => {
    for (const size of [1, 2, 3, 4]) {
      const res = await env.gql(`query($n: Int!) { validators(pageSize: $n) { nodes { moniker } } }`, {
        variables: { n: size },
      });
      expect(res.data.validators.nodes).toHaveLength(size);
    }
    expect(await metric(env.gateway, 'graphql_response_cache_entries')).toBe(2);
  });
});
