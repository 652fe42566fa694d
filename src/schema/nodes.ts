import { decodeAddress } from '../lib/address.js';
import { INT32_MAX } from '../lib/decimal.js';
import type {
  Block,
  BuybackRound,
  Contract,
  Delegation,
  FailedTransaction,
  Transaction,
  Validator,
} from '../upstream/models.js';
import { builder, UPSTREAM_COST } from './builder.js';
import { BuybackRoundRef } from './buyback.js';
import { AddressRef, BlockRef, TransactionRef } from './chain.js';
import type { Context } from './context.js';
import { DelegationRef } from './delegations.js';
import { ContractRef, explorerToken, FailedTransactionRef } from './explorer.js';
import { type IdRead, idKind, KeyProblem } from './ids.js';
import { PAGE_SIZE, pagedCost } from './page.js';
import {
  accountAddress,
  address,
  between,
  type Rule,
  ruleMessage,
  text,
  transactionHash,
  upstreamKey,
} from './rules.js';
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

type Parts = (string | null | undefined)[];

/** The refusal of an id whose key is not of its type's form: no id the gateway handed out looks so. */
const NOT_HANDED_OUT = new KeyProblem('is not an id this gateway handed out.');

/** The parts of a key: `count` strings or nulls, else NOT_HANDED_OUT. */
function parts(id: string, count: number): Parts | KeyProblem {
  let value: unknown;
  try {
    value = JSON.parse(id);
  } catch {
    return NOT_HANDED_OUT;
  }
  const ok =
    Array.isArray(value) &&
    value.length === count &&
    value.every((part) => part === null || typeof part === 'string');
  return ok ? (value as Parts) : NOT_HANDED_OUT;
}

const HEX_BYTES = /^[0-9a-f]{40}$/;
const TX_NUMBER = /^\d{1,15}$/;

/**
 * Whether a part names an address as ids do: its 20 bytes, or `~` and a text that is not an
 * address (one that is would have been named by its bytes).
 */
const isAddressPart = (part: string | null | undefined): part is string =>
  typeof part === 'string' &&
  (HEX_BYTES.test(part) || (part.startsWith('~') && decodeAddress(part.slice(1)) === null));

/** A part that may be null, else `check`ed. */
const orNull =
  (check: (part: string) => boolean) =>
  (part: string | null | undefined): boolean =>
    part === null || (part !== undefined && check(part));

/** One kind of id whose key is a list of parts: its form, the rules its parts answer to, its value. */
interface KeySpec<V> {
  /** Whether the parts are of the kind's form (what the gateway hands out). */
  form(parts: Parts): boolean;
  /** Each part beside the rule of the argument it stands for, in the field that reads the same thing. */
  rules(parts: Parts): [Rule, unknown][];
  /** What the kind's loader takes. */
  value(parts: Parts): V;
  read(value: V): IdRead | null;
  dearest: number;
}

/** Declares a kind of id of `count` parts (ids.ts), and returns the relay plugin's `parse` of its key. */
function keyed<V>(typename: string, count: number, spec: KeySpec<V>): (id: string) => V {
  const what = `${/^[AEIOU]/.test(typename) ? 'an' : 'a'} ${typename} id`;
  return idKind<V>(typename, {
    decode: (id) => {
      const p = parts(id, count);
      if (p instanceof KeyProblem) return p;
      if (!spec.form(p)) return NOT_HANDED_OUT;
      for (const [rule, value] of spec.rules(p)) {
        const message = ruleMessage(rule, value);
        if (message !== null) {
          return new KeyProblem(`is ${what} that breaks a rule of the field it stands for: ${message}`);
        }
      }
      return spec.value(p);
    },
    read: spec.read,
    dearest: spec.dearest,
  });
}

/** What reading one page of `pageSize` costs, as the paged fields price it: the call, and 1 for each item read. */
const pageRead = (pageSize: number) => {
  const { field, multiplier } = pagedCost({ pageSize });
  return field + multiplier;
};

/**
 * At most this many pages of 100 are read to find a failed transaction by its hash alone (an
 * explorer that sends no tx_number): the newest 500 of the last 24 hours.
 */
const FAILED_SEARCH_PAGES = 5;

