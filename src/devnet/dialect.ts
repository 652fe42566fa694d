import type { DevnetDialect } from '../config.js';
import {
  type AddressRole,
  type DecodedAddress,
  decodeAddress,
  encodeBech32,
  splitPrefix,
} from '../lib/address.js';
import { CANONICAL_PREFIX, type ContractRecord, iso } from './data.js';
import { HttpError, type Reply } from './http.js';
import { allowOnly, type PaginationRecord, type Params } from './params.js';

/**
 * How the staking and explorer services put the one generated chain on the wire. Everything that
 * differs between the dialects lives here, so that handlers read parameters and build answers once:
 *
 * - `spec`: upstream-api.md as the contract settles it (contract.md §2): snake_case, unknown query
 *   parameters and body fields rejected, accounts as `0x…`.
 * - `kratos`: what the production go-kratos services send (real-upstreams.md): protojson
 *   (lowerCamelCase keys, 64-bit integers as strings), either spelling of a parameter bound and
 *   unknown ones ignored, bech32 accounts, errors `{ code, reason, message, metadata }` with the
 *   HTTP status equal to `code`.
 *
 * Handlers hold the data's canonical values (accounts `0x…`, validators `biyavaloper1…` /
 * `biyavalcons1…`) and pass them through `address`; the search service is the same in both
 * dialects and does not use this module.
 */

export interface DialectOptions {
  name: DevnetDialect;
  /** Every successful staking answer wrapped in `{ code: 0, message: "success", data }`. */
  stakeEnvelope: boolean;
  /** The explorer envelope's `code` on success (0; some environments answer 200). */
  explorerSuccessCode: number;
  /** The deployment's bech32 account prefix (`<prefix>1…`, `<prefix>valoper1…`, `<prefix>valcons1…`). */
  bech32Prefix: string;
}

export type ExplorerList = 'contracts' | 'transactions';

/** A failed transaction's facts, from which each dialect draws its own item. */
export interface FailedTx {
  txNumber: number;
  hash: string;
  height: number;
  actionIndex: number;
  /** Unix seconds. */
  time: number;
  /** The signer, a canonical `0x…` account. */
  initiator: string;
  type: string;
  messageType: string;
  failure: { reason: string; codespace: string; code: number };
  gasWanted: number;
  gasUsed: number;
  /** The recipient (a canonical `0x…` account), or '' when the message has none. */
  to: string;
  /** Base units moved; '0' when none. */
  value: string;
}

export type ErrorBody = (status: number, message: string, reason?: string) => unknown;

export interface Dialect {
  readonly options: Readonly<DialectOptions>;
  /** An endpoint's query parameters, read by their spec names; `known` lists those names. */
  params(query: URLSearchParams, known: readonly string[]): Params;
  /** A JSON request body's fields by their spec (snake_case) names; `known` lists those names. */
  body(body: unknown, known: readonly string[]): Record<string, unknown>;
  /**
   * A canonical address as the staking and explorer services show it. Both services of one
   * deployment share an encoding, so one function serves both.
   */
  address(canonical: string): string;
  /** An address a client sent back (a cursor) in its canonical form; other text unchanged. */
  canonicalAddress(text: string): string;
  /** The `delegator_address` parameter as a key of `data.delegations` (a canonical `0x…` account). */
  delegator(text: string): string;
  /** A successful staking answer, given in its spec shape. */
  stakeReply(body: object): Reply;
  /** A page of explorer items (already rendered), with the cursor that continues after it ('' at the end). */
  explorerReply(
    list: ExplorerList,
    items: unknown[],
    pagination: PaginationRecord,
    nextCursor: string,
  ): Reply;
  contract(record: ContractRecord): unknown;
  failedTx(tx: FailedTx): unknown;
  /** The error body of the staking or explorer service. */
  errorBody(service: 'stake' | 'explorer'): ErrorBody;
}

const PREFIX = /^[a-z][a-z0-9]{0,19}$/;

const roleOf = (decoded: DecodedAddress): AddressRole =>
  decoded.prefix === 'hex' ? 'account' : splitPrefix(decoded.prefix).role;

function requireObject(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new HttpError(400, 'body must be a JSON object');
  }
  return body as Record<string, unknown>;
}

/** Base units per unit of gas, for the explorer's `gas_fee`. */
const GAS_PRICE = 160_000_000n;

abstract class BaseDialect implements Dialect {
  private readonly rendered = new Map<string, string>();

  constructor(readonly options: Readonly<DialectOptions>) {}

  /** Whether accounts leave as bech32 `<prefix>1…` rather than `0x…`. */
  protected abstract readonly bech32Accounts: boolean;

