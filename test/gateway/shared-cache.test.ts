import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createGateway, deploymentSecret, type Gateway } from '../../src/gateway.js';
import { deploymentPrefix } from '../../src/scale/redis.js';
import { SHARED_FORMAT_VERSION, sharedKeyPrefix } from '../../src/scale/shared-cache.js';
import { printedSchema } from '../../src/schema/print.js';
import { hasRedis } from '../support/redis.js';
import { until } from '../support/until.js';
import { graphql, testSettings, useDevnetAndRedis } from './helpers.js';

/**
 * REDIS_URL: the validator list and public answers shared by two gateway instances through a real
 * Redis, over one devnet that records every upstream request. Each test starts from an empty Redis
 * and two new gateways (cold first levels).
 */

const VALIDATOR_TABLE = `query ValidatorTable($page: Int, $pageSize: Int) {
  validatorStatistics { totalValidators activeValidators }
  validators(page: $page, pageSize: $pageSize) { pageInfo { total totalPages } nodes { moniker operatorAddress tokens } }
}`;
const PORTFOLIO = `query Portfolio($delegator: String!) {
  delegations(delegatorAddress: $delegator, pageSize: 5) { nodes { shares validator { moniker } } }
}`;
const UPSTREAM_TIMEOUT_MS = 5_000;

interface Instance {
  gateway: Gateway;
  lines: Record<string, unknown>[];
}

