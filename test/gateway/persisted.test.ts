import { readFileSync } from 'node:fs';
import { print } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SearchBoxDocument } from '../../operations/generated/graphql.js';
import { loadPersistedOperations } from '../../src/config.js';
import { createGateway, type Gateway } from '../../src/gateway.js';
import { listen, readAnswer, testSettings, useGatewayOnDevnet } from './helpers.js';

/** PERSISTED_OPERATIONS with the manifest graphql-codegen writes for operations/. */

const MANIFEST = new URL('../../operations/generated/persisted-documents.json', import.meta.url).pathname;
const env = useGatewayOnDevnet();
let gateway: Gateway;
let http: Awaited<ReturnType<typeof listen>>;

beforeAll(async () => {
  gateway = createGateway({
    ...testSettings(),
    upstreamUrls: env.devnet.urls,
    persistedOperations: loadPersistedOperations(MANIFEST),
  });
  http = await listen(gateway);
});
afterAll(async () => {
  await http.close();
  await gateway.close();
});

const post = async (body: unknown) => {
  const res = await fetch(http.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await readAnswer(res) };
};

describe('persisted operations', () => {
  it('covers every operation of operations/', () => {
    const manifest = JSON.parse(readFileSync(MANIFEST, 'utf8'));
    // Eight queries, the mutation and four subscriptions.
    expect(Object.keys(manifest)).toHaveLength(13);
    for (const id of Object.keys(manifest)) expect(id).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it('runs a known operation by documentId or by Apollo’s sha256Hash', async () => {
    const id = (SearchBoxDocument as unknown as { __meta__: { hash: string } }).__meta__.hash;
    const byId = await post({ documentId: id, variables: { query: '123' } });
    expect(byId.status).toBe(200);
    expect(byId.body.data.searchSuggestions.blocks[0].height).toBe(123);
    const byHash = await post({
      variables: { query: '124' },
      extensions: { persistedQuery: { version: 1, sha256Hash: id.replace('sha256:', '') } },
    });
    expect(byHash.body.data.searchSuggestions.blocks[0].height).toBe(124);
  });

  it('refuses any other document, even one identical to a persisted operation, before any upstream call', async () => {
    env.devnet.resetRecords();
    for (const query of ['{ __typename }', print(SearchBoxDocument)]) {
      const res = await post({ query, variables: { query: '1' } });
      expect(res.body.data).toBeUndefined();
      expect(res.body.errors[0]).toMatchObject({
        message: 'Only persisted operations are accepted.',
        extensions: { code: 'BAD_USER_INPUT' },
      });
    }
    const unknown = await post({ documentId: `sha256:${'0'.repeat(64)}` });
    expect(unknown.body.errors[0].message).toBe('Unknown persisted operation.');
    expect(env.devnet.requests).toHaveLength(0);
  });

  // Looked up by the manifest's own entries only: ids that name members of every JavaScript object
  // are unknown ids, not a 500 (contract.md §7).
  it.each(['constructor', '__proto__', 'toString', 'hasOwnProperty', 'sha256:constructor'])(
    'answers the id %s as an unknown persisted operation, before any upstream call',
    async (documentId) => {
      const res = await post({ documentId });
      expect(res.status).toBe(200);
      expect(res.body.errors).toEqual([
        { message: 'Unknown persisted operation.', extensions: { code: 'BAD_USER_INPUT' } },
      ]);
      expect(env.devnet.requests).toEqual([]);
    },
  );

  it('refuses to start on a manifest that is not one', () => {
    expect(() => loadPersistedOperations('/nonexistent.json')).toThrow(/cannot read/);
    expect(() => loadPersistedOperations(new URL('../../package.json', import.meta.url).pathname)).toThrow(
      /not a document string/,
    );
  });
});
