import { badUserInput, unauthenticated } from '../errors.js';
import type { Context } from '../graphql/context.js';
import { decodeAddress } from '../lib/address.js';
import type {
  Block,
  BuybackRound,
  Contract,
  Delegation,
  FailedTransaction,
  Transaction,
  Validator,
} from '../upstream/models.js';
import { builder } from './builder.js';
import { BuybackRoundRef } from './buyback.js';
import { AddressRef, BlockRef, TransactionRef } from './chain.js';
import { DelegationRef } from './delegations.js';
import { ContractRef, FailedTransactionRef } from './explorer.js';
import { ValidatorRef } from './validators.js';

/**
 * Global object identification (contract.md §6): every entity implements `Node { id: ID! }` with
 * an opaque, stable id, the same whichever dialect or address encoding the upstream used (an
 * address is identified by its 20 bytes), and `node(id:)` / `nodes(ids:)` fetch entities back
 * through the request's loaders, one upstream call per kind where the upstreams allow. The ids are
 * Relay's global ids (@pothos/plugin-relay), in the encoding of ids.ts.
 */

/** An address's 20 bytes as 40 lowercase hex digits; the text itself when it is no address. */
const bytesOf = (address: string) => decodeAddress(address)?.hex ?? address.toLowerCase();

/** An id's parts, one string each (the relay plugin's "id" of a type, before encoding). */
const key = (...parts: (string | number | null)[]) => JSON.stringify(parts);

/** The parts of an id: `count` strings or nulls, else BAD_USER_INPUT. */
function parts(id: string, count: number): (string | null)[] {
  let value: unknown;
  try {
    value = JSON.parse(id);
  } catch {
    value = null;
  }
  if (
    !Array.isArray(value) ||
    value.length !== count ||
    value.some((part) => part !== null && (typeof part !== 'string' || part.length > 256))
  ) {
    throw badUserInput('id', 'id is not an id this gateway handed out.');
  }
  return value as (string | null)[];
}

const HEX_BYTES = /^[0-9a-f]{40}$/;
const HASH = /^0x[0-9a-f]{64}$/;

/** A part that must match `pattern`, else the id is malformed. */
const matching = (part: string | null, pattern: RegExp): string => {
  if (part === null || !pattern.test(part))
    throw badUserInput('id', 'id is not an id this gateway handed out.');
  return part;
};

/**
 * Each id's result: what `load` gave, or its error, as a value: graphql-js raises an Error value as
 * the error of that node alone (it is null beside it), and the other nodes keep their data.
 */
const each = <I, T>(ids: I[], load: (id: I) => Promise<T | null>) =>
  Promise.all(ids.map((id) => load(id).catch((error: Error) => error as unknown as T)));

/** The token the explorer's nodes are read with, as their list fields do; UNAUTHENTICATED without one. */
const explorerToken = (ctx: Context): string => {
  const token = ctx.callerToken ?? ctx.explorerToken;
  if (!token) throw unauthenticated('Reading this node needs an `Authorization: Bearer <token>` header.');
  return token;
};

builder.nodeRef(BlockRef, {
  id: {
    resolve: (b: Block) => key(String(b.height)),
    parse: (id) => Number(matching(parts(id, 1)[0] as string, /^[1-9]\d{0,9}$/)),
  },
  loadManyWithoutCache: (heights: number[], ctx: Context) => each(heights, (h) => ctx.loaders.block(h)),
});

builder.nodeRef(TransactionRef, {
  id: {
    resolve: (tx: Transaction) => key(tx.hash.toLowerCase()),
    parse: (id) => matching(parts(id, 1)[0] as string, HASH),
  },
  loadManyWithoutCache: (hashes: string[], ctx: Context) => each(hashes, (h) => ctx.loaders.transaction(h)),
});

// Any 20 bytes are an address: one is never missing, and reading it calls no upstream.
builder.nodeRef(AddressRef, {
  id: {
    resolve: (a: { address: string }) => key(bytesOf(a.address)),
    parse: (id) => matching(parts(id, 1)[0] as string, HEX_BYTES),
  },
  loadManyWithoutCache: async (hexes: string[]) => hexes.map((hex) => ({ address: `0x${hex}` })),
});

// Validators by their operator's bytes, all from the one validator list.
builder.nodeRef(ValidatorRef, {
  id: {
    resolve: (v: Validator) => key(bytesOf(v.operatorAddress)),
    parse: (id) => matching(parts(id, 1)[0] as string, HEX_BYTES),
  },
  loadManyWithoutCache: async (hexes: string[], ctx: Context) => {
    const directory = await ctx.loaders.validatorDirectory();
    return hexes.map((hex) => directory.byOperator(hex));
  },
});

// A delegation by its delegator's and its validator's bytes: one read of the delegator's list.
builder.nodeRef(DelegationRef, {
  id: {
    resolve: (d: Delegation) => key(bytesOf(d.delegatorAddress), bytesOf(d.validatorAddress)),
    parse: (id) => parts(id, 2).map((part) => matching(part, HEX_BYTES)) as [string, string],
  },
  loadManyWithoutCache: (pairs: [string, string][], ctx: Context) =>
    each(pairs, async ([delegator, validator]) => {
      const page = await ctx.loaders.delegations.load({
        delegator: `0x${delegator}`,
        page: 1,
        pageSize: 100,
      });
      return page.nodes.find((d) => bytesOf(d.validatorAddress) === validator) ?? null;
    }),
});

// A contract by its symbol, chain and address: the explorer finds contracts by symbol only.
builder.nodeRef(ContractRef, {
  id: {
    resolve: (c: Contract) => key(c.symbol, c.chainId, c.address?.toLowerCase() ?? null),
    parse: (id) => parts(id, 3),
  },
  loadManyWithoutCache: (ids: (string | null)[][], ctx: Context) =>
    each(ids, async ([symbol = null, chainId = null, address = null]) => {
      if (symbol === null || address === null) return null;
      const query = {
        symbol,
        chainId: chainId ?? null,
        contractType: null,
        page: 1,
        pageSize: 100,
        cursor: null,
      };
      const page = await ctx.loaders.contracts.load({ query, token: explorerToken(ctx) });
      return page.nodes.find((c) => c.address?.toLowerCase() === address && c.chainId === chainId) ?? null;
    }),
});

// A failed transaction by its number and hash: the page that starts at it, read with the caller's token.
builder.nodeRef(FailedTransactionRef, {
  id: {
    resolve: (tx: FailedTransaction) => key(tx.txNumber === null ? null : String(tx.txNumber), tx.hash),
    parse: (id) => parts(id, 2),
  },
  loadManyWithoutCache: (ids: (string | null)[][], ctx: Context) =>
    each(ids, async ([txNumber = null, hash = null]) => {
      if (txNumber === null || !/^\d{1,15}$/.test(txNumber)) return null;
      // The list runs newest first; a cursor is "older than": the one after txNumber + 1 is txNumber.
      const args = { page: 1, pageSize: 1, cursor: String(Number(txNumber) + 1) };
      const page = await ctx.loaders.failedTransactions.load({ args, token: explorerToken(ctx) });
      const [found] = page.nodes;
      return found && String(found.txNumber) === txNumber && found.hash === hash ? found : null;
    }),
});

// The staking service answers rounds only to an update: a round's id names it, and reads as null.
builder.nodeRef(BuybackRoundRef, {
  id: { resolve: (r: BuybackRound) => key(r.roundId), parse: (id) => parts(id, 1)[0] ?? '' },
  loadManyWithoutCache: async (ids: string[]) => ids.map(() => null),
});
