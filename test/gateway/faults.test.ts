import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type Devnet, startDevnet } from '../../src/devnet/index.js';
import { createGateway, type Gateway, type GatewayOptions } from '../../src/gateway.js';
import {
  type FaultMode,
  type FaultUpstream,
  LEAKY_TEXT,
  refusedUrl,
  startFaultUpstream,
} from '../support/fault-upstream.js';
import { graphql, listen, testSettings } from './helpers.js';

/**
 * Misbehaving upstreams: each fault gives its contract code, the healthy upstreams still answer in
 * the same response, nothing of the failure leaks, and the gateway keeps serving. Durations are
 * printed for the record, never asserted.
 */

const TIMEOUT_MS = 400;
let devnet: Devnet;
let stake: FaultUpstream;
let explorer: FaultUpstream;
let scan: FaultUpstream;
const gateways: Gateway[] = [];
const timings: string[] = [];

beforeAll(async () => {
  devnet = await startDevnet({ seed: 'faults' });
  [stake, explorer, scan] = await Promise.all([
    startFaultUpstream(devnet.urls.stake),
    startFaultUpstream(devnet.urls.explorer),
    startFaultUpstream(devnet.urls.scan),
  ]);
});

afterAll(async () => {
  await Promise.all(gateways.map((g) => g.close()));
  await Promise.all([stake.close(), explorer.close(), scan.close()]);
  await devnet.close();
  console.log(`fault timings (UPSTREAM_TIMEOUT_MS=${TIMEOUT_MS}):\n${timings.join('\n')}`);
});

function gatewayWith(overrides: Partial<GatewayOptions> = {}, urls: Partial<Devnet['urls']> = {}) {
  const gateway = createGateway({
    ...testSettings({ upstreamTimeoutMs: TIMEOUT_MS, circuitFailureThreshold: 1_000, ...overrides }),
    upstreamUrls: { scan: scan.url, explorer: explorer.url, stake: stake.url, ...urls },
  });
  gateways.push(gateway);
  return gateway;
}

const timed = async <T>(label: string, run: () => Promise<T>): Promise<T> => {
  const start = performance.now();
  const result = await run();
  timings.push(`${label.padEnd(28)} ${(performance.now() - start).toFixed(0).padStart(5)} ms`);
  return result;
};

describe('a misbehaving staking service next to a healthy search service', () => {
  const QUERY = '{ searchSuggestions(query: "7") { query } validatorStatistics { totalValidators } }';

  const faults: { mode: FaultMode | 'refused'; code: string }[] = [
    { mode: 'hang', code: 'UPSTREAM_TIMEOUT' },
    { mode: 'drip', code: 'UPSTREAM_TIMEOUT' },
    { mode: 'reset', code: 'UPSTREAM_UNAVAILABLE' },
    { mode: 'refused', code: 'UPSTREAM_UNAVAILABLE' },
    { mode: 'stacktrace500', code: 'UPSTREAM_ERROR' },
    { mode: 'invalidJson', code: 'UPSTREAM_ERROR' },
    { mode: 'wrongShape', code: 'UPSTREAM_ERROR' },
    { mode: 'huge', code: 'UPSTREAM_ERROR' },
  ];
  for (const { mode, code } of faults) {
    it(`${mode} → ${code} with partial data, no leak, and the next request served`, async () => {
      const gateway = mode === 'refused' ? gatewayWith({}, { stake: await refusedUrl() }) : gatewayWith();
      if (mode !== 'refused') stake.set('/stake/validators', mode);
      try {
        const res = await timed(`stake ${mode}`, () => graphql(gateway, QUERY));
        expect(res.status).toBe(200);
        expect(res.data).toEqual({ searchSuggestions: { query: '7' }, validatorStatistics: null });
        expect(res.errors).toEqual([
          expect.objectContaining({ path: ['validatorStatistics'], extensions: { code, upstream: 'stake' } }),
        ]);
        const text = JSON.stringify(res);
        for (const leak of [
          'SELECT',
          'pool.js',
          'handler.js',
          '127.0.0.1',
          'stake/validators',
          LEAKY_TEXT.slice(0, 20),
        ]) {
          expect(text).not.toContain(leak);
        }
      } finally {
        stake.set('/stake/validators', 'proxy');
      }
      const next = await graphql(gateway, '{ searchSuggestions(query: "8") { query } }');
      expect(next.data).toEqual({ searchSuggestions: { query: '8' } });
    });
  }

  it('maps an explorer envelope with a non-zero code under HTTP 200 to UPSTREAM_ERROR', async () => {
    explorer.set('/api/v1/transaction', 'envelopeError');
    try {
      const res = await timed('explorer envelopeError', () =>
        graphql(gatewayWith(), '{ failedTransactions { nodes { hash } } search(query: "5") { query } }', {
          token: devnet.token,
        }),
      );
      expect(res.data).toEqual({ failedTransactions: null, search: { query: '5' } });
      expect(res.errors?.[0]?.extensions).toEqual({ code: 'UPSTREAM_ERROR', upstream: 'explorer' });
      expect(JSON.stringify(res)).not.toContain('SELECT');
    } finally {
      explorer.set('/api/v1/transaction', 'proxy');
    }
  });
});

