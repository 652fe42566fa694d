import { UpstreamError } from '../../errors.js';
import { int, list, loose, type Obj, obj } from '../decode.js';
import type { CallScope, QueryValue, UpstreamHttp } from '../http.js';
import type { Contract, FailedTransaction, Page, PageArgs } from '../models.js';
import { decodeBody, pageQuery, toPageInfo } from '../rest.js';

/**
 * The explorer service: contracts by symbol (4.4) and failed transactions of the last 24 h (4.5).
 * Every call carries a bearer token. Answers come in the envelope `{ code, message, data }`; a
 * non-zero code is a failure even under HTTP 200. Items in `data` are free-form, so they are read
 * tolerantly (snake_case or camelCase, missing fields null) and also passed on untouched as `raw`.
 */

export interface ContractQuery extends PageArgs {
  symbol: string;
  chainId?: string | null | undefined;
  contractType?: string | null | undefined;
}

const toContract = (value: unknown): Contract => {
  const c = obj(value, 'contract');
  return {
    address: loose.str(c, 'address'),
    symbol: loose.str(c, 'symbol'),
    name: loose.str(c, 'name'),
    chainId: loose.str(c, 'chain_id'),
    contractType: loose.str(c, 'contract_type'),
    decimals: loose.int(c, 'decimals'),
    totalSupply: loose.decimal(c, 'total_supply'),
    holders: loose.int(c, 'holders'),
    verified: loose.bool(c, 'verified'),
    deployer: loose.str(c, 'deployer'),
    creationTxHash: loose.str(c, 'creation_tx_hash'),
    createdAt: loose.str(c, 'created_at'),
    raw: value,
  };
};

const toFailedTransaction = (value: unknown): FailedTransaction => {
  const t = obj(value, 'failed transaction');
  return {
    hash: loose.str(t, 'hash'),
    txNumber: loose.int(t, 'tx_number'),
    blockHeight: loose.int(t, 'block_height'),
    actionIndex: loose.int(t, 'action_index'),
    blockTime: loose.int(t, 'block_time'),
    initiator: loose.str(t, 'initiator'),
    type: loose.str(t, 'type'),
    error: loose.str(t, 'error') ?? loose.str(t, 'reason'),
    gasUsed: loose.decimal(t, 'gas_used'),
    raw: value,
  };
};

export class ExplorerClient {
  constructor(private readonly http: UpstreamHttp) {}

  contractsBySymbol(query: ContractQuery, token: string, scope: CallScope = {}): Promise<Page<Contract>> {
    return this.page(
      '/api/v1/contract/info/by-symbol',
      { symbol: query.symbol, chainId: query.chainId, contractType: query.contractType, ...pageQuery(query) },
      'contracts',
      toContract,
      token,
      scope,
    );
  }

  failedTransactions(args: PageArgs, token: string, scope: CallScope = {}): Promise<Page<FailedTransaction>> {
    return this.page(
      '/api/v1/transaction/failed-24h',
      pageQuery(args),
      'transactions',
      toFailedTransaction,
      token,
      scope,
    );
  }

  private async page<T>(
    path: string,
    query: Record<string, QueryValue>,
    key: string,
    map: (value: unknown) => T,
    token: string,
    scope: CallScope = {},
  ): Promise<Page<T>> {
    const { body } = await this.http.get(path, {
      query,
      headers: { authorization: `Bearer ${token}` },
      ...scope,
    });
    return decodeBody('explorer', 'envelope', body, (envelope: Obj) => {
      const code = int(envelope, 'code');
      if (code !== 0) {
        throw new UpstreamError(
          'explorer',
          'UPSTREAM_ERROR',
          `envelope code ${code}: ${String(envelope.message).slice(0, 200)}`,
        );
      }
      const data = obj(envelope.data, 'data');
      return { nodes: list(data[key], key).map(map), pageInfo: toPageInfo(data.pagination) };
    });
  }
}
