import { decodeAddress, encodeBech32, splitPrefix } from '../../lib/address.js';

/**
 * How the staking service writes account addresses, learned from what it sends (real-upstreams.md:
 * deployments use `byb`, `biya` or `inj`, and the upstream-api.md dialect uses `0x…` hex). The
 * gateway accepts an account in any encoding and calls staking in the one it speaks.
 */
export type AccountEncoding = { kind: 'bech32'; prefix: string } | { kind: 'hex' };

export class StakeAccounts {
  private learned: AccountEncoding | null;

  /** `prefix`: BECH32_PREFIX, which overrides anything learned. */
  constructor(private readonly prefix: string | null) {
    this.learned = prefix ? { kind: 'bech32', prefix } : null;
  }

  /** The encoding staking speaks, once known. */
  get encoding(): AccountEncoding | null {
    return this.learned;
  }

  /**
   * Learns the encoding from an address staking sent: an account (`byb1…`, `0x…`) or a validator's
   * operator or consensus address (`bybvaloper1…` → accounts are `byb1…`).
   */
  learnFrom(address: string): void {
    if (this.prefix || this.learned) return;
    const decoded = decodeAddress(address);
    if (!decoded) return;
    this.learned =
      decoded.prefix === 'hex'
        ? { kind: 'hex' }
        : { kind: 'bech32', prefix: splitPrefix(decoded.prefix).account };
  }

  /**
   * An account address as staking expects it. Text that is no address, and any address while the
   * encoding is unknown, goes as it was given.
   */
  encode(address: string): string {
    const decoded = decodeAddress(address);
    const encoding = this.learned;
    if (!decoded || !encoding) return address;
    return encoding.kind === 'hex' ? `0x${decoded.hex}` : encodeBech32(encoding.prefix, decoded.hex);
  }
}
