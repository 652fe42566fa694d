import { RequestCache } from '@pothos/plugin-scope-auth';
import { request } from 'undici';
import { describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { parseAnswer, preparedRequests, useGatewayOnDevnet } from './helpers.js';

/**
 * What a request leaves behind once it is answered. Pothos' scope-auth keeps each context's scopes
 * in a WeakMap keyed by the context, and the entry holds the context. Left there, the entry lives
 * until V8's next full collection, and keeps the whole request alive through every scavenge on
 * the way (docs/performance.md): the gateway deletes it when the execution is done
 * (`useScopeRelease`, graphql/yoga.ts), on both paths.
 */

// Every document kept and compiled from its first use: the first request of an operation runs
// envelop's hooks, the next ones its prepared request.
const env = useGatewayOnDevnet({
  gateway: { documents: { ...loadConfig({}).documents, keepAfter: 1, compileAfter: 1 } },
});
env.serveOverHttp();

const MUTATION = `mutation Release($input: UpdateBuybackRoundInput!) {
  updateBuybackRound(input: $input) { round { roundId totalSlots } }
}`;
const EXPLORER = `query ReleaseContracts { contractsBySymbol(symbol: "USDT") { nodes { address } } }`;

/** Posts one request over the socket; resolves to its parsed answer. */
async function post(query: string, variables: Record<string, unknown>, token: string | null) {
  const res = await request(env.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: JSON.stringify({ query, variables }),
  });
  return { status: res.statusCode, body: parseAnswer(await res.body.text()) };
}

/**
 * The scope caches the requests of `send` made, each with the context it was made for; read from
 * scope-auth's own `fromContext`, which is called through (not replaced).
 */
async function cachesMadeBy(send: () => Promise<unknown>) {
  const spy = vi.spyOn(RequestCache, 'fromContext');
  try {
    await send();
    return spy.mock.calls.map(([context, builder], i) => ({
      context,
      builder,
      cache: spy.mock.results[i]?.value as unknown,
    }));
  } finally {
    spy.mockRestore();
  }
}

/** Whether scope-auth still holds this cache for its context: asking again would hand it back. */
const stillHeld = ({ context, builder, cache }: Awaited<ReturnType<typeof cachesMadeBy>>[number]) =>
  RequestCache.fromContext(context as object, builder) === cache;

/** How many requests' contexts the caches were made for. */
const contexts = (made: Awaited<ReturnType<typeof cachesMadeBy>>) => new Set(made.map((m) => m.context)).size;

describe('a request’s scope cache', () => {
  it('is released once the mutation is answered, on envelop’s path and on the prepared path', async () => {
    const before = await preparedRequests(env.url);
    for (const totalSlots of [101, 102, 103]) {
      const made = await cachesMadeBy(async () => {
        const { status, body } = await post(
          MUTATION,
          { input: { roundId: 'round-006', totalSlots } },
          env.devnet.token,
        );
        expect(status).toBe(200);
        expect(body).toEqual({
          data: { updateBuybackRound: { round: { roundId: 'round-006', totalSlots } } },
        });
      });
      expect(contexts(made)).toBe(1);
      expect(made.filter(stillHeld).length).toBe(0);
    }
    // The first request made the operation hot; the next two ran its prepared request.
    expect((await preparedRequests(env.url)) - before).toBe(2);
  });

  it('is released when the scope refuses the caller (no token), and the refusal still reaches no upstream', async () => {
    for (let i = 0; i < 2; i++) {
      const made = await cachesMadeBy(async () => {
        const { body } = await post(MUTATION, { input: { roundId: 'round-006', totalSlots: 104 } }, null);
        expect(body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
      });
      expect(contexts(made)).toBe(1);
      expect(made.filter(stillHeld).length).toBe(0);
    }
    expect(env.devnet.requests).toEqual([]);
  });

  it('is released after an explorer read that checked the caller’s scope', async () => {
    for (let i = 0; i < 2; i++) {
      const made = await cachesMadeBy(async () => {
        const { body } = await post(EXPLORER, {}, env.devnet.token);
        expect(body.errors).toBeUndefined();
      });
      expect(contexts(made)).toBe(1);
      expect(made.filter(stillHeld).length).toBe(0);
    }
  });
});
