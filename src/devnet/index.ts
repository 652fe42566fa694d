import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { DevnetDialect } from '../config.js';
import { DevnetTokens } from './auth.js';
import { type Advance, DevnetChain } from './chain.js';
import { type DevnetData, generate } from './data.js';
import { createDialect, type Dialect, type DialectOptions } from './dialect.js';
import { createExplorerRoutes } from './explorer.js';
import { createService, HttpError, type RecordedRequest } from './http.js';
import { createScanRoutes } from './scan.js';
import { createStakeRoutes } from './stake.js';

export type { Advance } from './chain.js';
export type { RecordedRequest } from './http.js';

export interface DevnetOptions {
  seed?: string;
  token?: string;
  host?: string;
  /** Ports of the three services; 0 (the default) picks free ones. */
  ports?: { scan?: number; explorer?: number; stake?: number };
  /** The devnet's clock; the chain is generated to end just before its first reading. */
  now?: () => number;
  /** Added to every response, to simulate distant upstreams. */
  latencyMs?: number;
  /** Keep every request in `requests`, for tests that check what reached the upstreams. */
  record?: boolean;
  /**
   * How staking and the explorer answer: `spec` (upstream-api.md's snake_case, the default) or
   * `kratos` (the production go-kratos services, real-upstreams.md). Search is the same in both.
   */
  dialect?: DevnetDialect;
  /** Wrap every successful staking answer in `{ code: 0, message: "success", data }`. */
  stakeEnvelope?: boolean;
  /** The explorer envelope's `code` on success; default 0. */
  explorerSuccessCode?: number;
  /** The staking and explorer services' bech32 account prefix; default `biya` (spec), `byb` (kratos). */
  bech32Prefix?: string;
  /** A new block every so many ms (DEVNET_BLOCK_MS); 0 (the default here): only on `advance()`. */
  blockIntervalMs?: number;
  /** Bearer tokens accepted besides `token` (tests of several callers). */
  extraTokens?: readonly string[];
}

export interface Devnet {
  data: DevnetData;
  token: string;
  /** The wire dialect the devnet was started with, its defaults filled in. */
  dialect: Readonly<DialectOptions>;
  /**
   * An address held in `data` (a `0x…` account, a `biyavaloper1…` / `biyavalcons1…` validator
   * address) as the staking service sends it in this dialect.
   */
  stakeAddress(canonical: string): string;
  /** The same for the explorer (a failed transaction's signer, a contract's deployer). */
  explorerAddress(canonical: string): string;
  urls: { scan: string; explorer: string; stake: string };
  /** Requests received per service, always counted. */
  counts: { scan: number; explorer: number; stake: number };
  /** Every request received, when started with `record: true`. */
  requests: RecordedRequest[];
  resetRecords(): void;
  /** Changes the latency added to every response from now on. */
  setLatency(ms: number): void;
  /** Makes one service answer 503 to everything from now on (null: none). */
  setFailing(service: 'scan' | 'explorer' | 'stake' | null): void;
  /**
   * Holds every request to `service` (received and recorded, not answered) until the returned
   * function is called: a test's way to keep a caller waiting on an upstream for exactly as long as
   * it needs, without a delay.
   */
  hold(service: 'scan' | 'explorer' | 'stake'): () => void;
  /**
   * Moves the chain on by `blocks` blocks (new transactions, some failed; validators whose tokens,
   * jailing or commission change), deterministically for the seed and the advances made.
   */
  advance(blocks?: number): Advance;
  /** Accepts one more bearer token from now on, or no longer accepts one. */
  grantToken(token: string): void;
  revokeToken(token: string): void;
  close(): Promise<void>;
}

const DEFAULT_DEVNET_SEED = 'devnet';
const DEFAULT_DEVNET_TOKEN = 'devnet-token';

const listen = (server: Server, port: number, host: string) =>
  new Promise<string>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      const { port: actual } = server.address() as AddressInfo;
      resolve(`http://${host.includes(':') ? `[${host}]` : host}:${actual}`);
    });
  });

const close = (server: Server) =>
  new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });

/**
 * The devnet-only control, on the search service: `POST /_devnet/advance?blocks=N` moves the chain
 * on by N blocks (1 to 1000, default 1) and answers what it added, for a gateway process whose
 * devnet runs inside it.
 */