describe('circuit breaker', () => {
  it('opens after repeated failures, fails fast without calling, half-opens and recovers', async () => {
    const gateway = gatewayWith({ circuitFailureThreshold: 3, circuitHalfOpenMs: 300 });
    const query = '{ validatorStatistics { totalValidators } }';
    // The breaker reads Date.now(): a fake clock moves it exactly to the half-open moment.
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      stake.set('/stake/validators', 'stacktrace500');
      try {
        for (let i = 0; i < 3; i++) {
          expect((await graphql(gateway, query)).errors?.[0]?.extensions.code).toBe('UPSTREAM_ERROR');
        }
        const before = stake.requests.length;
        const open = await timed('stake circuit open', () => graphql(gateway, query));
        expect(open.errors?.[0]?.extensions).toEqual({ code: 'UPSTREAM_UNAVAILABLE', upstream: 'stake' });
        expect(stake.requests.length).toBe(before);
        expect(gateway.upstreams.circuits().stake).toBe('open');
        // The circuit is the upstream's state, not the pod's: still ready (contract.md §8).
        expect((await gateway.yoga.fetch('http://gateway.test/readyz')).status).toBe(200);
      } finally {
        stake.set('/stake/validators', 'proxy');
      }
      vi.advanceTimersByTime(300);
      const recovered = await graphql(gateway, query);
      expect(recovered.errors).toBeUndefined();
      expect(recovered.data.validatorStatistics.totalValidators).toBe('160');
      expect(gateway.upstreams.circuits().stake).toBe('closed');
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('response cache', () => {
  it('never keeps a failed answer', async () => {
    const gateway = gatewayWith({ responseCacheTtlMs: 60_000, validatorCacheTtlMs: 0 });
    const query = '{ validatorStatistics { totalValidators } }';
    stake.set('/stake/validators', 'stacktrace500');
    try {
      expect((await graphql(gateway, query)).data).toEqual({ validatorStatistics: null });
    } finally {
      stake.set('/stake/validators', 'proxy');
    }
    expect((await graphql(gateway, query)).data).toEqual({ validatorStatistics: { totalValidators: '160' } });
  });
});

describe('isolation', () => {
  it('answers search while a hanging explorer holds every one of its connections', async () => {
    const gateway = gatewayWith({ upstreamConnections: 2, upstreamTimeoutMs: 1_000 });
    explorer.set('/api/v1/transaction', 'hang');
    try {
      let explorerSettled = 0;
      const stuck = Array.from({ length: 8 }, () =>
        graphql(gateway, '{ failedTransactions { nodes { hash } } }', { token: devnet.token }).finally(() => {
          explorerSettled++;
        }),
      );
      const search = await timed('search beside hung explorer', () =>
        graphql(gateway, '{ searchSuggestions(query: "99") { counts { blocks } } }'),
      );
      const direct = await (await fetch(`${devnet.urls.scan}/api/v1/dex/search?q=99`)).json();
      expect(search.data.searchSuggestions.counts.blocks).toBe(direct.counts.blocks);
      expect(explorerSettled).toBe(0);
      for (const res of await Promise.all(stuck))
        expect(res.errors?.[0]?.extensions.code).toBe('UPSTREAM_TIMEOUT');
    } finally {
      explorer.set('/api/v1/transaction', 'proxy');
    }
  });

  it('gives each caller its own token and its own data, at the same moment', async () => {
    const gateway = gatewayWith();
    explorer.set('/api/v1/contract', 'echoToken');
    try {
      const tokens = Array.from({ length: 20 }, (_, i) => `caller-${i % 2 === 0 ? 'alice' : 'bob'}-${i}`);
      const answers = await Promise.all(
        tokens.map((token) =>
          graphql(gateway, '{ contractsBySymbol(symbol: "ECHO") { nodes { name } } }', { token }),
        ),
      );
      answers.forEach((res, i) => {
        expect(res.data.contractsBySymbol.nodes).toEqual([{ name: `Bearer ${tokens[i]}` }]);
      });
      const sent = explorer.requests
        .filter((r) => r.url.startsWith('/api/v1/contract'))
        .map((r) => r.headers.authorization);
      expect(sent.sort()).toEqual(tokens.map((t) => `Bearer ${t}`).sort());
    } finally {
      explorer.set('/api/v1/contract', 'proxy');
    }
  });
});

describe('the mutation', () => {
  it('is sent exactly once when the staking service fails mid-way, and says it may have been applied', async () => {
    const gateway = gatewayWith();
    stake.set('/stake/buyback', 'reset');
    try {
      const before = stake.requests.filter((r) => r.method === 'PUT').length;
      const res = await graphql(
        gateway,
        'mutation { updateBuybackRound(input: { roundId: "round-006", totalSlots: 120 }) { round { roundId } } }',
        { token: devnet.token },
      );
      // Sent, and no status came back: nobody knows whether it happened (contract.md §7).
      expect(res.errors?.[0]?.extensions).toEqual({
        code: 'UPSTREAM_UNAVAILABLE',
        upstream: 'stake',
        applied: null,
      });
      expect(res.errors?.[0]?.message).toMatch(/read the round before trying again/);
      expect(stake.requests.filter((r) => r.method === 'PUT').length).toBe(before + 1);
    } finally {
      stake.set('/stake/buyback', 'proxy');
    }
  });
});

describe('the mutation, accepted with an answer that cannot be read', () => {
  it('says the update was applied, so that the client does not retry it, and sends it once', async () => {
    const gateway = gatewayWith();
    stake.set('/stake/buyback', 'appliedUnreadable');
    try {
      const before = stake.requests.filter((r) => r.method === 'PUT').length;
      const res = await graphql(
        gateway,
        'mutation { updateBuybackRound(input: { roundId: "round-006", totalSlots: 130 }) { round { roundId } } }',
        { token: devnet.token },
      );
      expect(res.data).toBeNull();
      expect(res.errors?.[0]?.extensions).toEqual({
        code: 'UPSTREAM_ERROR',
        upstream: 'stake',
        applied: true,
      });
      expect(res.errors?.[0]?.message).toMatch(/accepted the update/);
      expect(stake.requests.filter((r) => r.method === 'PUT').length).toBe(before + 1);
      // It was applied: the devnet holds the new value.
      expect(devnet.data.rounds.get('round-006')?.total_slots).toBe(130);
    } finally {
      stake.set('/stake/buyback', 'proxy');
    }
  });
});

describe('a validator list whose server ignores paging', () => {
  it('is an UPSTREAM_ERROR after one read of each page, never a cut list or an endless loop', async () => {
    const gateway = gatewayWith();
    stake.set('/stake/validators', 'ignorePaging');
    try {
      const before = stake.requests.length;
      const res = await graphql(gateway, '{ validators(pageSize: 5) { nodes { moniker } } }');
      expect(res.data).toEqual({ validators: null });
      expect(res.errors?.[0]?.extensions).toEqual({ code: 'UPSTREAM_ERROR', upstream: 'stake' });
      expect(stake.requests.length - before).toBe(Math.ceil(devnet.data.validators.length / 100));
    } finally {
      stake.set('/stake/validators', 'proxy');
    }
  });
});

describe('a client that disconnects', () => {
  it('has its upstream call cancelled: the upstream connection closes and nothing is retried', async () => {
    const gateway = gatewayWith({ upstreamTimeoutMs: 30_000 });
    const http = await listen(gateway);
    scan.set('/api/v1/search', 'hang');
    const search = vi.spyOn(gateway.upstreams.scan, 'search');
    try {
      const before = scan.requests.length;
      const arrived = scan.nextRequest();
      const client = new AbortController();
      const pending = fetch(http.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: '{ search(query: "123") { query } }' }),
        signal: client.signal,
      }).catch((e: Error) => e.name);
      const upstreamCall = await arrived;
      expect(upstreamCall.url).toMatch(/^\/api\/v1\/search\?/);
      client.abort();
      expect(await pending).toBe('AbortError');
      await upstreamCall.closed;
      // The gateway's call, retries included, has ended with the client's disconnect: nothing follows it.
      expect(search).toHaveBeenCalledTimes(1);
      await expect(search.mock.results[0]?.value).rejects.toThrow('client disconnected');
      expect(scan.requests.length).toBe(before + 1);
    } finally {
      search.mockRestore();
      scan.set('/api/v1/search', 'proxy');
      await http.close();
    }
  });
});
