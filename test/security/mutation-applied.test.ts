import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Devnet, startDevnet } from '../../src/devnet/index.js';
import { createGateway, type Gateway, type GatewayOptions } from '../../src/gateway.js';
import {
  devnetOptions,
  type GraphQLResponse,
  graphql,
  listen,
  readAnswer,
  testSettings,
} from '../gateway/helpers.js';
import {
  type FaultMode,
  type FaultUpstream,
  refusedUrl,
  startFaultUpstream,
} from '../support/fault-upstream.js';
import { until } from '../support/until.js';

/**
 * The mutation never hides whether it happened (contract.md §7): every error of
 * `updateBuybackRound` says `applied: true` when staking answered 2xx (whatever became of the
 * body), `false` when the request never reached staking or staking refused it, and `null` when it
 * was sent and no status came back (the client must read the round before trying again). It is
 * sent once, never retried: each case counts the PUTs staking received.
 */

const TIMEOUT_MS = 500;
const ROUND = 'round-006';
const MUTATION =
  'mutation ($input: UpdateBuybackRoundInput!) { updateBuybackRound(input: $input) { round { roundId totalSlots } } }';

let devnet: Devnet;
/** Staking behind a fault upstream; search and the explorer are the devnet's own. */
let stake: FaultUpstream;
let gateway: Gateway;
const extra: Gateway[] = [];

beforeAll(async () => {
  devnet = await startDevnet(devnetOptions({ seed: 'mutation-applied', record: true }));
  stake = await startFaultUpstream(devnet.urls.stake);
  gateway = gatewayWith();
});
afterAll(async () => {
  await Promise.all([gateway, ...extra].map((g) => g.close()));
  await stake.close();
  await devnet.close();
});
beforeEach(() => {
  devnet.resetRecords();
  stake.requests.length = 0;
});
afterEach(() => {
  for (const prefix of ['/stake/buyback', '/stake/validators', '/stake/delegator'])
    stake.set(prefix, 'proxy');
  stake.release();
});

function gatewayWith(overrides: Partial<GatewayOptions> = {}, stakeUrl = stake.url): Gateway {
  const made = createGateway({
    ...testSettings({ upstreamTimeoutMs: TIMEOUT_MS, circuitFailureThreshold: 1_000, ...overrides }),
    upstreamUrls: { ...devnet.urls, stake: stakeUrl },
  });
  if (gateway) extra.push(made);
  return made;
}

/** Sends the update through `via`, with the devnet's token unless `token` says otherwise. */
const update = (
  input: Record<string, unknown>,
  { via = gateway, token = devnet.token }: { via?: Gateway; token?: string | null } = {},
) => graphql(via, MUTATION, { variables: { input }, ...(token ? { token } : {}) });

/** PUTs that reached the fault upstream, and PUTs that went on to the devnet's staking service. */
const putsReceived = () => stake.requests.filter((r) => r.method === 'PUT').length;
const putsApplied = () => devnet.requests.filter((r) => r.method === 'PUT').length;
const slotsOf = (roundId: string) => devnet.data.rounds.get(roundId)?.total_slots;

/** The one error of a failed mutation (the field is non-null: no data). */
function theError(res: GraphQLResponse) {
  expect(res.status).toBe(200);
  expect(res.data).toBeNull();
  expect(res.errors).toHaveLength(1);
  const [error] = res.errors ?? [];
  expect(error?.path).toEqual(['updateBuybackRound']);
  return error as NonNullable<typeof error>;
}

/** Staking misbehaves as `mode` for the update: the answer's error, and how many PUTs it received. */
async function updateWhile(mode: FaultMode, totalSlots: number) {
  stake.set('/stake/buyback', mode);
  const res = await update({ roundId: ROUND, totalSlots });
  return theError(res);
}

describe('applied: true — staking answered 2xx', () => {
  const answers: { mode: FaultMode; label: string; totalSlots: number }[] = [
    { mode: 'appliedUnreadable', label: 'a body that is not JSON', totalSlots: 131 },
    { mode: 'appliedCut', label: 'a body cut mid-way', totalSlots: 132 },
    { mode: 'appliedStall', label: 'a body that stalls past UPSTREAM_TIMEOUT_MS', totalSlots: 133 },
    { mode: 'appliedHuge', label: 'a body over the response size cap', totalSlots: 134 },
  ];
  for (const { mode, label, totalSlots } of answers) {
    it(`${mode} (${label}): UPSTREAM_ERROR, applied: true, one PUT`, async () => {
      const error = await updateWhile(mode, totalSlots);
      expect(error.extensions).toEqual({ code: 'UPSTREAM_ERROR', upstream: 'stake', applied: true });
      expect(error.message).toMatch(/accepted the update/);
      expect(error.message).toMatch(/read the round/);
      expect(putsReceived()).toBe(1);
      // It did happen: the devnet holds the new value.
      expect(putsApplied()).toBe(1);
      expect(slotsOf(ROUND)).toBe(totalSlots);
    });
  }
});

