import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { type IncomingHttpHeaders, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createGateway } from '../../src/gateway.js';
import { buildGraphiQLOptions, graphiqlPageOptions } from '../../src/graphql/graphiql.js';
import { listen } from './helpers.js';

/**
 * GraphiQL's tabs (src/graphql/graphiql.ts): a welcome tab, then one per operation of operations/,
 * read on the first GraphiQL page. The browser test runs them in Chromium against the devnet.
 */

const OPERATIONS = readdirSync(new URL('../../operations/', import.meta.url))
  .filter((file) => file.endsWith('.graphql'))
  .map((file) => file.slice(0, -'.graphql'.length))
  .sort();

const WELCOME = 'query Welcome { __typename }';
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): URL {
  const dir = mkdtempSync(join(tmpdir(), 'graphiql-'));
  dirs.push(dir);
  return pathToFileURL(`${dir}/`);
}

const operationName = (query: string | null) =>
  /^(?:query|mutation|subscription) (\w+)/m.exec(query ?? '')?.[1];

describe('GraphiQL tabs', () => {
  it('opens a tab per operation of operations/, with `{}` and a placeholder token off the devnet', async () => {
    const options = await buildGraphiQLOptions({ title: 'Chain gateway', welcomeQuery: WELCOME });
    const headers = JSON.stringify({ Authorization: 'Bearer <your token>' }, null, 2);
    expect(options.title).toBe('Chain gateway');
    expect(options.headers).toBe(headers);
    const [welcome, ...tabs] = options.defaultTabs ?? [];
    expect(welcome).toEqual({ query: WELCOME, variables: null, headers });
    expect(tabs.map((tab) => operationName(tab.query))).toEqual(OPERATIONS);
    for (const tab of tabs) expect(tab).toMatchObject({ variables: '{}', headers });
  });

  it("gives each operation its variables and every tab the token when they're known", async () => {
    const options = await buildGraphiQLOptions({
      title: 'Chain gateway',
      welcomeQuery: WELCOME,
      token: 'devnet-token',
      variables: { BlockPage: { height: 12 }, Unknown: { x: 1 } },
    });
    const tabs = options.defaultTabs?.slice(1) ?? [];
    const block = tabs.find((tab) => operationName(tab.query) === 'BlockPage');
    expect(block?.variables).toBe(JSON.stringify({ height: 12 }, null, 2));
    expect(tabs.filter((tab) => tab.variables !== '{}')).toHaveLength(1);
    for (const tab of options.defaultTabs ?? [])
      expect(JSON.parse(tab.headers ?? '')).toEqual({ Authorization: 'Bearer devnet-token' });
  });

  it('reads the operation files on the first page, not before, and only once', async () => {
    const dir = tempDir();
    const options = graphiqlPageOptions({ title: 't', welcomeQuery: WELCOME, dir });
    // Written after the factory was made: what the first page shows.
    writeFileSync(new URL('B.graphql', dir), '# b\nquery Second($id: ID!) { node(id: $id) }\n');
    writeFileSync(new URL('A.graphql', dir), 'query First { a }\n');
    writeFileSync(new URL('notes.txt', dir), 'not an operation');
    const first = await options();
    expect(first.defaultTabs?.map((tab) => operationName(tab.query))).toEqual(['Welcome', 'First', 'Second']);
    writeFileSync(new URL('C.graphql', dir), 'query Third { c }\n');
    expect(await options()).toBe(first);
  });

  it('names a tab after its file when the document does not parse, and has no tabs without the folder', async () => {
    const dir = tempDir();
    writeFileSync(new URL('Broken.graphql', dir), 'query Broken {');
    const options = await buildGraphiQLOptions({ title: 't', welcomeQuery: WELCOME, dir });
    expect(options.defaultTabs?.map((tab) => tab.query)).toEqual([WELCOME, 'query Broken {']);
    const none = await buildGraphiQLOptions({
      title: 't',
      welcomeQuery: WELCOME,
      dir: new URL('missing/', dir),
    });
    expect(none.defaultTabs).toHaveLength(1);
  });

  it('puts the tabs in the GraphiQL page of a gateway on real upstreams', async () => {
    const gateway = createGateway({
      ...loadConfig({}),
      upstreamUrls: {
        scan: 'http://127.0.0.1:9',
        explorer: 'http://127.0.0.1:9',
        stake: 'http://127.0.0.1:9',
      },
    });
    try {
      const res = await gateway.yoga.fetch('http://gateway.test/graphql', {
        headers: { accept: 'text/html' },
      });
      expect(res.status).toBe(200);
      const html = await res.text();
      expect(html).toContain('<title>Chain gateway</title>');
      const json =
        /renderYogaGraphiQL\(\s*window\.document\.querySelector\('#root'\),\s*(\{.*\}),\s*\);/s.exec(
          html,
        )?.[1];
      const options = JSON.parse(json ?? 'null');
      expect(options.defaultTabs.map((tab: { query: string }) => operationName(tab.query))).toEqual([
        'Overview',
        ...OPERATIONS,
      ]);
      expect(options.defaultTabs.slice(1).map((tab: { variables: string }) => tab.variables)).toEqual(
        OPERATIONS.map(() => '{}'),
      );
    } finally {
      await gateway.close();
    }
  });
});

