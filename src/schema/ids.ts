import { badUserInput } from '../errors.js';

/**
 * The graph's global object ids (contract.md §6): `base64url("<Type>:<key>")`, where the key is
 * the type's own (nodes.ts: a height, a hash, an address's bytes, …). Opaque to clients and stable:
 * the same object has the same id whichever dialect or address encoding the upstream used. An id
 * of a type this graph does not have, or not of this form, is BAD_USER_INPUT before any upstream
 * call.
 */

const TYPES: ReadonlySet<string> = new Set([
  'Block',
  'Transaction',
  'Address',
  'Validator',
  'Delegation',
  'Contract',
  'FailedTransaction',
  'BuybackRound',
]);

const MAX_ID = 1_024;

export const encodeGlobalID = (typename: string, id: string | number | bigint): string =>
  Buffer.from(`${typename}:${id}`).toString('base64url');

/** The type and key of a global id of this graph; null for any other text. */
function parseGlobalID(globalID: string): { typename: string; id: string } | null {
  if (globalID.length > MAX_ID || !/^[A-Za-z0-9_-]+$/.test(globalID)) return null;
  const text = Buffer.from(globalID, 'base64url').toString('utf8');
  const separator = text.indexOf(':');
  const typename = text.slice(0, separator);
  return separator > 0 && TYPES.has(typename) ? { typename, id: text.slice(separator + 1) } : null;
}

/** Whether a text is a global id of this graph (the rule of `node(id:)` and `nodes(ids:)`). */
export const isGlobalID = (globalID: string): boolean => parseGlobalID(globalID) !== null;

/** The type and key of a global id; BAD_USER_INPUT for anything else (the relay plugin's decoder). */
export function decodeGlobalID(globalID: string): { typename: string; id: string } {
  const decoded = parseGlobalID(globalID);
  if (!decoded) throw badUserInput('id', 'id is not an id of this graph: pass back an id it handed out.');
  return decoded;
}
