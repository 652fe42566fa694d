import { createHash } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { print } from 'graphql';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, expect, inject } from 'vitest';
import { loadConfig, type ServerLimits } from '../../src/config.js';
import { type Devnet, type DevnetOptions, startDevnet } from '../../src/devnet/index.js';
import { CONTRACT_CODES } from '../../src/errors.js';
import { createGateway, type Gateway, type GatewayOptions } from '../../src/gateway.js';
import { createGatewayServer, type GatewayServerSettings } from '../../src/http/node-server.js';
import { decodeAddress } from '../../src/lib/address.js';
import { encodeGlobalID } from '../../src/schema/ids.js';
import { type Listening, type Recorder, SocketPath } from '../support/production-path.js';
import { startRedis, type TestRedis } from '../support/redis.js';

export interface GraphQLResponse<T = any> {
  status: number;
  data?: T | null;
  errors?: { message: string; path?: (string | number)[]; extensions: Record<string, unknown> }[];
}

export interface RequestOptions {
  variables?: Record<string, unknown>;
  token?: string;
  headers?: Record<string, string>;
  /**
   * Over a socket (the 'spec, over a socket' project), send it without a warm-up: the document's
   * first request to its gateway, for a test of what a cold gateway's caches do.
   */
  cold?: boolean;
}

/** Whether this project sends the helpers' requests over a socket (vitest.config.ts). */
const overSocket = () => inject('overSocket') === true;

/** This file's listeners, warm-ups and records, in the socket project; closed after its tests. */
const socketPath = new SocketPath((gateway) => listen(gateway));
afterAll(() => socketPath.close());

/**
 * An upstream of a test's own whose records the test reads: the socket project's warm-ups take
 * their calls out of them, as they do out of the devnet's.
 */
export const hideWarmUpsFrom = (recorder: Recorder) => socketPath.keepsRecords(recorder);

/**
 * A GET, a health check or any other request to a gateway: through `yoga.fetch`, or over a socket to
 * the gateway's listener in the socket project. `path` is the part after the origin.
 */
export async function fetchGateway(
  gateway: Gateway,
  path: string,
  init: RequestInit = {},
): Promise<Response> {
  if (overSocket()) return socketPath.fetch(gateway, path, init);
  return await gateway.yoga.fetch(
    `http://gateway.test${path}`,
    init as Parameters<Gateway['yoga']['fetch']>[1],
  );
}

/**
 * A GraphQL answer's JSON text, parsed and checked: every error of it (or of each answer of a
 * batch) carries a code of contract.md §4. Every GraphQL answer the suite reads goes through here
 * (or `readAnswer`).
 */
export function parseAnswer(text: string): any {
  const body = JSON.parse(text);
  for (const answer of Array.isArray(body) ? body : [body]) {
    for (const error of answer.errors ?? []) expect(CONTRACT_CODES).toContain(error.extensions?.code);
  }
  return body;
}

/** `parseAnswer` of a response's body. */
export async function readAnswer(res: Response): Promise<any> {
  return parseAnswer(await res.text());
}

/**
 * Runs one GraphQL request through `yoga.fetch` (no socket between test and gateway), or, in the
 * socket project, over a socket to the gateway's listener, warmed so that it runs the prepared
 * request when its operation can have one (test/support/production-path.ts).
 */
export async function graphql<T = any>(
  gateway: Gateway,
  query: string | TypedDocumentNode<T, any>,
  options: RequestOptions = {},
): Promise<GraphQLResponse<T>> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json',
    ...options.headers,
  };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  const document = typeof query === 'string' ? query : print(query);
  const init = {
    method: 'POST',
    headers,
    body: JSON.stringify({ query: document, variables: options.variables }),
  };
  if (overSocket()) {
    const { status, text } = await socketPath.post(gateway, document, init, options.cold);
    return { status, ...parseAnswer(text) };
  }
  const res = await gateway.yoga.fetch('http://gateway.test/graphql', init);
  return { status: res.status, ...(await readAnswer(res)) };
}

/**
 * Gateway settings for tests: development defaults, and no caches shared between requests unless
 * asked, or unless the test project runs with the production cache defaults (vitest.config.ts).
 * No rate limit unless asked (`scale: { ...config.scale, rateLimitPoints: n }`): a suite sends far
 * more than a client's budget from one address.
 */