/** A GET of `url` over a real socket, its body as the bytes sent (fetch would decode them). */
function rawGet(
  url: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    request(url, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
      );
      res.on('error', reject);
    })
      .on('error', reject)
      .end();
  });
}

describe('the GraphiQL page', () => {
  it('is sent compressed as the browser accepts, with an entity tag, and 304 while unchanged', async () => {
    const gateway = createGateway({
      ...loadConfig({}),
      upstreamUrls: {
        scan: 'http://127.0.0.1:9',
        explorer: 'http://127.0.0.1:9',
        stake: 'http://127.0.0.1:9',
      },
    });
    const http = await listen(gateway);
    try {
      const page = (encoding: string, extra: Record<string, string> = {}) =>
        rawGet(http.url, { accept: 'text/html', 'accept-encoding': encoding, ...extra });
      const identity = await page('identity');
      const gzip = await page('gzip, deflate');
      const br = await page('gzip, deflate, br, zstd');
      expect([identity.status, gzip.status, br.status]).toEqual([200, 200, 200]);
      expect(identity.body.toString()).toContain('<title>Chain gateway</title>');
      expect(identity.headers['content-encoding']).toBeUndefined();
      expect(gzip.headers['content-encoding']).toBe('gzip');
      expect(br.headers['content-encoding']).toBe('br');
      expect(gunzipSync(gzip.body).equals(identity.body)).toBe(true);
      expect(brotliDecompressSync(br.body).equals(identity.body)).toBe(true);
      expect(gzip.body.length).toBeLessThan(identity.body.length / 3);
      // One page, one tag, whatever its encoding; revalidated on every load, never stale.
      const etag = identity.headers.etag as string;
      expect(etag).toMatch(/^W\/"[\w-]{20,}"$/);
      for (const answer of [identity, gzip, br]) {
        expect(answer.headers.etag).toBe(etag);
        expect(answer.headers['cache-control']).toBe('no-cache');
        expect(answer.headers.vary).toBe('origin, accept, accept-encoding');
      }
      const again = await page('gzip, deflate, br', { 'if-none-match': etag });
      expect(again.status).toBe(304);
      expect(again.body.length).toBe(0);
      expect(again.headers.etag).toBe(etag);
      const stale = await page('gzip', { 'if-none-match': 'W/"another"' });
      expect(stale.status).toBe(200);
      expect(stale.body.equals(gzip.body)).toBe(true);
    } finally {
      await http.close();
      await gateway.close();
    }
  });
});