/**
 * Each id's result: what `load` gave, or its error, as a value: graphql-js raises an Error value as
 * the error of that node alone (it is null beside it), and the other nodes keep their data.
 */
const each = <I, T>(ids: I[], load: (id: I) => Promise<T | null>) =>
  Promise.all(ids.map((id) => load(id).catch((error: Error) => error as unknown as T)));

builder.nodeRef(BlockRef, {
  id: {
    resolve: (b: Block) => key(String(b.height)),
    // block(height:)'s rule, within its Int.
    parse: keyed('Block', 1, {
      form: ([height]) => typeof height === 'string' && /^[1-9]\d*$/.test(height),
      rules: ([height]) => [[between('height', 1, INT32_MAX), Number(height)]],
      value: ([height]) => Number(height),
      read: (height) => ({ key: `Block:${height}`, cost: UPSTREAM_COST }),
      dearest: UPSTREAM_COST,
    }),
  },
  loadManyWithoutCache: (heights: number[], ctx: Context) => each(heights, (h) => ctx.loaders.block(h)),
});

builder.nodeRef(TransactionRef, {
  id: {
    resolve: (tx: Transaction) => key(tx.hash.toLowerCase()),
    parse: keyed('Transaction', 1, {
      form: ([hash]) => typeof hash === 'string',
      rules: ([hash]) => [[transactionHash('hash'), hash]],
      value: ([hash]) => (hash as string).toLowerCase(),
      read: (hash) => ({ key: `Transaction:${hash}`, cost: UPSTREAM_COST }),
      dearest: UPSTREAM_COST,
    }),
  },
  loadManyWithoutCache: (hashes: string[], ctx: Context) => each(hashes, (h) => ctx.loaders.transaction(h)),
});

// Any address is one: it is never missing, and reading it calls no upstream (its fields may).
builder.nodeRef(AddressRef, {
  id: {
    resolve: (a: { address: string }) => key(addressPart(a.address)),
    parse: keyed('Address', 1, {
      form: ([part]) => isAddressPart(part),
      rules: ([part]) => [[address('address'), addressOf(part as string)]],
      value: ([part]) => addressOf(part as string),
      read: () => null,
      dearest: 0,
    }),
  },
  loadManyWithoutCache: async (addresses: string[]) => addresses.map((address) => ({ address })),
});

// Validators by their operator address, all from the one validator list.
builder.nodeRef(ValidatorRef, {
  id: {
    resolve: (v: Validator) => key(addressPart(v.operatorAddress)),
    parse: keyed('Validator', 1, {
      form: ([part]) => isAddressPart(part),
      rules: ([part]) => [[upstreamKey('operatorAddress'), addressOf(part as string)]],
      value: ([part]) => part as string,
      read: () => ({ key: 'Validator', cost: UPSTREAM_COST }),
      dearest: UPSTREAM_COST,
    }),
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
    parse: keyed('Delegation', 2, {
      form: ([delegator, validator]) => isAddressPart(delegator) && isAddressPart(validator),
      rules: ([delegator, validator]) => [
        [accountAddress('delegatorAddress'), addressOf(delegator as string)],
        [upstreamKey('validatorAddress'), addressOf(validator as string)],
      ],
      value: ([delegator, validator]) => [addressOf(delegator as string), validator as string] as const,
      read: ([delegator]) => ({ key: `Delegation:${delegator}`, cost: pageRead(PAGE_SIZE.max) }),
      dearest: pageRead(PAGE_SIZE.max),
    }),
  },
  loadManyWithoutCache: (pairs: (readonly [string, string])[], ctx: Context) =>
    each(pairs, async ([delegator, validator]) => {
      const page = await ctx.loaders.delegations.load({ delegator, page: 1, pageSize: PAGE_SIZE.max });
      return page.nodes.find((d) => addressPart(d.validatorAddress) === validator) ?? null;
    }),
});

