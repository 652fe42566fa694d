import { requireBearer } from './auth.js';
import { type DevnetData, FAILURE_REASONS, TX_TYPES } from './data.js';
import { type DevnetRequest, HttpError } from './http.js';
import { afterKey, allowOnly, PAGINATION_PARAMS, pageRequest, paginate, requiredParam } from './params.js';

/**
 * The explorer service (upstream-api.md 4.4 and 4.5): Bearer auth, answers in the envelope
 * `{ code, message, data }`.
 *
 * Cursors: contracts are ordered by address and the cursor is the last address seen; failed
 * transactions are ordered newest first and the cursor is the last one's `tx_number`, or
 * `<block_height>:<action_index>`.
 */

const ok = (data: unknown) => ({ body: { code: 0, message: 'success', data } });

export function createExplorerRoutes(data: DevnetData, token: string, now: () => number) {
  const { blocks, txs } = data;
  // Failed transactions, newest first; the 24-hour window is applied per request on the devnet clock.
  const failed: number[] = [];
  for (let i = txs.count - 1; i >= 0; i--) if ((txs.failure[i] as number) > 0) failed.push(i);
  const blockTime = (tx: number) => blocks.time[(txs.height[tx] as number) - 1] as number;

  const failedTx = (i: number) => ({
    hash: txs.hash[i] as string,
    tx_number: i + 1,
    block_height: txs.height[i] as number,
    action_index: txs.actionIndex[i] as number,
    block_time: blockTime(i),
    initiator: data.addresses[txs.initiator[i] as number] as string,
    type: TX_TYPES[txs.type[i] as number] as string,
    error: FAILURE_REASONS[(txs.failure[i] as number) - 1] as string,
    gas_used: String(21_000 + ((i * 7919) % 400_000)),
  });

  const contractsBySymbol = ({ query, headers }: DevnetRequest) => {
    requireBearer(headers, token);
    allowOnly(query, ['symbol', 'chainId', 'contractType', ...PAGINATION_PARAMS]);
    const symbol = requiredParam(query, 'symbol').toUpperCase();
    const chainId = query.get('chainId');
    const contractType = query.get('contractType')?.toUpperCase();
    const request = pageRequest(query);
    const matches = data.contracts.filter(
      (c) =>
        c.symbol === symbol &&
        (chainId == null || c.chain_id === chainId) &&
        (!contractType || c.contract_type === contractType),
    );
    const page = paginate(matches, request, (cursor) =>
      afterKey(matches, (c) => c.address, cursor.toLowerCase()),
    );
    return ok({ contracts: page.items, pagination: page.pagination });
  };

  const failed24h = ({ query, headers }: DevnetRequest) => {
    requireBearer(headers, token);
    allowOnly(query, PAGINATION_PARAMS);
    const request = pageRequest(query);
    const since = Math.floor(now() / 1000) - 86_400;
    let end = failed.length;
    while (end > 0 && blockTime(failed[end - 1] as number) < since) end--;
    const recent = failed.slice(0, end);
    const page = paginate(recent, request, (cursor) => {
      // Newest first: the page starts at the first transaction older than the cursor.
      const m = /^(\d{1,10})(?::(\d{1,5}))?$/.exec(cursor);
      if (!m) throw new HttpError(400, 'pagination.cursor must be a tx_number or block_height:action_index');
      const olderThan = (tx: number) =>
        m[2] === undefined
          ? tx + 1 < Number(m[1])
          : (txs.height[tx] as number) < Number(m[1]) ||
            ((txs.height[tx] as number) === Number(m[1]) && (txs.actionIndex[tx] as number) < Number(m[2]));
      const at = recent.findIndex(olderThan);
      return at === -1 ? recent.length : at;
    });
    return ok({ transactions: page.items.map(failedTx), pagination: page.pagination });
  };

  return {
    '/api/v1/contract/info/by-symbol': { GET: contractsBySymbol },
    '/api/v1/transaction/failed-24h': { GET: failed24h },
  };
}