export function testSettings(overrides: Partial<GatewayOptions> = {}): Omit<GatewayOptions, 'upstreamUrls'> {
  const config = loadConfig({});
  // The production-caches project also keeps every document and compiles every query on its first
  // use, so that the domain suite runs once on graphql-jit's plans; the other projects run it on the
  // interpreting executor. The socket project prepares them from their first use too (one warm-up
  // makes a document's next request a prepared one), with no cache shared between requests.
  const onFirstUse = { documents: { ...config.documents, keepAfter: 1, compileAfter: 1 } };
  const caches = inject('productionCaches')
    ? onFirstUse
    : { validatorCacheTtlMs: 0, responseCacheTtlMs: 0, ...(overSocket() ? onFirstUse : {}) };
  // No block poller started by a latest answer (CHAIN_HEAD_HOLD_MS=0), whatever the overrides say:
  // its reads would be in every count of upstream calls, this test's and the next one's on the same
  // devnet. chain-height.test.ts sets it on the settings this returns.
  const live = { ...(overrides.live ?? config.live), headHoldMs: 0 };
  return { ...config, ...caches, scale: { ...config.scale, rateLimitPoints: 0 }, ...overrides, live };
}

/**
 * Live updates as the live tests run them: short polls, and room for a file's many subscribers
 * from one address (the caps have tests of their own).
 */
export const liveTestSettings = () => ({
  ...loadConfig({}).live,
  headHoldMs: 0,
  pollMs: 20,
  leaseMs: 1_000,
  catchUp: 50,
  maxSubscriptionsPerClient: 1_000,
});

/** Which dialect and variant the devnet speaks in this test project (see vitest.config.ts). */
export type DevnetVariant = Pick<DevnetOptions, 'dialect' | 'stakeEnvelope' | 'explorerSuccessCode'>;

declare module 'vitest' {
  export interface ProvidedContext {
    devnet: DevnetVariant;
    /** Whether gateways run with the production cache defaults (response and validator caches on). */
    productionCaches: boolean;
    /** Whether the helpers send requests over a socket to the gateway's listener, warmed (support/production-path.ts). */
    overSocket: boolean;
  }
}

/** The devnet options of the running test project: its dialect, and the seed the gateway tests use. */
export function devnetOptions(overrides: DevnetOptions = {}): DevnetOptions {
  return { seed: 'gateway-tests', ...inject('devnet'), ...overrides };
}

/**
 * A devnet (recording every request it receives) and a gateway over it, for one test file.
 * Records are cleared before each test, so a test sees only its own upstream traffic.
 */
export function useGatewayOnDevnet(
  options: { devnet?: DevnetOptions; gateway?: Partial<GatewayOptions> } = {},
) {
  let devnet: Devnet | undefined;
  let gateway: Gateway | undefined;
  let http: Listening | undefined;
  const fresh: Gateway[] = [];
  const serverSettings = () => ({ ...loadConfig({}), limits: testSettings(options.gateway).limits });
  beforeAll(async () => {
    devnet = await startDevnet(devnetOptions({ record: true, ...options.devnet }));
    gateway = createGateway({ ...testSettings(options.gateway), upstreamUrls: devnet.urls });
    socketPath.keepsRecords(devnet);
    // Over a socket, the file's gateway is served with its own body cap (as `serveOverHttp` serves it).
    if (overSocket()) socketPath.adopt(gateway, listen(gateway, undefined, serverSettings()));
  });
  afterAll(async () => {
    await Promise.all([gateway, ...fresh].map((g) => g?.close()));
    await devnet?.close();
  });
  beforeEach(() => devnet?.resetRecords());
  const env = {
    get devnet(): Devnet {
      if (!devnet) throw new Error('devnet not started');
      return devnet;
    },
    get gateway(): Gateway {
      if (!gateway) throw new Error('gateway not started');
      return gateway;
    },
    gql<T = any>(query: string | TypedDocumentNode<T, any>, opts?: RequestOptions) {
      return graphql<T>(env.gateway, query, opts);
    },
    /** A new gateway over the same devnet with the same settings (and `overrides`): its caches start cold. */
    coldGateway(overrides: Partial<GatewayOptions> = {}): Gateway {
      const cold = createGateway({
        ...testSettings({ ...options.gateway, ...overrides }),
        upstreamUrls: env.devnet.urls,
      });
      fresh.push(cold);
      return cold;
    },
    /** Serves another gateway of the file over a real socket; the caller closes it. */
    listenOn(gateway: Gateway) {
      return listen(gateway);
    },
    /** The gateway's /graphql URL on a real socket, served for the test file (see `listen`). */
    get url(): string {
      if (!http) throw new Error('socket not opened: call env.serveOverHttp() at the top of the file');
      return http.url;
    },
    serveOverHttp() {
      beforeAll(async () => {
        // The server's body cap is the gateway's (intake refuses a longer body before it is read).
        // Over a socket, the listener the helpers send to (closed with the others).
        http = overSocket()
          ? await socketPath.listening(env.gateway)
          : await listen(env.gateway, undefined, serverSettings());
      });
      afterAll(async () => {
        if (!overSocket()) await http?.close();
      });
    },
  };
  return env;
}

