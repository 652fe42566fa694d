import { type DevnetTokens, requireBearer } from './auth.js';
import { blockIndex, type DevnetData, FAILURES, TX_MESSAGE_TYPES, TX_TYPES } from './data.js';
import type { Dialect, FailedTx } from './dialect.js';
import { type DevnetRequest, HttpError } from './http.js';
import { afterKey, PAGINATION_PARAMS, pageRequest, paginate, requiredParam } from './params.js';

/**
 * The explorer service (upstream-api.md 4.4 and 4.5): Bearer auth, answers in the envelope
 * `{ code, message, data }`; the dialect shapes `data` and its items.
 *
 * Cursors: contracts are ordered by address and the cursor is the last address seen; failed
 * transactions are ordered newest first and the cursor is the last one's `tx_number`, or
 * `<block_height>:<action_index>`.
 */

const CONTRACT_PARAMS = ['symbol', 'chainId', 'contractType', ...PAGINATION_PARAMS];

/**
 * A failed transaction's facts. Gas, recipient and value are not stored; they are derived from
 * the index so that they stay deterministic without widening the transaction columns.
 */
function failedTxFacts(data: DevnetData, i: number): FailedTx {
  const { blocks, txs } = data;
  const accounts = data.addresses.length - data.contracts.length;
  const type = TX_TYPES[txs.type[i] as number] as (typeof TX_TYPES)[number];
  const failure = FAILURES[(txs.failure[i] as number) - 1] as FailedTx['failure'];
  const gasUsed = 21_000 + ((i * 7919) % 400_000);
  // An out-of-gas transaction used all it asked for; others asked for a 20% margin.
  const gasWanted = failure.reason === 'out of gas' ? gasUsed : Math.ceil((gasUsed * 1.2) / 1000) * 1000;
  const transfer = type === 'transfer';
  const initiator = txs.initiator[i] as number;
  return {
    txNumber: i + 1,
    hash: txs.hash[i] as string,
    height: txs.height[i] as number,
    actionIndex: txs.actionIndex[i] as number,
    time: blocks.time[blockIndex(blocks, txs.height[i] as number)] as number,
    initiator: data.addresses[initiator] as string,
    type,
    messageType: TX_MESSAGE_TYPES[type],
    failure,
    gasWanted,
    gasUsed,
    to: transfer ? (data.addresses[(initiator + 1 + (i % 97)) % accounts] as string) : '',
    value: transfer ? `${1 + (i % 1000)}0000000000000000` : '0',
  };
}

export function createExplorerRoutes(
  data: DevnetData,
  tokens: DevnetTokens,
  now: () => number,
  dialect: Dialect,
) {
  const { blocks, txs } = data;
  // Failed transactions, newest first; the 24-hour window is applied per request on the devnet
  // clock. Those of blocks added since the last request are put in front first.
  let failed: number[] = [];
  let listed = 0;
  const sync = () => {
    const added: number[] = [];
    for (let i = txs.count - 1; i >= listed; i--) if ((txs.failure[i] as number) > 0) added.push(i);
    if (added.length > 0) failed = [...added, ...failed];
    listed = txs.count;
  };
  const blockTime = (tx: number) => blocks.time[blockIndex(blocks, txs.height[tx] as number)] as number;
  const failedTx = (i: number) => failedTxFacts(data, i);

  const contractsBySymbol = ({ query, headers }: DevnetRequest) => {
    requireBearer(headers, tokens);
    const params = dialect.params(query, CONTRACT_PARAMS);
    const symbol = requiredParam(params, 'symbol').toUpperCase();
    const chainId = params.get('chainId');
    const contractType = params.get('contractType')?.toUpperCase();
    const request = pageRequest(params);
    const matches = data.contracts.filter(
      (c) =>
        c.symbol === symbol &&
        (chainId == null || c.chain_id === chainId) &&
        (!contractType || c.contract_type === contractType),
    );
    const page = paginate(matches, request, (cursor) =>
      afterKey(matches, (c) => c.address, cursor.toLowerCase()),
    );
    const next = page.pagination.has_next ? (page.items.at(-1)?.address ?? '') : '';
    const items = page.items.map((c) => dialect.contract(c));
    return dialect.explorerReply('contracts', items, page.pagination, next);
  };

  const failed24h = ({ query, headers }: DevnetRequest) => {
    requireBearer(headers, tokens);
    const request = pageRequest(dialect.params(query, PAGINATION_PARAMS));
    sync();
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
    const last = page.items.at(-1);
    const next = page.pagination.has_next && last !== undefined ? String(last + 1) : '';
    const items = page.items.map((i) => dialect.failedTx(failedTx(i)));
    return dialect.explorerReply('transactions', items, page.pagination, next);
  };

  return {
    '/api/v1/contract/info/by-symbol': { GET: contractsBySymbol },
    '/api/v1/transaction/failed-24h': { GET: failed24h },
  };
}
