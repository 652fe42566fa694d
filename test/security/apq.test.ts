import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateway, type Gateway } from '../../src/gateway.js';
import { readAnswer, testSettings, useGatewayOnDevnet } from '../gateway/helpers.js';
import { hasRedis, startRedis, type TestRedis } from '../support/redis.js';
import { until } from '../support/until.js';

/**
 * Attacks on Apollo's automatic persisted queries (contract.md §7): a document is registered under
 * a hash only when the hash is the SHA-256 of its exact text and `version` is 1; a document read
 * back from Redis is hashed again; registration is charged by size; Redis holds at most
 * APQ_REDIS_BYTES of documents.
 */

const env = useGatewayOnDevnet();

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const persisted = (sha256Hash: string, version: unknown = 1) => ({ persistedQuery: { version, sha256Hash } });

async function post(gateway: Gateway, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  const res = await gateway.yoga.fetch('http://gateway.test/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await readAnswer(res) };
}

const CONSOLE_QUERY = 'query Op { validatorStatistics { totalValidators } }';
const MUTATION =
  'mutation Op { updateBuybackRound(input: { roundId: "round-006", totalSlots: 7 }) { round { roundId } } }';

const stakeWrites = () => env.devnet.requests.filter((r) => r.service === 'stake' && r.method !== 'GET');

describe('APQ registration proves its hash', () => {
  const versions = [
    { label: 'version 2', version: 2 },
    { label: 'version "1" (a string)', version: '1' },
    { label: 'no version', version: undefined },
    { label: 'version 0', version: 0 },
  ];
  for (const { label, version } of versions) {
    it(`refuses a document sent under another document’s hash with ${label}, and registers nothing`, async () => {
      const gateway = env.coldGateway();
      const token = env.devnet.token;
      const hash = sha256(CONSOLE_QUERY);
      const planted = await post(gateway, { query: MUTATION, extensions: persisted(hash, version) });
      expect(planted.body.errors?.[0]?.extensions.code).toBe('BAD_USER_INPUT');
      expect(planted.body.data).toBeUndefined();
      // The operator's console, with its token, asks by the hash of its own query.
      const victim = await post(
        gateway,
        { extensions: persisted(hash) },
        { authorization: `Bearer ${token}` },
      );
      expect(victim.body.errors?.[0]?.extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
      expect(stakeWrites()).toEqual([]);
    });
  }

  it('refuses a version-1 registration whose hash is not its text’s, and registers nothing', async () => {
    const gateway = env.coldGateway();
    const hash = sha256(CONSOLE_QUERY);
    const planted = await post(gateway, { query: MUTATION, extensions: persisted(hash) });
    expect(planted.body.errors?.[0]?.extensions.code).toBe('BAD_USER_INPUT');
    const victim = await post(gateway, { extensions: persisted(hash) });
    expect(victim.body.errors?.[0]?.extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
    expect(stakeWrites()).toEqual([]);
    expect(env.devnet.requests).toEqual([]);
  });

  it('refuses a hash that is not 64 hex digits', async () => {
    const upper = sha256(CONSOLE_QUERY).toUpperCase();
    const res = await post(env.coldGateway(), { query: CONSOLE_QUERY, extensions: persisted(upper) });
    expect(res.body.errors?.[0]?.extensions.code).toBe('BAD_USER_INPUT');
    expect(env.devnet.requests).toEqual([]);
  });

  it('registers a document under its own hash, and runs it by hash alone (the positive control)', async () => {
    const gateway = env.coldGateway();
    const hash = sha256(CONSOLE_QUERY);
    expect(
      (await post(gateway, { query: CONSOLE_QUERY, extensions: persisted(hash) })).body.errors,
    ).toBeUndefined();
    const byHash = await post(gateway, { extensions: persisted(hash) });
    expect(byHash.body.data.validatorStatistics.totalValidators).toEqual(expect.any(String));
  });
});

describe('APQ registration is charged by size', () => {
  it('charges a registration its size beside its cost, and only the registration', async () => {
    const gateway = env.coldGateway({ scale: { ...testSettings().scale, rateLimitPoints: 100 } });
    // The document is a cheap introspection of one field padded with a comment: cost 1.
    const query = `{ __typename } # ${'x'.repeat(8_000)}`;
    const hash = sha256(query);
    // 8 KB of document is more than the budget of 100 points at one point per 64 bytes.
    const registration = await post(gateway, { query, extensions: persisted(hash) });
    expect(registration.status).toBe(429);
    expect(registration.body.errors?.[0]?.extensions.code).toBe('RATE_LIMITED');
    expect((await post(gateway, { extensions: persisted(hash) })).body.errors?.[0]?.extensions.code).toBe(
      'PERSISTED_QUERY_NOT_FOUND',
    );
    // The same document sent plainly is charged its cost alone: it runs.
    const plain = env.coldGateway({ scale: { ...testSettings().scale, rateLimitPoints: 100 } });
    expect((await post(plain, { query })).body).toEqual({ data: { __typename: 'Query' } });
  });
});

describe('APQ in Redis', () => {
  let redis: TestRedis;
  let client: Redis;
  const gateways: Gateway[] = [];
  const onRedis = (
    overrides: { apq?: { maxEntries: number; maxBytes: number; redisBytes: number } } = {},
  ) => {
    const settings = testSettings();
    const gateway = createGateway({
      ...settings,
      ...overrides,
      scale: { ...settings.scale, redisUrl: redis.url, redisTimeoutMs: 1_000 },
      upstreamUrls: env.devnet.urls,
    });
    gateways.push(gateway);
    return gateway;
  };
  /** The deployment's hash of documents in Redis, once `hash` is there (registrations follow their answers). */
  const registered = async (hash: string): Promise<string> => {
    let key: string | undefined;
    await until(
      async () => {
        [key] = await client.keys('*{apq}:documents');
        return key !== undefined && (await client.hexists(key, hash)) === 1;
      },
      { what: `the document of hash ${hash} registered in Redis` },
    );
    return key as string;
  };
  beforeAll(async () => {
    // A security test never turns into a skip: without redis-server it fails.
    if (!hasRedis) throw new Error('redis-server is missing: apt-get install redis-server');
    redis = await startRedis();
    client = new Redis(redis.url);
  });
  afterAll(async () => {
    await Promise.all(gateways.map((g) => g.close()));
    client?.disconnect();
    await redis?.close();
  });

  it('hashes a document read from Redis again: a poisoned entry is a miss', async () => {
    const [a, b] = [onRedis(), onRedis()];
    const hash = sha256(CONSOLE_QUERY);
    expect(
      (await post(a, { query: CONSOLE_QUERY, extensions: persisted(hash) })).body.errors,
    ).toBeUndefined();
    // Someone with write access to Redis (or a corruption) replaces the document under the hash.
    const documents = await registered(hash);
    await client.hset(documents, hash, MUTATION);
    env.devnet.resetRecords();
    const onB = await post(
      b,
      { extensions: persisted(hash) },
      { authorization: `Bearer ${env.devnet.token}` },
    );
    expect(onB.body.errors?.[0]?.extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
    expect(stakeWrites()).toEqual([]);
  });

  it('keeps at most APQ_REDIS_BYTES of documents, and never evicts the keys that share Redis', async () => {
    await client.set('chain-gateway:rate-limit:v1:someone', '5');
    const redisBytes = 200_000;
    const gateway = onRedis({ apq: { maxEntries: 10_000, maxBytes: 100_000_000, redisBytes } });
    // 60 documents of 10 KB each: 600 KB, three times the bound.
    for (let i = 0; i < 60; i++) {
      const query = `{ __typename } # ${i} ${'y'.repeat(10_000)}`;
      const res = await post(gateway, { query, extensions: persisted(sha256(query)) });
      expect(res.body.errors).toBeUndefined();
    }
    // Registrations reach Redis after their answers: wait until the last one is there.
    const last = `{ __typename } # 59 ${'y'.repeat(10_000)}`;
    const documents = await registered(sha256(last));
    let stored = 0;
    for (const value of Object.values(await client.hgetall(documents))) stored += Buffer.byteLength(value);
    expect(stored).toBeGreaterThan(redisBytes / 2);
    expect(stored).toBeLessThanOrEqual(redisBytes);
    expect(await client.get('chain-gateway:rate-limit:v1:someone')).toBe('5');
    // The latest documents are the ones kept: the last registered runs by hash on a new instance.
    expect((await post(onRedis(), { extensions: persisted(sha256(last)) })).body).toEqual({
      data: { __typename: 'Query' },
    });
  });
});