// A contract by its symbol, chain and address: the explorer finds contracts by symbol only.
builder.nodeRef(ContractRef, {
  id: {
    resolve: (c: Contract) => key(c.symbol, c.chainId, c.address === null ? null : addressPart(c.address)),
    parse: keyed('Contract', 3, {
      form: ([symbol, chainId, address]) =>
        symbol !== undefined && chainId !== undefined && orNull(isAddressPart)(address),
      rules: ([symbol, chainId, address]) => [
        [text('symbol'), symbol],
        [text('chainId'), chainId],
        [upstreamKey('address'), address == null ? null : addressOf(address)],
      ],
      value: (p) => p as (string | null)[],
      read: ([symbol, chainId, address]) =>
        symbol == null || address == null
          ? null
          : { key: `Contract:${key(symbol, chainId ?? null)}`, cost: pageRead(PAGE_SIZE.max) },
      dearest: pageRead(PAGE_SIZE.max),
    }),
  },
  loadManyWithoutCache: (ids: (string | null)[][], ctx: Context) =>
    each(ids, async ([symbol, chainId, address]) => {
      if (symbol == null || address == null) return null;
      const query = {
        symbol,
        chainId: chainId ?? null,
        contractType: null,
        page: 1,
        pageSize: PAGE_SIZE.max,
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

/** A failed transaction by its number: the page of one that starts at it, read with the caller's token. */
async function failedByNumber(ctx: Context, txNumber: string, hash: string | null) {
  // The list runs newest first; a cursor is "older than": the one after txNumber + 1 is txNumber.
  const args = { page: 1, pageSize: 1, cursor: String(Number(txNumber) + 1) };
  const page = await ctx.loaders.failedTransactions.load({ args, token: explorerToken(ctx) });
  const [found] = page.nodes;
  return found && String(found.txNumber) === txNumber && found.hash === hash ? found : null;
}

/**
 * A failed transaction by its hash alone (the explorer sent no tx_number): looked for in the
 * newest FAILED_SEARCH_PAGES pages of the 24-hour list, read with the caller's token. The pages are
 * the request's loaders', so several such ids share them.
 */
async function failedByHash(ctx: Context, hash: string) {
  const token = explorerToken(ctx);
  for (let page = 1; page <= FAILED_SEARCH_PAGES; page++) {
    const args = { page, pageSize: PAGE_SIZE.max };
    const { nodes, pageInfo } = await ctx.loaders.failedTransactions.load({ args, token });
    const found = nodes.find((tx) => tx.hash === hash);
    if (found || !pageInfo.hasNextPage) return found ?? null;
  }
  return null;
}

builder.nodeRef(FailedTransactionRef, {
  id: {
    resolve: (tx: FailedTransaction) => key(tx.txNumber === null ? null : String(tx.txNumber), tx.hash),
    parse: keyed('FailedTransaction', 2, {
      form: ([txNumber, hash]) => orNull((n) => TX_NUMBER.test(n))(txNumber) && hash !== undefined,
      rules: ([, hash]) => [[upstreamKey('hash'), hash]],
      value: ([txNumber, hash]) => [txNumber ?? null, hash ?? null] as const,
      read: ([txNumber, hash]) =>
        txNumber !== null
          ? { key: `FailedTransaction:${txNumber}`, cost: pageRead(1) }
          : hash !== null
            ? { key: 'FailedTransaction:search', cost: FAILED_SEARCH_PAGES * pageRead(PAGE_SIZE.max) }
            : null,
      dearest: FAILED_SEARCH_PAGES * pageRead(PAGE_SIZE.max),
    }),
  },
  loadManyWithoutCache: (ids: (readonly [string | null, string | null])[], ctx: Context) =>
    each(ids, async ([txNumber, hash]) =>
      txNumber !== null
        ? failedByNumber(ctx, txNumber, hash)
        : hash !== null
          ? failedByHash(ctx, hash)
          : null,
    ),
});

// The staking service answers rounds only to an update: a round's id names it, and reads as null.
builder.nodeRef(BuybackRoundRef, {
  id: {
    resolve: (r: BuybackRound) => key(r.roundId),
    parse: keyed('BuybackRound', 1, {
      form: ([roundId]) => roundId !== undefined,
      rules: ([roundId]) => [[text('roundId'), roundId]],
      value: ([roundId]) => roundId ?? '',
      read: () => null,
      dearest: 0,
    }),
  },
  loadManyWithoutCache: async (ids: string[]) => ids.map(() => null),
});
