import { badUserInput } from '../errors.js';

/**
 * The graph's global object ids (contract.md §6): `base64url("<Type>:<key>")`, where the key is
 * the type's own (nodes.ts: a height, a hash, an address's bytes, …). Opaque to clients and stable:
 * the same object has the same id whichever dialect or address encoding the upstream used.
 *
 * An id is an argument (contract.md §7): each kind of id is declared once, beside its node type
 * (nodes.ts, `idKind`), with how its key reads under the rules of the field it stands for and the
 * upstream read one id makes. The same declaration refuses an id before any upstream call (the
 * rules of `node(id:)` and `nodes(ids:)`, rules.ts) and prices it (`nodeCost`, `nodesCost`), so
 * that what is priced and what is read can never disagree.
 */

const MAX_ID = 1_024;

/** Why a key is not one of its kind: the rest of a sentence that starts with the argument's name. */
export class KeyProblem {
  constructor(readonly reason: string) {}
}

/** The upstream read an id makes. Ids whose reads have the same `key` share it: the request's loaders make it once. */
export interface IdRead {
  key: string;
  cost: number;
}

/** One kind of id: how its key reads and what reading one costs. */
export interface IdKind<V> {
  /** The key's value, as the kind's loader takes it; a KeyProblem when it breaks a rule. */
  decode(key: string): V | KeyProblem;
  /** The read one id makes; null when it makes none. */
  read(value: V): IdRead | null;
  /** The dearest read an id of this kind can make. */
  dearest: number;
}

const kinds = new Map<string, IdKind<unknown>>();

const NOT_OURS = new KeyProblem('is not an id of this graph: pass back an id it handed out.');

export const encodeGlobalID = (typename: string, id: string | number | bigint): string =>
  Buffer.from(`${typename}:${id}`).toString('base64url');

/** The type and key of a global id of a kind this graph has; null for any other text. */
function parseGlobalID(globalID: string): { typename: string; id: string } | null {
  if (globalID.length > MAX_ID || !/^[A-Za-z0-9_-]+$/.test(globalID)) return null;
  const text = Buffer.from(globalID, 'base64url').toString('utf8');
  const separator = text.indexOf(':');
  const typename = text.slice(0, separator);
  return separator > 0 && kinds.has(typename) ? { typename, id: text.slice(separator + 1) } : null;
}

/** The type and key of a global id; BAD_USER_INPUT for anything else (the relay plugin's decoder). */
export function decodeGlobalID(globalID: string): { typename: string; id: string } {
  const decoded = parseGlobalID(globalID);
  if (!decoded) throw badUserInput('id', `id ${NOT_OURS.reason}`);
  return decoded;
}

/**
 * Declares a kind of id, and returns the relay plugin's `parse` of its key. The rules of `node(id:)`
 * and `nodes(ids:)` refuse a key that breaks them before the plugin parses it; the refusal here is
 * the last guard, never the first.
 */
export function idKind<V>(typename: string, kind: IdKind<V>): (key: string) => V {
  kinds.set(typename, kind as IdKind<unknown>);
  return (key) => {
    const value = kind.decode(key);
    if (value instanceof KeyProblem) throw badUserInput('id', `id ${value.reason}`);
    return value;
  };
}

/** What a text names: its kind and its key's value, or why it is not an id of this graph. */
function readId(globalID: unknown): { kind: IdKind<unknown>; value: unknown } | KeyProblem {
  const decoded = typeof globalID === 'string' ? parseGlobalID(globalID) : null;
  const kind = decoded && kinds.get(decoded.typename);
  if (!decoded || !kind) return NOT_OURS;
  let value: unknown;
  try {
    value = kind.decode(decoded.id);
  } catch {
    // A key its kind cannot even read is refused like any other text that is not an id.
    return NOT_OURS;
  }
  return value instanceof KeyProblem ? value : { kind, value };
}

/** Why a text is not an id `node(id:)` takes (the rest of a sentence after the argument's name); null when it is one. */
export function idProblem(globalID: string): string | null {
  const id = readId(globalID);
  return id instanceof KeyProblem ? id.reason : null;
}

/** The dearest read of any kind of id: what an id that cannot be decoded is charged. */
const dearest = () => Math.max(1, ...[...kinds.values()].map((kind) => kind.dearest));

/**
 * What reading these ids costs: each distinct read once, as the loaders make it; each id that
 * cannot be decoded, the dearest read of any kind (validation then refuses it, but pricing runs
 * first and must not depend on it). At least 1. Never throws, whatever the arguments hold.
 */
function idsCost(ids: readonly unknown[]): number {
  const reads = new Map<string, number>();
  let undecoded = 0;
  for (const globalID of ids) {
    const id = readId(globalID);
    if (id instanceof KeyProblem) {
      undecoded++;
      continue;
    }
    // A read is worked out from a decoded value only: what passed its kind's rules.
    const read = id.kind.read(id.value);
    if (read) reads.set(read.key, Math.max(read.cost, reads.get(read.key) ?? 0));
  }
  let cost = undecoded > 0 ? undecoded * dearest() : 0;
  for (const each of reads.values()) cost += each;
  return Math.max(cost, 1);
}

/** The complexity of `node(id:)`: the read its id makes, and its selection once. */
export const nodeCost = (args: { id?: unknown }): { field: number; multiplier: number } => ({
  field: idsCost([args.id]),
  multiplier: 1,
});

/** The complexity of `nodes(ids:)`: the reads its ids make, and its selection once per id. */
export const nodesCost = (args: { ids?: unknown }): { field: number; multiplier: number } => {
  const ids = Array.isArray(args.ids) ? args.ids : [args.ids];
  return { field: idsCost(ids), multiplier: ids.length };
};
