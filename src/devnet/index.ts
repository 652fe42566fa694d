import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DEVNET_PORT_VARIABLES, type DevnetDialect, listenError } from '../config.js';
import { DevnetTokens } from './auth.js';
import { type Advance, DevnetChain } from './chain.js';
import { type ChainClock, DEFAULT_BLOCK_MS, type DevnetData, generate, headAt } from './data.js';
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
  /**
   * The chain's genesis (ms since the epoch): its head is the height the clock has reached since,
   * one block every `blockIntervalMs`, so that a chain started again goes on where the clock is,
   * the same block at the same height. DEVNET_GENESIS for a chain that moves by itself
   * (`blockIntervalMs` > 0); unset for one that stands still: its 20,000th block 3 s before now.
   */
  genesis?: number;
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
  /**
   * A new block every so many ms (DEVNET_BLOCK_MS), as the clock reaches its height; 0 (the default
   * here): only on `advance()`.
   */
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
/** The genesis of a devnet's chain that moves by itself (see DevnetOptions.genesis). */
export const DEVNET_GENESIS = Date.UTC(2026, 0, 1);
const DEFAULT_DEVNET_TOKEN = 'devnet-token';

/** Listens on host:port; a port already taken rejects naming its variable (SCAN_PORT…). */
const listen = (server: Server, port: number, host: string, service: keyof typeof DEVNET_PORT_VARIABLES) =>
  new Promise<string>((resolve, reject) => {
    server.once('error', (error) => reject(listenError(DEVNET_PORT_VARIABLES[service], host, port, error)));
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

/** The chain's clock: on a genesis when there is one (see DevnetOptions.genesis), else anchored at now. */
function chainClock({ genesis, blockIntervalMs }: DevnetOptions): { clock?: ChainClock } {
  const genesisMs = genesis ?? (blockIntervalMs ? DEVNET_GENESIS : undefined);
  return genesisMs === undefined
    ? {}
    : { clock: { genesisMs, blockMs: blockIntervalMs || DEFAULT_BLOCK_MS } };
}

/**
 * A chain that moves by itself: at each height the clock reaches, the blocks up to it are appended
 * (after a sleep, in steps of DevnetChain's most).
 */
function tick(chain: DevnetChain, clock: ChainClock, now: () => number): { stop(): void } {
  let timer: NodeJS.Timeout | undefined;
  const schedule = () => {
    const next = clock.genesisMs + (headAt(clock, now()) + 1) * clock.blockMs;
    timer = setTimeout(step, Math.max(0, next - now())).unref();
  };
  const step = () => {
    chain.advanceTo(headAt(clock, now()));
    schedule();
  };
  schedule();
  return { stop: () => clearTimeout(timer) };
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
  const data = generate({ seed: options.seed ?? DEFAULT_DEVNET_SEED, now: now(), ...chainClock(options) });
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
  const ticking = options.blockIntervalMs ? tick(chain, data.clock, now) : undefined;
  try {
    const [scanUrl, explorerUrl, stakeUrl] = await Promise.all([
      listen(services.scan, options.ports?.scan ?? 0, host, 'scan'),
      listen(services.explorer, options.ports?.explorer ?? 0, host, 'explorer'),
      listen(services.stake, options.ports?.stake ?? 0, host, 'stake'),
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
        ticking?.stop();
        await Promise.all(servers.map(close));
      },
    };
  } catch (error) {
    ticking?.stop();
    await Promise.all(servers.filter((s) => s.listening).map(close));
    throw error;
  }
}