function controlRoutes(chain: DevnetChain) {
  return {
    '/_devnet/advance': {
      POST: ({ query }: { query: URLSearchParams }) => {
        const blocks = Number(query.get('blocks') ?? '1');
        if (!Number.isInteger(blocks) || blocks < 1 || blocks > 1000) {
          throw new HttpError(400, 'blocks must be an integer from 1 to 1000');
        }
        return { body: chain.advance(blocks) };
      },
    },
  };
}

/** What the three services share: the chain, the tokens, the clock, and the test controls' state. */
interface ServiceDeps {
  data: DevnetData;
  chain: DevnetChain;
  tokens: DevnetTokens;
  now: () => number;
  dialect: Dialect;
  controls: { latency: number; failing: string | null; held: Map<string, Promise<void>> };
  onRequest(req: RecordedRequest): void;
}

/** The three services, each a node:http server of its own (not listening yet). */
function createServices({ data, chain, tokens, now, dialect, controls, onRequest }: ServiceDeps) {
  const common = (name: string) => ({
    name,
    latencyMs: () => controls.latency,
    failing: () => controls.failing === name,
    held: () => controls.held.get(name) ?? null,
    onRequest,
  });
  return {
    scan: createService({
      ...common('scan'),
      routes: { ...createScanRoutes(data), ...controlRoutes(chain) },
      errorBody: (_status, message) => ({ error: message }),
    }),
    explorer: createService({
      ...common('explorer'),
      routes: createExplorerRoutes(data, tokens, now, dialect),
      errorBody: dialect.errorBody('explorer'),
    }),
    stake: createService({
      ...common('stake'),
      routes: createStakeRoutes(data, tokens, now, dialect),
      errorBody: dialect.errorBody('stake'),
    }),
  };
}

/** Generates the chain and starts the three services, each on its own origin as in production. */
export async function startDevnet(options: DevnetOptions = {}): Promise<Devnet> {
  const now = options.now ?? Date.now;
  const token = options.token ?? DEFAULT_DEVNET_TOKEN;
  const host = options.host ?? '127.0.0.1';
  const dialect = createDialect({
    name: options.dialect,
    stakeEnvelope: options.stakeEnvelope,
    explorerSuccessCode: options.explorerSuccessCode,
    bech32Prefix: options.bech32Prefix,
  });
  const data = generate({ seed: options.seed ?? DEFAULT_DEVNET_SEED, now: now() });
  const chain = new DevnetChain(data);
  const tokens = new DevnetTokens([token, ...(options.extraTokens ?? [])]);
  const counts = { scan: 0, explorer: 0, stake: 0 };
  const requests: RecordedRequest[] = [];
  const controls = {
    latency: options.latencyMs ?? 0,
    failing: null as string | null,
    held: new Map<string, Promise<void>>(),
  };
  const onRequest = (req: RecordedRequest) => {
    counts[req.service as keyof typeof counts]++;
    if (options.record) requests.push(req);
  };
  const services = createServices({ data, chain, tokens, now, dialect, controls, onRequest });
  const servers = Object.values(services);
  const ticking = options.blockIntervalMs
    ? setInterval(() => chain.advance(1), options.blockIntervalMs).unref()
    : undefined;
  try {
    const [scanUrl, explorerUrl, stakeUrl] = await Promise.all([
      listen(services.scan, options.ports?.scan ?? 0, host),
      listen(services.explorer, options.ports?.explorer ?? 0, host),
      listen(services.stake, options.ports?.stake ?? 0, host),
    ]);
    return {
      data,
      token,
      dialect: dialect.options,
      stakeAddress: dialect.address,
      explorerAddress: dialect.address,
      urls: { scan: scanUrl as string, explorer: explorerUrl as string, stake: stakeUrl as string },
      counts,
      requests,
      resetRecords() {
        requests.length = 0;
        counts.scan = counts.explorer = counts.stake = 0;
      },
      setLatency(ms) {
        controls.latency = ms;
      },
      setFailing(service) {
        controls.failing = service;
      },
      hold(service) {
        let release = () => {};
        const gate = new Promise<void>((resolve) => {
          release = resolve;
        });
        controls.held.set(service, gate);
        return () => {
          if (controls.held.get(service) === gate) controls.held.delete(service);
          release();
        };
      },
      advance: (blocks = 1) => chain.advance(blocks),
      grantToken: (t) => tokens.grant(t),
      revokeToken: (t) => tokens.revoke(t),
      close: async () => {
        clearInterval(ticking);
        await Promise.all(servers.map(close));
      },
    };
  } catch (error) {
    clearInterval(ticking);
    await Promise.all(servers.filter((s) => s.listening).map(close));
    throw error;
  }
}