/**
 * Serves a gateway over real HTTP on 127.0.0.1, as main.ts does (with the default server limits
 * unless given, intake's included); resolves to its /graphql URL. `settings` are what the server
 * reads besides (the body cap, TRUST_PROXY, CORS): the defaults unless given, which a test that
 * changes them in its gateway passes here too.
 */
export async function listen(
  gateway: Gateway,
  limits: ServerLimits = loadConfig({}).server,
  settings: Omit<GatewayServerSettings, 'server'> = loadConfig({}),
): Promise<{ url: string; server: Server; close(): Promise<void> }> {
  const server = createGatewayServer({ ...gateway, upgrade: undefined }, { ...settings, server: limits });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`;
  return {
    url,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * How many requests ran a hot operation's prepared request, read from `/metrics` of the gateway
 * whose /graphql is `url` (served with its metrics on the same port, as tests serve it).
 */
export async function preparedRequests(url: string): Promise<number> {
  const text = await (await fetch(url.replace('/graphql', '/metrics'))).text();
  return Number(/^graphql_prepared_requests_total (\d+)$/m.exec(text)?.[1]);
}

/**
 * A recording devnet and a real Redis (Debian's redis-server) for one test file, and a client to
 * look into that Redis: flushed, and the devnet's records cleared, before each test.
 */
export function useDevnetAndRedis() {
  const env = {} as { devnet: Devnet; redis: TestRedis; inspect: Redis };
  beforeAll(async () => {
    env.redis = await startRedis();
    env.devnet = await startDevnet(devnetOptions({ record: true }));
    env.inspect = new Redis(env.redis.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
    // Errors while a test's Redis is stopped are expected; the commands themselves report them.
    env.inspect.on('error', () => {});
  });
  afterAll(async () => {
    env.inspect?.disconnect();
    await env.devnet?.close();
    await env.redis?.close();
  });
  beforeEach(async () => {
    await env.inspect.flushall();
    env.devnet.resetRecords();
  });
  return env;
}

/** A gateway over a real socket, and how to stop both. */
export interface ServedGateway {
  gateway: Gateway;
  /** Its /graphql URL. */
  url: string;
  close(): Promise<void>;
}

/** A gateway with `overrides` on `upstreamUrls` (a test's devnet), served over a real socket. */
export async function serveGateway(
  overrides: Partial<GatewayOptions>,
  upstreamUrls: GatewayOptions['upstreamUrls'],
): Promise<ServedGateway> {
  const gateway = createGateway({ ...testSettings(overrides), upstreamUrls });
  const http = await listen(gateway);
  return {
    gateway,
    url: http.url,
    close: async () => {
      await http.close();
      await gateway.close();
    },
  };
}

/** The global id the gateway gives an object: its type and key parts (src/schema/nodes.ts). */
export const idOf = (typename: string, ...parts: (string | null)[]): string =>
  encodeGlobalID(typename, JSON.stringify(parts));

/** An address's 20 bytes as 40 hex digits, whatever its encoding: how ids name addresses. */
export const bytesOf = (address: string): string => decodeAddress(address)?.hex as string;

/**
 * A document's APQ registration (`extensions.persistedQuery` with its SHA-256): a request sending
 * it is read on Yoga's own path, which proves the hash and keeps the document (the adapter declines
 * it). What tests send to reach Yoga's writers.
 */
export const registering = (query: string) => ({
  persistedQuery: { version: 1, sha256Hash: createHash('sha256').update(query).digest('hex') },
});

/**
 * The devnet's requests that no live poll made (a poll's request id is `live-<source>-<pid>-<n>`):
 * what a request's own answer read, while a block poller may run beside it (a latest answer keeps
 * one running: CHAIN_HEAD_HOLD_MS).
 */
export const notPolls = <R extends { headers: Record<string, unknown> }>(requests: readonly R[]): R[] =>
  requests.filter((r) => !String(r.headers['x-request-id']).startsWith('live-'));