  abstract params(query: URLSearchParams, known: readonly string[]): Params;
  abstract body(body: unknown, known: readonly string[]): Record<string, unknown>;
  abstract delegator(text: string): string;
  abstract contract(record: ContractRecord): unknown;
  abstract failedTx(tx: FailedTx): unknown;
  abstract errorBody(service: 'stake' | 'explorer'): ErrorBody;
  /** The bare staking answer's keys. */
  protected abstract stakeKeys(body: object): unknown;
  /** The explorer envelope's free-form `data`. */
  protected abstract explorerData(
    list: ExplorerList,
    items: unknown[],
    pagination: PaginationRecord,
    nextCursor: string,
  ): unknown;

  // Memoised: the data holds a few thousand addresses and a validator page re-encodes hundreds.
  // A bound function, so that handlers may take it from the dialect.
  readonly address = (canonical: string): string => {
    let out = this.rendered.get(canonical);
    if (out === undefined) {
      out = this.render(canonical);
      this.rendered.set(canonical, out);
    }
    return out;
  };

  private render(canonical: string): string {
    const decoded = decodeAddress(canonical);
    if (!decoded) return canonical;
    const { bech32Prefix } = this.options;
    const role = roleOf(decoded);
    if (role !== 'account') return encodeBech32(`${bech32Prefix}${role}`, decoded.hex);
    return this.bech32Accounts ? encodeBech32(bech32Prefix, decoded.hex) : `0x${decoded.hex}`;
  }

  canonicalAddress(text: string): string {
    const decoded = decodeAddress(text);
    if (!decoded) return text;
    const role = roleOf(decoded);
    return role === 'account' ? `0x${decoded.hex}` : encodeBech32(`${CANONICAL_PREFIX}${role}`, decoded.hex);
  }

  stakeReply(body: object): Reply {
    const bare = this.stakeKeys(body);
    return { body: this.options.stakeEnvelope ? { code: 0, message: 'success', data: bare } : bare };
  }

  explorerReply(
    list: ExplorerList,
    items: unknown[],
    pagination: PaginationRecord,
    nextCursor: string,
  ): Reply {
    return {
      body: {
        code: this.options.explorerSuccessCode,
        message: 'success',
        data: this.explorerData(list, items, pagination, nextCursor),
      },
    };
  }
}

class SpecDialect extends BaseDialect {
  protected readonly bech32Accounts = false;

  params(query: URLSearchParams, known: readonly string[]): Params {
    allowOnly(query, known);
    return query;
  }

  body(body: unknown, known: readonly string[]): Record<string, unknown> {
    const fields = requireObject(body);
    for (const key of Object.keys(fields)) {
      if (!known.includes(key)) throw new HttpError(400, `unknown field: ${key.slice(0, 64)}`);
    }
    return fields;
  }

  // Any text: an address the devnet does not hold simply has no delegations.
  delegator(text: string): string {
    return text.toLowerCase();
  }

  protected stakeKeys(body: object): unknown {
    return body;
  }

  protected explorerData(list: ExplorerList, items: unknown[], pagination: PaginationRecord): unknown {
    return { [list]: items, pagination };
  }

  contract(record: ContractRecord): unknown {
    return record;
  }

  failedTx(tx: FailedTx): unknown {
    return {
      hash: tx.hash,
      tx_number: tx.txNumber,
      block_height: tx.height,
      action_index: tx.actionIndex,
      block_time: tx.time,
      initiator: this.address(tx.initiator),
      type: tx.type,
      error: tx.failure.reason,
      gas_used: String(tx.gasUsed),
    };
  }

  errorBody(service: 'stake' | 'explorer'): ErrorBody {
    return service === 'explorer'
      ? (code, message) => ({ code, message, data: null })
      : (code, message) => ({ code, message });
  }
}

const camelCache = new Map<string, string>();
/** protojson's JSON name of a field: `rewards_24h` → `rewards24h`, `page_size` → `pageSize`. */
function camel(name: string): string {
  let out = camelCache.get(name);
  if (out === undefined) {
    out = name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
    camelCache.set(name, out);
  }
  return out;
}
const snake = (name: string): string => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

function camelKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(camelKeys);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) out[camel(key)] = camelKeys(inner);
  return out;
}

/** go-kratos' reasons for the statuses the devnet answers (a handler may name a finer one). */
const KRATOS_REASONS: Record<number, string> = {
  400: 'BAD_REQUEST',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  409: 'CONFLICT',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  500: 'INTERNAL',
};

class KratosDialect extends BaseDialect {
  protected readonly bech32Accounts = true;

