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

/** The type and key of a global id; BAD_USER_INPUT naming `argument` for anything else. */
export function decodeGlobalID(globalID: string, argument = 'id'): { typename: string; id: string } {
  const text =
    globalID.length <= MAX_ID && /^[A-Za-z0-9_-]+$/.test(globalID)
      ? Buffer.from(globalID, 'base64url').toString('utf8')
      : '';
  const separator = text.indexOf(':');
  const typename = text.slice(0, separator);
  if (separator < 1 || !TYPES.has(typename)) {
    throw badUserInput(argument, `${argument} is not an id of this graph: pass back an id it handed out.`);
  }
  return { typename, id: text.slice(separator + 1) };
}

/** Whether a text is a global id of this graph (the rule of `node(id:)` and `nodes(ids:)`). */
export const isGlobalID = (globalID: string): boolean => {
  try {
    decodeGlobalID(globalID);
    return true;
  } catch {
    return false;
  }
};
