/**
 * The benchmark's baseline: a hand-written BFF (node:http + undici, no GraphQL) that makes the
 * same upstream calls as the gateway for each scenario and answers the same JSON. It is what a
 * Node gateway can approach. It takes the gateway's POST bodies and dispatches on operationName.
 *
 * Per request it does what any production service does, as the gateway does: an `x-request-id`
 * (the caller's or a new UUID), one pino access-log line with the gateway's fields to the same
 * destination (stdout, asynchronous 4 KB writes), and the same prom-client request counter and
 * latency histogram. Listens on PORT (0 = free port) and prints `listening on <url>`.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { Counter, Histogram, Registry } from 'prom-client';
import { Pool } from 'undici';

type Json = any;

const pools = {
  scan: new Pool(process.env.SCAN_URL as string, { connections: 32 }),
  stake: new Pool(process.env.STAKE_URL as string, { connections: 32 }),
};

/** Upstream calls of one request, for its log line. */
interface Calls {
  n: number;
}

async function get(calls: Calls, pool: Pool, path: string): Promise<Json> {
  calls.n++;
  const res = await pool.request({ method: 'GET', path, headers: { accept: 'application/json' } });
  const body = await res.body.json();
  if (res.statusCode !== 200) throw new Error(`upstream ${res.statusCode}`);
  return body;
}

// The same shared, 5-second validator-list cache as the gateway's.
let validators: { expires: number; value: Promise<Map<string, Json>> } | null = null;
function validatorIndex(calls: Calls): Promise<Map<string, Json>> {
  if (validators && validators.expires > Date.now()) return validators.value;
  const value = (async () => {
    const first = await get(
      calls,
      pools.stake,
      '/stake/validators?pagination.page=1&pagination.page_size=100',
    );
    const rest = await Promise.all(
      Array.from({ length: first.pagination.total_pages - 1 }, (_, i) =>
        get(calls, pools.stake, `/stake/validators?pagination.page=${i + 2}&pagination.page_size=100`),
      ),
    );
    const list = [first, ...rest].flatMap((p) => p.validators);
    const index = new Map<string, Json>();
    for (const v of list) index.set(v.operator_address, v);
    return Object.assign(index, { list });
  })();
  validators = { expires: Number.POSITIVE_INFINITY, value };
  value.then(
    () => {
      if (validators) validators.expires = Date.now() + 5_000;
    },
    () => {
      validators = null;
    },
  );
  return value;
}

const q = (value: string) => encodeURIComponent(value);