  // go-kratos' form binding: a field under its proto name or its JSON name; anything else ignored.
  // An empty value is the field's zero value, the same as leaving it out.
  params(query: URLSearchParams): Params {
    return {
      get(name) {
        for (const spelling of [name, camel(name), snake(name)]) {
          const value = query.get(spelling);
          if (value !== null && value !== '') return value;
        }
        return null;
      },
    };
  }

  // protojson with DiscardUnknown (go-kratos' codec): either name of a field, unknown ones dropped,
  // the same field twice an error.
  body(body: unknown, known: readonly string[]): Record<string, unknown> {
    const fields: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(requireObject(body))) {
      const name = snake(key);
      if (!known.includes(name)) continue;
      if (name in fields) throw new HttpError(400, `duplicate field: ${name}`);
      fields[name] = value;
    }
    return fields;
  }

  // A Cosmos service validates the address: a bech32 account of its own prefix, nothing else.
  delegator(text: string): string {
    const decoded = decodeAddress(text);
    if (decoded?.prefix !== this.options.bech32Prefix) {
      throw new HttpError(400, `delegator_address must be a ${this.options.bech32Prefix}1… account address`);
    }
    return `0x${decoded.hex}`;
  }

  protected stakeKeys(body: object): unknown {
    return camelKeys(body);
  }

  protected explorerData(
    _list: ExplorerList,
    items: unknown[],
    pagination: PaginationRecord,
    nextCursor: string,
  ): unknown {
    return { data: items, pagination: { ...(camelKeys(pagination) as object), cursor: nextCursor } };
  }

  // explorer.yaml's contract info: `metadata` is a map of strings. Nothing public tells `name`
  // from `tokenName`; the devnet gives both the token's name.
  contract(record: ContractRecord): unknown {
    return {
      contractAddress: record.address,
      name: record.name,
      tokenName: record.name,
      tokenSymbol: record.symbol,
      contractType: record.contract_type,
      chainId: record.chain_id,
      verificationStatus: record.verified ? 'verified' : 'unverified',
      metadata: {
        decimals: String(record.decimals),
        totalSupply: record.total_supply,
        holders: String(record.holders),
        deployer: this.address(record.deployer),
        creationTxHash: record.creation_tx_hash,
      },
      tags: [record.contract_type.toLowerCase()],
      createdAt: record.created_at,
      updatedAt: record.created_at,
    };
  }

  // explorer.yaml's TransactionDTO, snake_case even here. Production sends block_unix_timestamp
  // both as a number and as a string; the devnet alternates by tx_number so a page holds both.
  failedTx(tx: FailedTx): unknown {
    const ms = tx.time * 1000;
    return {
      id: String(tx.txNumber),
      hash: tx.hash,
      block_number: String(tx.height),
      block_timestamp: iso(ms),
      block_unix_timestamp: tx.txNumber % 2 === 0 ? ms : String(ms),
      tx_number: String(tx.txNumber),
      code: tx.failure.code,
      codespace: tx.failure.codespace,
      gas_wanted: String(tx.gasWanted),
      gas_used: String(tx.gasUsed),
      gas_fee: String(BigInt(tx.gasWanted) * GAS_PRICE),
      tx_type: tx.type,
      messages: JSON.stringify([{ '@type': tx.messageType }]),
      memo: '',
      error_log: tx.failure.reason,
      signer: this.address(tx.initiator),
      to: tx.to === '' ? '' : this.address(tx.to),
      value: tx.value,
    };
  }

  errorBody(): ErrorBody {
    return (code, message, reason) => ({
      code,
      reason: reason ?? KRATOS_REASONS[code] ?? 'UNKNOWN',
      message,
      metadata: {},
    });
  }
}

export interface DialectSettings {
  name?: DevnetDialect;
  stakeEnvelope?: boolean;
  explorerSuccessCode?: number;
  /** Default: `biya` for spec (the data's own prefix), `byb` for kratos (the chain's Go SDK). */
  bech32Prefix?: string;
}

export function createDialect(settings: DialectSettings = {}): Dialect {
  const name = settings.name ?? 'spec';
  const options: DialectOptions = Object.freeze({
    name,
    stakeEnvelope: settings.stakeEnvelope ?? false,
    explorerSuccessCode: settings.explorerSuccessCode ?? 0,
    bech32Prefix: settings.bech32Prefix ?? (name === 'kratos' ? 'byb' : CANONICAL_PREFIX),
  });
  if (!PREFIX.test(options.bech32Prefix)) {
    throw new Error(`bech32Prefix must be a lowercase bech32 prefix, got "${options.bech32Prefix}"`);
  }
  if (!Number.isInteger(options.explorerSuccessCode)) {
    throw new Error(`explorerSuccessCode must be an integer, got ${options.explorerSuccessCode}`);
  }
  return name === 'kratos' ? new KratosDialect(options) : new SpecDialect(options);
}
