import { type DevnetData, ROUND_STATUS } from './data.js';

/**
 * Variables under which each operation of operations/ answers from a devnet with this data,
 * by operation name: the tests run every operation with them, in every dialect.
 */
export function exampleVariables(data: DevnetData): Record<string, Record<string, unknown>> {
  const { blocks, txs, contracts } = data;
  const [delegator] = [...data.delegations].reduce((best, entry) =>
    entry[1].length > best[1].length ? entry : best,
  );
  const pending = [...data.rounds.values()].find((r) => r.status === ROUND_STATUS.pending);
  const busiest = blocks.txCount.indexOf(Math.max(...blocks.txCount));
  return {
    SearchBox: { query: (txs.hash[0] as string).slice(0, 8) },
    ExactSearch: { query: txs.hash[0] },
    BlockPage: { height: blocks.first + busiest },
    TransactionPage: { hash: txs.hash[0] },
    ValidatorTable: { page: 1, pageSize: 25 },
    DelegatorPortfolio: { delegator, first: 20 },
    ContractsBySymbol: { symbol: contracts[0]?.symbol, pageSize: 10 },
    FailedTransactions: { pageSize: 20 },
    // Subscriptions: the whole validator set when no address is given.
    BlockAdded: {},
    FailedTransactionAdded: {},
    ValidatorUpdated: {},
    ValidatorStatisticsUpdated: {},
    UpdateBuybackRound: {
      input: { roundId: pending?.round_id, totalSlots: (pending?.total_slots ?? 0) + 10 },
    },
  };
}