describe('applied: null — sent, and no status came back', () => {
  const faults: { mode: FaultMode; label: string; code: string }[] = [
    { mode: 'reset', label: 'connection closed after the request was read', code: 'UPSTREAM_UNAVAILABLE' },
    { mode: 'tcpReset', label: 'connection reset after the request was read', code: 'UPSTREAM_UNAVAILABLE' },
    { mode: 'hang', label: 'no headers within UPSTREAM_TIMEOUT_MS', code: 'UPSTREAM_TIMEOUT' },
  ];
  for (const { mode, label, code } of faults) {
    it(`${mode} (${label}): ${code}, applied: null, read the round first, one PUT`, async () => {
      const before = slotsOf(ROUND);
      const error = await updateWhile(mode, 141);
      expect(error.extensions).toEqual({ code, upstream: 'stake', applied: null });
      expect(error.message).toMatch(/may have been applied/);
      expect(error.message).toMatch(/read the round before trying again/i);
      expect(putsReceived()).toBe(1);
      // This fault upstream never passed it on; the client could not know that.
      expect(putsApplied()).toBe(0);
      expect(slotsOf(ROUND)).toBe(before);
    });
  }
});

describe('applied: false — staking answered non-2xx', () => {
  it('an unknown round (404): BAD_USER_INPUT, applied: false, one PUT', async () => {
    const error = theError(await update({ roundId: 'round-404', totalSlots: 150 }));
    expect(error.extensions).toEqual({ code: 'BAD_USER_INPUT', upstream: 'stake', applied: false });
    expect(putsReceived()).toBe(1);
    expect(putsApplied()).toBe(1);
  });

  it('a token staking refuses (401): UNAUTHENTICATED, applied: false, one PUT', async () => {
    const before = slotsOf(ROUND);
    const error = theError(await update({ roundId: ROUND, totalSlots: 151 }, { token: 'not-the-token' }));
    expect(error.extensions).toEqual({ code: 'UNAUTHENTICATED', upstream: 'stake', applied: false });
    expect(putsReceived()).toBe(1);
    expect(slotsOf(ROUND)).toBe(before);
  });

  it('a 500 with a stack trace: UPSTREAM_ERROR, applied: false, one PUT, no leak', async () => {
    const error = await updateWhile('stacktrace500', 152);
    expect(error.extensions).toEqual({ code: 'UPSTREAM_ERROR', upstream: 'stake', applied: false });
    expect(JSON.stringify(error)).not.toContain('SELECT');
    expect(putsReceived()).toBe(1);
    expect(putsApplied()).toBe(0);
  });

  it('a 2xx whose envelope refuses it (code ≠ 0): UPSTREAM_ERROR, applied: false, one PUT', async () => {
    const error = await updateWhile('envelopeError', 153);
    expect(error.extensions).toEqual({ code: 'UPSTREAM_ERROR', upstream: 'stake', applied: false });
    expect(putsReceived()).toBe(1);
  });
});