const handlers: Record<string, (variables: Json, req: IncomingMessage, calls: Calls) => Promise<Json>> = {
  async S1({ q: text }, _req, calls) {
    const s = await get(calls, pools.scan, `/api/v1/dex/search?q=${q(text)}`);
    const t = s.submitTarget;
    return {
      searchSuggestions: {
        selectedCategory: s.selectedCategory.toUpperCase(),
        counts: {
          transactions: s.counts.transactions,
          blocks: s.counts.blocks,
          addresses: s.counts.addresses,
        },
        transactions: s.transactions.map((x: Json) => ({
          hash: x.hash,
          blockHeight: x.blockHeight,
          type: x.type,
        })),
        blocks: s.blocks.map((b: Json) => ({ height: b.height, hash: b.hash })),
        addresses: s.addresses.map((a: Json) => ({ address: a.address })),
        submitTarget: t
          ? {
              kind: t.kind.toUpperCase(),
              hash: t.hash ?? null,
              height: t.height ?? null,
              address: t.address ?? null,
            }
          : null,
      },
    };
  },
  async S2(_variables, _req, calls) {
    const index = (await validatorIndex(calls)) as Map<string, Json> & { list: Json[] };
    return {
      validators: {
        nodes: index.list.slice(0, 100).map((v) => ({
          moniker: v.moniker,
          operatorAddress: v.operator_address,
          status: v.status,
          jailed: v.jailed,
          tokens: v.tokens,
          delegatorShares: v.delegator_shares,
          uptimePercentage: v.uptime_percentage,
          delegationCount: v.delegation_count,
          imageUrl: v.image_url,
          description: v.description,
          commission: {
            rate: v.commission_rate,
            maxRate: v.commission_max_rate,
            maxChangeRate: v.commission_max_change_rate,
            updateTime: v.commission_update_time,
          },
        })),
      },
    };
  },
  async S3({ d }, _req, calls) {
    const [page, index] = await Promise.all([
      get(
        calls,
        pools.stake,
        `/stake/delegator/delegations?delegator_address=${q(d)}&pagination.page=1&pagination.page_size=20`,
      ),
      validatorIndex(calls),
    ]);
    return {
      delegations: {
        nodes: page.delegation_responses.map((item: Json) => {
          const v = index.get(item.delegation.validator_address);
          return {
            validatorAddress: item.delegation.validator_address,
            shares: item.delegation.shares,
            balance: { denom: item.balance.denom, amount: item.balance.amount },
            validator: v
              ? { moniker: v.moniker, status: v.status, commission: { rate: v.commission_rate } }
              : null,
          };
        }),
      },
    };
  },
  async S4({ q: text }, _req, calls) {
    const s = await get(calls, pools.scan, `/api/v1/search?q=${q(text)}`);
    return {
      search: {
        results: s.results.map((r: Json) => ({
          kind: r.kind.toUpperCase(),
          identity: r.identity,
          canonicalUrl: r.canonicalUrl,
        })),
      },
    };
  },
  async S5({ input }, req, calls) {
    calls.n++;
    const res = await pools.stake.request({
      method: 'PUT',
      path: '/stake/buyback/rounds',
      headers: { 'content-type': 'application/json', authorization: req.headers.authorization as string },
      body: JSON.stringify({ round_id: input.roundId, total_slots: input.totalSlots }),
    });
    const { round: r } = (await res.body.json()) as Json;
    if (res.statusCode !== 200) throw new Error(`upstream ${res.statusCode}`);
    return {
      updateBuybackRound: {
        round: {
          roundId: r.round_id,
          totalSlots: r.total_slots,
          minAmount: r.min_amount,
          maxAmount: r.max_amount,
          updatedAt: r.updated_at,
        },
      },
    };
  },
};
handlers.S6 = handlers.S3 as (typeof handlers)['S3'];

// The gateway's production logger and metrics (src/main.ts, src/ops/metrics.ts), in their simplest form.
const logger = pino(
  { redact: { paths: ['authorization', '*.authorization'], censor: '[redacted]' } },
  pino.destination({ sync: false, minLength: 4096 }),
);
setInterval(() => logger.flush(), 1000).unref();
const registry = new Registry();
const requests = new Counter({
  name: 'graphql_requests_total',
  help: 'Requests by operation and outcome.',
  labelNames: ['operation', 'outcome'] as const,
  registers: [registry],
});
const duration = new Histogram({
  name: 'graphql_request_duration_seconds',
  help: 'Time to answer a request, by operation.',
  labelNames: ['operation'] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
});

function send(res: ServerResponse, requestId: string, status: number, body: unknown) {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'x-request-id': requestId,
  });
  res.end(text);
}

const server = createServer((req, res) => {
  const start = performance.now();
  const given = req.headers['x-request-id'];
  const requestId = typeof given === 'string' && /^[\w.:@-]{1,128}$/.test(given) ? given : randomUUID();
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', async () => {
    const calls: Calls = { n: 0 };
    let operation = 'unknown';
    let outcome = 'ok';
    let status = 200;
    try {
      const { operationName, variables } = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      const handler = handlers[operationName];
      if (handler) {
        operation = operationName;
        send(res, requestId, 200, { data: await handler(variables ?? {}, req, calls) });
      } else {
        [outcome, status] = ['invalid', 400];
        send(res, requestId, 400, { errors: [{ message: 'unknown operation' }] });
      }
    } catch {
      outcome = 'error';
      send(res, requestId, 200, { errors: [{ message: 'upstream failure' }] });
    }
    const seconds = (performance.now() - start) / 1000;
    requests.labels(operation, outcome).inc();
    duration.labels(operation).observe(seconds);
    logger.info(
      {
        requestId,
        operation,
        outcome,
        status,
        durationMs: Math.round(seconds * 10_000) / 10,
        upstreamCalls: calls.n,
        errorCodes: [],
      },
      'graphql request',
    );
  });
});
server.keepAliveTimeout = 10_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`);
});
