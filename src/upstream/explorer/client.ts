import { camelKeys, list, loose, type Obj, obj, ShapeError } from '../decode.js';
import type { CallScope, QueryValue, UpstreamHttp } from '../http.js';
import type { Contract, FailedTransaction, Page, PageArgs } from '../models.js';
import { decodeBody, pageQuery, toPageInfo, unwrapEnvelope } from '../rest.js';

/**
 * The explorer service: contracts by symbol (4.4) and failed transactions of the last 24 h (4.5).
 * Every call carries a bearer token. Answers come in the envelope `{ code, message, data }`; a code
 * outside the configured success codes (0 and 200 by default) is a failure even under HTTP 200.
 * `data` is a free-form Struct: the list is under `data`, `contracts` or `transactions`, whichever
 * holds an array, and its items are read by every name the devnet or the production explorer uses
 * for a field (below), missing fields null. Each item is also passed on untouched as `raw`.
 */

export interface ContractQuery extends PageArgs {
  symbol: string;
  chainId?: string | null | undefined;
  contractType?: string | null | undefined;
}

export interface ExplorerSettings {
  /** Envelope `code` values that mean success. */
  successCodes: readonly number[];
}

/** Where the list may sit inside `data`, in order of preference. */
const LIST_KEYS = ['contracts', 'transactions', 'data', 'list', 'items'] as const;

const seconds = (ms: number | null) => (ms === null ? null : Math.floor(ms / 1000));

/**
 * A contract from either item shape (after camelKeys): the devnet's (`address`, `symbol`,
 * `decimals`, `verified`, …) or the production explorer's (`contractAddress`, `tokenSymbol`,
 * `tokenName`, `verificationStatus`, `metadata.decimals`, …).
 */
const toContract = (value: unknown): Contract => {
  const c = obj(camelKeys(value), 'contract');
  const status = loose.str(c, 'verificationStatus');
  return {
    address: loose.str(c, 'address', 'contractAddress'),
    symbol: loose.str(c, 'symbol', 'tokenSymbol'),
    name: loose.str(c, 'name', 'tokenName'),
    chainId: loose.str(c, 'chainId'),
    contractType: loose.str(c, 'contractType'),
    decimals: loose.int(c, 'decimals', 'metadata.decimals'),
    totalSupply: loose.decimal(c, 'totalSupply', 'metadata.totalSupply'),
    holders: loose.int(c, 'holders', 'metadata.holders'),
    verified: loose.bool(c, 'verified') ?? (status === null ? null : status.toLowerCase() === 'verified'),
    deployer: loose.str(c, 'deployer', 'metadata.deployer', 'creator'),
    creationTxHash: loose.str(c, 'creationTxHash', 'metadata.creationTxHash'),
    createdAt: loose.str(c, 'createdAt'),
    updatedAt: loose.str(c, 'updatedAt'),
    tags: loose.strings(c, 'tags'),
    raw: value,
  };
};

/**
 * A failed transaction from either item shape (after camelKeys): the devnet's (`blockHeight`,
 * `blockTime` in seconds, `initiator`, `type`, `error`) or the explorer's TransactionDTO
 * (`blockNumber`, `blockUnixTimestamp` in ms or `blockTimestamp` in RFC 3339, `signer`, `txType`,
 * `errorLog`).
 */
const toFailedTransaction = (value: unknown): FailedTransaction => {
  const t = obj(camelKeys(value), 'failed transaction');
  const rfc3339 = loose.str(t, 'blockTimestamp');
  const parsed = rfc3339 === null ? Number.NaN : Date.parse(rfc3339);
  return {
    hash: loose.str(t, 'hash'),
    txNumber: loose.int(t, 'txNumber'),
    blockHeight: loose.int(t, 'blockHeight', 'blockNumber'),
    actionIndex: loose.int(t, 'actionIndex'),
    blockTime:
      loose.int(t, 'blockTime') ??
      seconds(loose.int(t, 'blockUnixTimestamp')) ??
      (Number.isNaN(parsed) ? null : seconds(parsed)),
    initiator: loose.str(t, 'initiator', 'signer'),
    type: loose.str(t, 'type', 'txType'),
    error: loose.str(t, 'error', 'reason', 'errorLog'),
    code: loose.int(t, 'code'),
    codespace: loose.str(t, 'codespace'),
    gasUsed: loose.decimal(t, 'gasUsed'),
    gasWanted: loose.decimal(t, 'gasWanted'),
    raw: value,
  };
};

export class ExplorerClient {
  constructor(
    private readonly http: UpstreamHttp,
    private readonly settings: ExplorerSettings,
  ) {}

  contractsBySymbol(query: ContractQuery, token: string, scope: CallScope = {}): Promise<Page<Contract>> {
    return this.page(
      '/api/v1/contract/info/by-symbol',
      { symbol: query.symbol, chainId: query.chainId, contractType: query.contractType, ...pageQuery(query) },
      toContract,
      token,
      scope,
    );
  }

  failedTransactions(args: PageArgs, token: string, scope: CallScope = {}): Promise<Page<FailedTransaction>> {
    return this.page('/api/v1/transaction/failed-24h', pageQuery(args), toFailedTransaction, token, scope);
  }

  private async page<T>(
    path: string,
    query: Record<string, QueryValue>,
    map: (value: unknown) => T,
    token: string,
    scope: CallScope = {},
  ): Promise<Page<T>> {
    const { body } = await this.http.get(path, {
      query,
      headers: { authorization: `Bearer ${token}` },
      ...scope,
    });
    // Items are normalised one by one, so that `raw` keeps each exactly as it came.
    return decodeBody('explorer', 'envelope', body, (envelope: Obj) => {
      const data = unwrapEnvelope('explorer', envelope, this.settings.successCodes);
      const key = LIST_KEYS.find((k) => Array.isArray(data[k]));
      if (key === undefined) throw new ShapeError('data holds no list');
      return { nodes: list(data[key], key).map(map), pageInfo: toPageInfo(data.pagination) };
    });
  }
}