describe('applied: false — the request never reached staking', () => {
  it('connection refused: UPSTREAM_UNAVAILABLE, applied: false, nothing received', async () => {
    const before = slotsOf(ROUND);
    const refused = gatewayWith({}, await refusedUrl());
    const error = theError(await update({ roundId: ROUND, totalSlots: 161 }, { via: refused }));
    expect(error.extensions).toEqual({ code: 'UPSTREAM_UNAVAILABLE', upstream: 'stake', applied: false });
    expect(putsReceived()).toBe(0);
    expect(putsApplied()).toBe(0);
    expect(slotsOf(ROUND)).toBe(before);
  });

  it('circuit open: UPSTREAM_UNAVAILABLE, applied: false, no PUT', async () => {
    const tripped = gatewayWith({ circuitFailureThreshold: 1, circuitHalfOpenMs: 600_000 });
    stake.set('/stake/validators', 'stacktrace500');
    const read = await graphql(tripped, '{ validatorStatistics { totalValidators } }');
    expect(read.errors?.[0]?.extensions.code).toBe('UPSTREAM_ERROR');
    expect(tripped.upstreams.circuits().stake).toBe('open');
    const error = theError(await update({ roundId: ROUND, totalSlots: 162 }, { via: tripped }));
    expect(error.extensions).toEqual({ code: 'UPSTREAM_UNAVAILABLE', upstream: 'stake', applied: false });
    expect(putsReceived()).toBe(0);
    expect(putsApplied()).toBe(0);
  });

  it('bulkhead full: UPSTREAM_UNAVAILABLE, applied: false, no PUT', async () => {
    // One connection: one call in flight, eight queued, the rest refused at once.
    const full = gatewayWith({ upstreamConnections: 1, upstreamTimeoutMs: 60_000 });
    const DELEGATIONS =
      '{ delegations(delegatorAddress: "0x1111111111111111111111111111111111111111") { nodes { shares } } }';
    // The first read learns staking's account encoding; each one after is a single GET.
    expect((await graphql(full, DELEGATIONS)).errors).toBeUndefined();
    stake.set('/stake/delegator', 'held');
    const reads = Array.from({ length: 12 }, () => graphql(full, DELEGATIONS));
    let refused = 0;
    for (const read of reads) {
      void read.then((res) => {
        if (res.errors?.[0]?.extensions.code === 'UPSTREAM_UNAVAILABLE') refused++;
      });
    }
    await until(() => refused === 3, { what: 'the three reads beyond the bulkhead refused' });
    const before = stake.requests.length;
    const error = theError(await update({ roundId: ROUND, totalSlots: 163 }, { via: full }));
    expect(error.extensions).toEqual({ code: 'UPSTREAM_UNAVAILABLE', upstream: 'stake', applied: false });
    expect(stake.requests.length).toBe(before);
    expect(putsReceived()).toBe(0);
    stake.set('/stake/delegator', 'proxy');
    stake.release();
    const answers = await Promise.all(reads);
    expect(answers.filter((res) => res.errors === undefined)).toHaveLength(9);
  });

  it('input refused before any call: BAD_USER_INPUT, applied: false, no PUT', async () => {
    for (const [input, argument] of [
      [{ roundId: ROUND, totalSlots: 0 }, 'input.totalSlots'],
      [{ roundId: '' }, 'input.roundId'],
      [{ roundId: ROUND, minAmount: '10', maxAmount: '9' }, 'input.minAmount'],
      [
        { roundId: ROUND, startTime: '2031-01-02T00:00:00Z', endTime: '2031-01-01T00:00:00Z' },
        'input.startTime',
      ],
    ] as const) {
      const error = theError(await update(input));
      expect(error.extensions).toEqual({ code: 'BAD_USER_INPUT', argument, applied: false });
    }
    expect(putsReceived()).toBe(0);
  });

  it('no token: UNAUTHENTICATED, applied: false, no PUT', async () => {
    const error = theError(await update({ roundId: ROUND, totalSlots: 164 }, { token: null }));
    expect(error.extensions).toEqual({ code: 'UNAUTHENTICATED', applied: false });
    expect(putsReceived()).toBe(0);
  });
});

describe('over a real socket (the node:http transport)', () => {
  it('carries applied to the client the same way: null after a reset, one PUT', async () => {
    const http = await listen(gateway);
    try {
      stake.set('/stake/buyback', 'reset');
      const res = await fetch(http.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          authorization: `Bearer ${devnet.token}`,
        },
        body: JSON.stringify({ query: MUTATION, variables: { input: { roundId: ROUND, totalSlots: 171 } } }),
      });
      const error = theError({ status: res.status, ...(await readAnswer(res)) });
      expect(error.extensions).toEqual({ code: 'UPSTREAM_UNAVAILABLE', upstream: 'stake', applied: null });
      expect(putsReceived()).toBe(1);
    } finally {
      await http.close();
    }
  });
});

describe('refused before it runs', () => {
  it('says applied: false when the rate limit or the price refuses the mutation, and sends nothing', async () => {
    const limited = gatewayWith({ scale: { ...testSettings().scale, rateLimitPoints: 1 } });
    const overBudget = await update({ roundId: ROUND, totalSlots: 9 }, { via: limited });
    expect(overBudget.errors?.[0]?.extensions).toMatchObject({ code: 'RATE_LIMITED', applied: false });
    const costly = gatewayWith({ limits: { ...testSettings().limits, complexity: 1 } });
    const overPrice = await update({ roundId: ROUND, totalSlots: 9 }, { via: costly });
    expect(overPrice.errors?.[0]?.extensions).toMatchObject({
      code: 'BAD_USER_INPUT',
      limit: 'complexity',
      applied: false,
    });
    const badVariables = await graphql(gateway, MUTATION, {
      variables: { input: { roundId: 7 } },
      token: devnet.token,
    });
    expect(badVariables.errors?.[0]?.extensions).toEqual({ code: 'BAD_USER_INPUT', applied: false });
    expect(putsReceived()).toBe(0);
  });
});
