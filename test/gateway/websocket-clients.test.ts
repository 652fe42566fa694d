import type { AddressInfo } from 'node:net';
import { type Client, createClient } from 'graphql-ws';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { loadConfig } from '../../src/config.js';
import { createGatewayServer } from '../../src/http/node-server.js';
import { MAX_CLIENT_LABELS } from '../../src/ops/metrics.js';
import { parseAnswer, useGatewayOnDevnet } from './helpers.js';

/**
 * The client a WebSocket's operations name, as HTTP requests name theirs
 * (`apollographql-client-name`/`-version`, or Hive's `graphql-client-name`/`-version`): from the
 * upgrade request's headers (a server-side client), or from `connectionParams`, where a browser,
 * which cannot set an upgrade's headers, puts them (as keys of their own, or in a `headers`
 * object as Apollo's GraphQLWsLink users do). Read off /metrics, bounded as HTTP's labels are.
 */

const env = useGatewayOnDevnet();

let base: string;
let close: () => Promise<void>;
beforeAll(async () => {
  const server = createGatewayServer(env.gateway, loadConfig({}));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
});
afterAll(async () => {
  await close?.();
});

const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.dispose()));
});

/** A graphql-ws client whose upgrade carries `headers` and whose connection_init carries `connectionParams`. */
function client({
  headers,
  connectionParams,
}: {
  headers?: Record<string, string>;
  connectionParams?: Record<string, unknown>;
} = {}): Client {
  class WithHeaders extends WebSocket {
    constructor(address: string, protocols?: string | string[]) {
      super(address, protocols, { headers });
    }
  }
  const made = createClient({
    url: `ws://${base}/graphql`,
    webSocketImpl: WithHeaders,
    retryAttempts: 0,
    ...(connectionParams ? { connectionParams } : {}),
  });
  clients.push(made);
  return made;
}

/** Runs one query to its end; its single result. */
function query(c: Client, text = '{ __typename }'): Promise<any> {
  return new Promise((resolve, reject) => {
    let result: unknown;
    c.subscribe(
      { query: text },
      {
        next: (value) => {
          result = parseAnswer(JSON.stringify(value));
        },
        error: reject,
        complete: () => resolve(result),
      },
    );
  });
}

/** `graphql_client_requests_total` of this name and version (ok outcomes), from /metrics. */
async function counted(name: string, version: string): Promise<number> {
  const text = await (await fetch(`http://${base}/metrics`)).text();
  const line = text
    .split('\n')
    .find((l) =>
      l.startsWith(
        `graphql_client_requests_total{client_name="${name}",client_version="${version}",outcome="ok"} `,
      ),
    );
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

describe('the client a WebSocket names', () => {
  it("takes a server-side client's name and version from the upgrade request's headers", async () => {
    const c = client({
      headers: { 'apollographql-client-name': 'ws-upgrade', 'apollographql-client-version': '1.0.0' },
    });
    await query(c);
    await query(c);
    expect(await counted('ws-upgrade', '1.0.0')).toBe(2);
  });

  it("takes a browser's from connectionParams, as keys of their own or in a `headers` object", async () => {
    await query(
      client({
        connectionParams: {
          'apollographql-client-name': 'ws-params',
          'apollographql-client-version': '2.0.0',
        },
      }),
    );
    // Apollo's GraphQLWsLink users pass their HttpLink's headers, in any case.
    await query(
      client({
        connectionParams: {
          headers: { 'Apollographql-Client-Name': 'ws-headers', 'apollographql-client-version': '3.0.0' },
        },
      }),
    );
    // Hive's names too, and connectionParams before the upgrade's headers.
    await query(
      client({
        headers: { 'graphql-client-name': 'ws-upgrade-loses' },
        connectionParams: { 'graphql-client-name': 'ws-hive', 'graphql-client-version': '4' },
      }),
    );
    expect(await counted('ws-params', '2.0.0')).toBe(1);
    expect(await counted('ws-headers', '3.0.0')).toBe(1);
    expect(await counted('ws-hive', '4')).toBe(1);
    expect(await counted('ws-upgrade-loses', 'unknown')).toBe(0);
  });

  it('bounds them as HTTP does: cleaned, cut to 64 characters, and what is not a string ignored', async () => {
    const name = `ws<script>${'x'.repeat(100)}`;
    await query(
      client({ connectionParams: { 'apollographql-client-name': name, 'apollographql-client-version': 7 } }),
    );
    const overHttp = await fetch(`http://${base}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'apollographql-client-name': name },
      body: JSON.stringify({ query: '{ __typename }' }),
    });
    expect(overHttp.status).toBe(200);
    await overHttp.text();
    expect(await counted(`ws_script_${'x'.repeat(54)}`, 'unknown')).toBe(2);
    // A `headers` that is not an object names nothing, and refuses nothing.
    const answered = await query(client({ connectionParams: { headers: 'ws-not-an-object' } }));
    expect(answered).toEqual({ data: { __typename: 'Query' } });
  });

  it('keeps a flood of names over sockets within the labels HTTP is held to', async () => {
    for (let i = 0; i < MAX_CLIENT_LABELS + 5; i++) {
      const c = client({ connectionParams: { 'apollographql-client-name': `ws-flood-${i}` } });
      await query(c);
      await c.dispose();
    }
    const text = await (await fetch(`http://${base}/metrics`)).text();
    const names = new Set(
      [...text.matchAll(/^graphql_client_requests_total\{client_name="([^"]*)"/gm)].map(([, n]) => n),
    );
    // Whatever this file's earlier tests named: the first MAX_CLIENT_LABELS names, then `other`.
    expect([...names].filter((n) => n !== 'unknown' && n !== 'other')).toHaveLength(MAX_CLIENT_LABELS);
    expect(names.has('other')).toBe(true);
  });
});