describe.runIf(hasRedis)('caches shared through Redis (REDIS_URL)', () => {
  const env = useDevnetAndRedis();
  let instances: Instance[] = [];

  afterEach(async () => {
    await Promise.all(instances.map((i) => i.gateway.close()));
    instances = [];
  });

  const settings = () => {
    const base = testSettings();
    return testSettings({
      validatorCacheTtlMs: 60_000,
      responseCacheTtlMs: 60_000,
      upstreamTimeoutMs: UPSTREAM_TIMEOUT_MS,
      // One process runs the tests, two gateways and the devnet on one event loop (on a machine
      // that may be busy): a stall of a few hundred ms must not pass for a slow Redis here.
      scale: { ...base.scale, redisUrl: env.redis.url, redisTimeoutMs: 1_000, rateLimitPoints: 0 },
    });
  };

  /** A gateway on the devnet and the test's Redis, with its log lines at hand. */
  function instance(): Instance {
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        const line = JSON.parse(chunk.toString());
        lines.push(line);
        done();
      },
    });
    const gateway = createGateway({
      ...settings(),
      upstreamUrls: env.devnet.urls,
      logger: pino({ level: 'info' }, sink),
    });
    const made: Instance = {
      gateway,
      lines,
    };
    instances.push(made);
    return made;
  }

  const validatorPages = () => env.devnet.requests.filter((r) => r.path === '/stake/validators');
  const pagesOfOneList = () => Math.ceil(env.devnet.data.validators.length / 100);
  const keys = async () => (await env.inspect.keys('*')).sort();
  /** The deployment's key prefix: the shared caches' version, then the id of its secret. */
  const prefix = () =>
    deploymentPrefix(
      sharedKeyPrefix(printedSchema(), { urls: env.devnet.urls, dialects: settings().dialects }),
      deploymentSecret({ ...settings(), upstreamUrls: env.devnet.urls }),
    );
  const metricsOf = async (gateway: Gateway) =>
    (await gateway.yoga.fetch('http://gateway.test/metrics')).text();
  const metric = (text: string, series: string) => {
    const line = text.split('\n').find((l) => l.startsWith(`${series} `));
    return line === undefined ? undefined : Number(line.slice(series.length + 1));
  };
  const isDown = (l: Record<string, unknown>) => l.redis === 'down' && /shared caches/.test(String(l.msg));
  const isUp = (l: Record<string, unknown>) => l.redis === 'up' && /shared caches/.test(String(l.msg));
  /** Delegators that are not a validator's wallet, with the devnet's address of each. */
  const delegators = (n: number) => {
    const wallets = new Set(env.devnet.data.validators.map((v) => v.wallet_address.toLowerCase()));
    return [...env.devnet.data.delegations.keys()]
      .filter((a) => !wallets.has(a.toLowerCase()))
      .slice(0, n)
      .map((a) => env.devnet.stakeAddress(a));
  };

  /** An instance's /readyz: its status and body. */
  const readyz = async (i: Instance) => {
    const ready = await i.gateway.yoga.fetch('http://gateway.test/readyz');
    return { status: ready.status, body: await ready.json() };
  };
  type Ready = Awaited<ReturnType<typeof readyz>>;
  /** The keys in Redis but the locks: stored answers and lists. */
  const entries = async () => (await keys()).filter((k) => !k.endsWith(':lock'));
  /** The entries once the answer and the validator list are both stored (written after answering). */
  const storedAnswerAndList = async () => {
    let stored: string[] = [];
    await until(
      async () => {
        stored = await entries();
        return stored.length === 2;
      },
      { within: 1_000, what: 'the answer and the list stored in Redis' },
    );
    return stored;
  };

  /** Until each instance's /readyz reports Redis up (its connection is made). */
  const connected = (...all: Instance[]) =>
    Promise.all(
      all.map(async (i) => {
        let ready: Ready | undefined;
        await until(
          async () => {
            ready = await readyz(i);
            return ready.body.redis === 'up';
          },
          { within: 5_000, what: "an instance's /readyz reporting Redis up" },
        );
        expect(ready?.body).toMatchObject({ redis: 'up' });
      }),
    );

  it('answers on the second instance from Redis, with no upstream call', async () => {
    const [a, b] = [instance(), instance()];
    await connected(a, b);
    env.devnet.resetRecords(); // /readyz pings the upstreams
    const first = await graphql(a.gateway, VALIDATOR_TABLE, { variables: { pageSize: 7 } });
    expect(first.errors).toBeUndefined();
    expect(validatorPages()).toHaveLength(pagesOfOneList());
    // The first instance stores the answer and the list without holding its answer back for it.
    const stored = await storedAnswerAndList();
    expect(stored).toHaveLength(2);

    env.devnet.resetRecords();
    const second = await graphql(b.gateway, VALIDATOR_TABLE, { variables: { pageSize: 7 } });
    expect(second).toEqual(first);
    expect(env.devnet.requests).toHaveLength(0);
    expect(
      metric(await metricsOf(b.gateway), 'shared_cache_requests_total{cache="responses",result="hit"}'),
    ).toBe(1);

    // The validator list alone: a portfolio (private, never shared) joins its validators from the
    // list the first instance read: only the delegations call reaches the upstreams.
    const [delegator] = delegators(1);
    const portfolio = await graphql(b.gateway, PORTFOLIO, { variables: { delegator } });
    expect(portfolio.errors).toBeUndefined();
    expect(portfolio.data.delegations.nodes[0].validator.moniker).toEqual(expect.any(String));
    expect(env.devnet.requests.map((r) => r.path)).toEqual(['/stake/delegator/delegations']);
    expect(
      metric(await metricsOf(b.gateway), 'shared_cache_requests_total{cache="validators",result="hit"}'),
    ).toBe(1);
  });

  it('makes one upstream read of the validator list for concurrent misses on both instances', async () => {
    const [a, b] = [instance(), instance()];
    await connected(a, b);
    env.devnet.resetRecords(); // /readyz pings the upstreams
    const people = delegators(4);
    // Ten requests at once, five on each instance, none answerable from another's answer: public
    // tables of different sizes and private portfolios, all joining the one validator list.
    const answers = await Promise.all(
      [a, b].flatMap((i, n) => [
        ...[3, 4, 5].map((pageSize) =>
          graphql(i.gateway, VALIDATOR_TABLE, { variables: { pageSize: pageSize + 3 * n } }),
        ),
        ...people
          .slice(2 * n, 2 * n + 2)
          .map((delegator) => graphql(i.gateway, PORTFOLIO, { variables: { delegator } })),
      ]),
    );
    for (const answer of answers) expect(answer.errors).toBeUndefined();
    expect(validatorPages()).toHaveLength(pagesOfOneList());
    expect(env.devnet.requests.filter((r) => r.path === '/stake/delegator/delegations')).toHaveLength(4);
    expect(env.devnet.requests).toHaveLength(pagesOfOneList() + 4);
    // The instance that did not read the list waited for the other's read.
    const lookups = await Promise.all(
      [a, b].map(async (i) => {
        const text = await metricsOf(i.gateway);
        return ['miss', 'waited', 'hit', 'unavailable'].map(
          (result) => metric(text, `shared_cache_requests_total{cache="validators",result="${result}"}`) ?? 0,
        );
      }),
    );
    expect(lookups.map(([miss]) => miss).sort()).toEqual([0, 1]);
    expect(lookups.map(([, waited, hit]) => (waited ?? 0) + (hit ?? 0)).sort()).toEqual([0, 1]);
  });

  it('waits out the lock of an instance that died mid-fetch, then fetches itself: counted expired', async () => {
    const a = instance();
    await connected(a);
    env.devnet.resetRecords();
    // Another instance took the list's lock and died before storing anything.
    await env.inspect.set(`${prefix()}validators:{list}:lock`, 'a-dead-instance', 'PX', 60_000);
    const res = await graphql(a.gateway, VALIDATOR_TABLE, { variables: { pageSize: 5 } });
    expect(res.errors).toBeUndefined();
    expect(res.data.validators.nodes).toHaveLength(5);
    expect(validatorPages()).toHaveLength(pagesOfOneList());
    const text = await metricsOf(a.gateway);
    expect(metric(text, 'shared_cache_requests_total{cache="validators",result="expired"}')).toBe(1);
    expect(metric(text, 'shared_cache_requests_total{cache="validators",result="miss"}')).toBeUndefined();
  });

  it('serves from the upstreams while Redis is down, logs and counts the outage, and uses Redis again once back', async () => {
    const [a, b] = [instance(), instance()];
    await connected(a, b);

    // A load of 200 requests on both instances; Redis stops once a quarter of them are answered.
    let answered = 0;
    let quarterAnswered = () => {};
    const quarter = new Promise<void>((resolve) => {
      quarterAnswered = resolve;
    });
    const load = [a, b].flatMap((i) =>
      Array.from({ length: 100 }, async (_, n) => {
        try {
          const res = await graphql(i.gateway, VALIDATOR_TABLE, { variables: { pageSize: n + 1 } });
          return { res, rows: n + 1 };
        } finally {
          if (++answered === 50) quarterAnswered();
        }
      }),
    );
    await quarter;
    await env.redis.stop();
    try {
      for (const { res, rows } of await Promise.all(load)) {
        expect(res.status).toBe(200);
        expect(res.errors).toBeUndefined();
        expect(res.data.validators.nodes).toHaveLength(rows);
      }

      // A new instance during the outage: its answers come from the upstreams, in time.
      const c = instance();
      env.devnet.resetRecords();
      for (const [n, i] of [c, a, b, c, a, b, a, b].entries()) {
        const res = await graphql(i.gateway, VALIDATOR_TABLE, { variables: { page: 2, pageSize: 10 + n } });
        expect(res.status).toBe(200);
        expect(res.errors).toBeUndefined();
        expect(res.data.validators.nodes).toHaveLength(10 + n);
      }
      // No request waited out the upstream timeout for a fetch another instance began before the
      // outage: a wait ends as soon as Redis stops answering.
      for (const i of [a, b, c]) {
        expect(
          metric(
            await metricsOf(i.gateway),
            'shared_cache_requests_total{cache="validators",result="expired"}',
          ),
        ).toBeUndefined();
      }
      expect(validatorPages()).toHaveLength(pagesOfOneList());

      // The outage starts for an instance when its breaker opens (three failed commands in a row).
      for (const i of [a, b]) {
        await until(() => i.lines.filter(isDown).length === 1, {
          within: 1_000,
          what: 'the shared caches logged down once',
        });
        expect(i.lines.filter(isDown)).toHaveLength(1);
        const text = await metricsOf(i.gateway);
        expect(metric(text, 'redis_up')).toBe(0);
        expect(metric(text, 'redis_errors_total{kind="error"}')).toBeGreaterThan(0);
        expect(
          metric(text, 'shared_cache_requests_total{cache="responses",result="unavailable"}'),
        ).toBeGreaterThan(0);
        // /readyz reuses its answer for a second: wait for one checked since the outage began.
        let ready: Ready | undefined;
        await until(
          async () => {
            ready = await readyz(i);
            return ready.status === 200 && ready.body.status === 'ready' && ready.body.redis === 'down';
          },
          { within: 5_000, what: '/readyz checked since the outage began, reporting Redis down' },
        );
        expect(ready?.status).toBe(200);
        expect(ready?.body).toMatchObject({ status: 'ready', redis: 'down' });
      }
    } finally {
      await env.redis.start();
    }
    // Back: the next trial command (here /readyz's PING) closes the breaker.
    for (const i of [a, b]) {
      let ready: Ready | undefined;
      await until(
        async () => {
          ready = await readyz(i);
          return ready.body.redis === 'up';
        },
        { within: 15_000, what: '/readyz reporting Redis up again' },
      );
      expect(ready?.body).toMatchObject({ redis: 'up' });
      await until(() => i.lines.filter(isUp).length === 1, {
        within: 1_000,
        what: 'the shared caches logged up once',
      });
      expect(i.lines.filter(isDown)).toHaveLength(1);
      expect(i.lines.filter(isUp)).toHaveLength(1);
      expect(metric(await metricsOf(i.gateway), 'redis_up')).toBe(1);
    }

    // Shared again: an answer of a is served to b from Redis.
    const fromA = await graphql(a.gateway, VALIDATOR_TABLE, { variables: { page: 3, pageSize: 20 } });
    expect(fromA.errors).toBeUndefined();
    const answerStored = async () => (await entries()).some((k) => k.includes(':responses:'));
    await until(answerStored, { within: 1_000, what: "a's answer stored in Redis" });
    expect(await answerStored()).toBe(true);
    env.devnet.resetRecords();
    expect(await graphql(b.gateway, VALIDATOR_TABLE, { variables: { page: 3, pageSize: 20 } })).toEqual(
      fromA,
    );
    expect(env.devnet.requests).toHaveLength(0);
  });

  it('never writes an answer that needs a caller or a token to Redis', async () => {
    const a = instance();
    await connected(a);
    const [delegator] = delegators(1);
    const token = env.devnet.token;
    const answers = await Promise.all([
      graphql(a.gateway, PORTFOLIO, { variables: { delegator } }),
      graphql(a.gateway, PORTFOLIO, { variables: { delegator }, token }),
      graphql(a.gateway, '{ contractsBySymbol(symbol: "USDT", pageSize: 2) { nodes { address } } }', {
        token,
      }),
      graphql(a.gateway, '{ failedTransactions(pageSize: 2) { nodes { hash } } }', { token }),
    ]);
    for (const answer of answers) expect(answer.errors).toBeUndefined();
    // What the portfolio's validator join read (public) is the only thing stored.
    let inRedis: string[] = [];
    await until(
      async () => {
        inRedis = await keys();
        return inRedis.length === 1 && inRedis[0] === `${prefix()}validators:{list}`;
      },
      { within: 1_000, what: 'the validator list alone stored in Redis' },
    );
    expect(inRedis).toEqual([`${prefix()}validators:{list}`]);
    const stored = (await env.inspect.get(`${prefix()}validators:{list}`)) ?? '';
    expect(stored.includes(token)).toBe(false);
    expect(stored.toLowerCase().includes(String(delegator).toLowerCase())).toBe(false);
  });

  it('keys carry a version: the format and a hash of the printed schema', async () => {
    const a = instance();
    await connected(a);
    expect(
      (await graphql(a.gateway, VALIDATOR_TABLE, { variables: { pageSize: 3 } })).errors,
    ).toBeUndefined();
    const stored = await storedAnswerAndList();
    expect(stored).toHaveLength(2);
    const schemaText = printedSchema();
    const version = prefix();
    expect(version).toMatch(new RegExp(`^gw:v${SHARED_FORMAT_VERSION}:[\\w-]{16}:[\\w-]{8}:[0-9a-f]{8}:$`));
    for (const key of await keys()) expect(key.startsWith(version)).toBe(true);
    // Another schema (a deploy that changed it) reads under another prefix.
    const upstreams = { urls: env.devnet.urls, dialects: settings().dialects };
    expect(sharedKeyPrefix(`${schemaText}\ntype Added { x: Int }`, upstreams)).not.toBe(
      sharedKeyPrefix(schemaText, upstreams),
    );
    expect(version.startsWith(sharedKeyPrefix(schemaText, upstreams))).toBe(true);
  });
});
