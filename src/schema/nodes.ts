import { badUserInput } from '../errors.js';
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
import { ContractRef, explorerToken, FailedTransactionRef } from './explorer.js';
import { ValidatorRef } from './validators.js';

/**
 * Global object identification (contract.md §6): every entity implements `Node { id: ID! }` with
 * an opaque, stable id, the same whichever dialect or address encoding the upstream used (an
 * address is identified by its 20 bytes), and `node(id:)` / `nodes(ids:)` fetch entities back
 * through the request's loaders, one upstream call per kind where the upstreams allow. The ids are
 * Relay's global ids (@pothos/plugin-relay), in the encoding of ids.ts.
 */

/**
 * An address as an id names it: its 20 bytes as 40 lowercase hex digits, in whichever encoding it
 * came; a text the gateway cannot decode (a key of an unfamiliar form) as itself after a `~`, so
 * that it still round-trips and two such texts never merge.
 */
const addressPart = (address: string) => {
  const decoded = decodeAddress(address);
  return decoded ? decoded.hex : `~${address}`;
};

/** The address an id's part names, as the graph's arguments take it: `0x…`, or the text itself. */
const addressOf = (part: string) => (part.startsWith('~') ? part.slice(1) : `0x${part}`);

/** An id's parts, one string each (the relay plugin's "id" of a type, before encoding). */
const key = (...parts: (string | number | null)[]) => JSON.stringify(parts);

/** The refusal of an id whose key is not of its type's form. */
const malformed = () => badUserInput('id', 'id is not an id this gateway handed out.');

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
    value.some((part) => part !== null && typeof part !== 'string')
  ) {
    throw malformed();
  }
  return value as (string | null)[];
}

const HEX_BYTES = /^[0-9a-f]{40}$/;
/** An address part: 40 hex digits, or `~` and a text. */
const ADDRESS_PART = /^(?:[0-9a-f]{40}|~.+)$/s;
const HASH = /^0x[0-9a-f]{64}$/;

/** A part that must match `pattern`, else the id is malformed. */
const matching = (part: string | null | undefined, pattern: RegExp): string => {
  if (part == null || !pattern.test(part)) throw malformed();
  return part;
};

/** The one part of a one-part id, matching `pattern`. */
const single = (id: string, pattern: RegExp) => matching(parts(id, 1)[0], pattern);

/**
 * Each id's result: what `load` gave, or its error, as a value: graphql-js raises an Error value as
 * the error of that node alone (it is null beside it), and the other nodes keep their data.
 */
const each = <I, T>(ids: I[], load: (id: I) => Promise<T | null>) =>
  Promise.all(ids.map((id) => load(id).catch((error: Error) => error as unknown as T)));

builder.nodeRef(BlockRef, {
  id: {
    resolve: (b: Block) => key(String(b.height)),
    parse: (id) => Number(single(id, /^[1-9]\d{0,9}$/)),
  },
  loadManyWithoutCache: (heights: number[], ctx: Context) => each(heights, (h) => ctx.loaders.block(h)),
});

builder.nodeRef(TransactionRef, {
  id: {
    resolve: (tx: Transaction) => key(tx.hash.toLowerCase()),
    parse: (id) => single(id, HASH),
  },
  loadManyWithoutCache: (hashes: string[], ctx: Context) => each(hashes, (h) => ctx.loaders.transaction(h)),
});

// Any address is one: it is never missing, and reading it calls no upstream.
builder.nodeRef(AddressRef, {
  id: {
    resolve: (a: { address: string }) => key(addressPart(a.address)),
    parse: (id) => single(id, ADDRESS_PART),
  },
  loadManyWithoutCache: async (addresses: string[]) =>
    addresses.map((part) => ({ address: addressOf(part) })),
});

// Validators by their operator address, all from the one validator list.
builder.nodeRef(ValidatorRef, {
  id: {
    resolve: (v: Validator) => key(addressPart(v.operatorAddress)),
    parse: (id) => single(id, ADDRESS_PART),
  },
  loadManyWithoutCache: async (operators: string[], ctx: Context) => {
    const directory = await ctx.loaders.validatorDirectory();
    return operators.map((part) =>
      part.startsWith('~') ? directory.find(part.slice(1)) : directory.byOperator(part),
    );
  },
});

// A delegation by its delegator's and its validator's bytes: one read of the delegator's list.
builder.nodeRef(DelegationRef, {
  id: {
    resolve: (d: Delegation) => key(addressPart(d.delegatorAddress), addressPart(d.validatorAddress)),
    // The delegator is always an address the graph decoded (delegatorAddress is checked as one).
    parse: (id) => {
      const [delegator, validator] = parts(id, 2);
      return [matching(delegator, HEX_BYTES), matching(validator, ADDRESS_PART)] as [string, string];
    },
  },
  loadManyWithoutCache: (pairs: [string, string][], ctx: Context) =>
    each(pairs, async ([delegator, validator]) => {
      const page = await ctx.loaders.delegations.load({
        delegator: `0x${delegator}`,
        page: 1,
        pageSize: 100,
      });
      return page.nodes.find((d) => addressPart(d.validatorAddress) === validator) ?? null;
    }),
});

// A contract by its symbol, chain and address: the explorer finds contracts by symbol only.
builder.nodeRef(ContractRef, {
  id: {
    resolve: (c: Contract) => key(c.symbol, c.chainId, c.address === null ? null : addressPart(c.address)),
    parse: (id) => parts(id, 3),
  },
  loadManyWithoutCache: (ids: (string | null)[][], ctx: Context) =>
    each(ids, async ([symbol, chainId, address]) => {
      if (symbol == null || address == null) return null;
      const query = {
        symbol,
        chainId: chainId ?? null,
        contractType: null,
        page: 1,
        pageSize: 100,
        cursor: null,
      };
      const page = await ctx.loaders.contracts.load({ query, token: explorerToken(ctx) });
      return (
        page.nodes.find(
          (c) => c.address !== null && addressPart(c.address) === address && c.chainId === chainId,
        ) ?? null
      );
    }),
});

// A failed transaction by its number and hash: the page that starts at it, read with the caller's token.
builder.nodeRef(FailedTransactionRef, {
  id: {
    resolve: (tx: FailedTransaction) => key(tx.txNumber === null ? null : String(tx.txNumber), tx.hash),
    parse: (id) => parts(id, 2),
  },
  loadManyWithoutCache: (ids: (string | null)[][], ctx: Context) =>
    each(ids, async ([txNumber, hash]) => {
      if (txNumber == null || !/^\d{1,15}$/.test(txNumber)) return null;
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
