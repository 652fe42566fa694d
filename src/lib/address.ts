import { bech32 } from 'bech32';

/**
 * Chain addresses in their two encodings. An account is 20 bytes, shown as `0x…` hex by the search
 * service and as bech32 (`<prefix>1…`) by staking; validators add the `<prefix>valoper1…` and
 * `<prefix>valcons1…` forms. The prefix differs per deployment (`byb`, `biya`, `inj`), so nothing
 * here assumes one: a decoded address keeps its prefix, and `key` compares addresses by their bytes.
 */

export interface DecodedAddress {
  /** `hex` for `0x…`; otherwise the bech32 human-readable part, e.g. `bybvaloper`. */
  prefix: string;
  /** The 20 bytes as 40 lowercase hex digits. */
  hex: string;
}

const HEX_ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const ROLE_SUFFIXES = ['valoper', 'valcons'] as const;
export type AddressRole = 'account' | (typeof ROLE_SUFFIXES)[number];

/** The bytes and prefix of a `0x…` or bech32 address of 20 bytes; null for anything else. */
export function decodeAddress(text: string): DecodedAddress | null {
  if (HEX_ADDRESS.test(text)) return { prefix: 'hex', hex: text.slice(2).toLowerCase() };
  if (text.length > 90 || !text.includes('1')) return null;
  try {
    const { prefix, words } = bech32.decode(text);
    const bytes = bech32.fromWords(words);
    if (bytes.length !== 20) return null;
    return { prefix, hex: Buffer.from(bytes).toString('hex') };
  } catch {
    return null;
  }
}

/** A bech32 address of 20 bytes given as 40 hex digits. */
export function encodeBech32(prefix: string, hex: string): string {
  return bech32.encode(prefix, bech32.toWords(Buffer.from(hex, 'hex')));
}

/** The account prefix and role of a bech32 prefix: `bybvaloper` → `byb`, `valoper`. */
export function splitPrefix(prefix: string): { account: string; role: AddressRole } {
  for (const suffix of ROLE_SUFFIXES) {
    if (prefix.endsWith(suffix) && prefix.length > suffix.length) {
      return { account: prefix.slice(0, -suffix.length), role: suffix };
    }
  }
  return { account: prefix, role: 'account' };
}

/**
 * A key that is equal for the same address in any encoding: the role and the 20 bytes. Text that
 * is not an address keys as itself, lowercased.
 */
export function addressKey(text: string): string {
  const decoded = decodeAddress(text);
  if (!decoded) return text.toLowerCase();
  const role = decoded.prefix === 'hex' ? 'account' : splitPrefix(decoded.prefix).role;
  return `${role}:${decoded.hex}`;
}

/** A validator's addresses: its operator's, its consensus key's (block proposers) and its wallet's. */
export interface ValidatorAddresses {
  operatorAddress: string;
  consensusAddress: string;
  walletAddress: string;
}

const validatorKeys = new WeakMap<ValidatorAddresses, readonly (readonly [string, string])[]>();

/**
 * Every address a validator is known by, each with its `addressKey`, decoded once per record
 * (a live event's validator is matched against every subscriber's address).
 */
export function validatorAddressKeys(v: ValidatorAddresses): readonly (readonly [string, string])[] {
  let keys = validatorKeys.get(v);
  if (!keys) {
    keys = [v.walletAddress, v.consensusAddress, v.operatorAddress].map((a) => [a, addressKey(a)] as const);
    validatorKeys.set(v, keys);
  }
  return keys;
}
