/**
 * The benchmark's baseline: a hand-written BFF (node:http + undici, no GraphQL) that makes the
 * same upstream calls as the gateway for each scenario and answers the same JSON. It is what a
 * Node gateway can approach. It takes the gateway's POST bodies and dispatches on operationName.
 * Listens on PORT (0 = free port) and prints `listening on <url>`.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';

type Json = any;

const pools = {
  scan: new Pool(process.env.SCAN_URL as string, { connections: 32 }),
  stake: new Pool(process.env.STAKE_URL as string, { connections: 32 }),
};

async function get(pool: Pool, path: string): Promise<Json> {
  const res = await pool.request({ method: 'GET', path, headers: { accept: 'application/json' } });
  const body = await res.body.json();
  if (res.statusCode !== 200) throw new Error(`upstream ${res.statusCode}`);
  return body;
}

// The same shared, 5-second validator-list cache as the gateway's.
let validators: { expires: number; value: Promise<Map<string, Json>> } | null = null;
function validatorIndex(): Promise<Map<string, Json>> {
  if (validators && validators.expires > Date.now()) return validators.value;
  const value = (async () => {
    const first = await get(pools.stake, '/stake/validators?pagination.page=1&pagination.page_size=100');
    const rest = await Promise.all(
      Array.from({ length: first.pagination.total_pages - 1 }, (_, i) =>
        get(pools.stake, `/stake/validators?pagination.page=${i + 2}&pagination.page_size=100`),
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

const handlers: Record<string, (variables: Json, req: IncomingMessage) => Promise<Json>> = {
  async S1({ q: text }) {
    const s = await get(pools.scan, `/api/v1/dex/search?q=${q(text)}`);
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
  async S2() {
    const index = (await validatorIndex()) as Map<string, Json> & { list: Json[] };
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
  async S3({ d }) {
    const [page, index] = await Promise.all([
      get(
        pools.stake,
        `/stake/delegator/delegations?delegator_address=${q(d)}&pagination.page=1&pagination.page_size=20`,
      ),
      validatorIndex(),
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
  async S4({ q: text }) {
    const s = await get(pools.scan, `/api/v1/search?q=${q(text)}`);
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
  async S5({ input }, req) {
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

function send(res: ServerResponse, status: number, body: unknown) {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', async () => {
    try {
      const { operationName, variables } = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      const handler = handlers[operationName];
      if (!handler) return send(res, 400, { errors: [{ message: 'unknown operation' }] });
      send(res, 200, { data: await handler(variables ?? {}, req) });
    } catch {
      send(res, 200, { errors: [{ message: 'upstream failure' }] });
    }
  });
});
server.keepAliveTimeout = 10_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`);
});
