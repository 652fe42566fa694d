import {
  createCipheriv,
  createDecipheriv,
  createHmac,
  hkdfSync,
  randomBytes,
  timingSafeEqual,
} from 'node:crypto';
import type { RedisRejectedKind } from '../ops/metrics.js';

/**
 * The one place that authenticates and seals what the gateway keeps in Redis (contract.md §8:
 * Redis is a neighbour, not a friend). Whoever can reach it can write any key and read every key
 * and channel; without the deployment's secret they can neither make a value the gateway accepts
 * nor read a sealed one.
 * - `sign`: `<mac>.<text>`, an HMAC-SHA256 over the Redis key and the text (a value copied from
 *   another key does not verify there). For what is public anyway: cached answers, public events.
 * - `seal`: AES-256-GCM, random 96-bit IV, the Redis key as additional data (`<iv>.<tag>.<ciphertext>`),
 *   for what only a token holder may see; the text is padded to a size class first, so that a
 *   length does not tell what it holds.
 * - `verify` / `open`: the text, or null (a miss, counted by `onRejected(kind)`) when the value
 *   proves neither CURSOR_SECRET nor, during a rotation, CURSOR_SECRET_PREVIOUS.
 * Keys come from the secret by HKDF-SHA256 under labels of their own and never reach Redis;
 * `keyId` names the secret in the deployment's key prefix (redis.ts).
 */

/** Bytes of an HMAC-SHA256, and their length in base64url: every signed value starts with them. */
const MAC_BYTES = 32;
const MAC_CHARS = 43;
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * The smallest sealed size class: a refusal (tens of bytes) and a failed transaction (about 700)
 * both fill one. Above it, powers of two: a length tells at most which class a text falls in.
 */
const PAD_FLOOR = 1_024;
/** Ends the text within its class (ISO/IEC 7816-4 padding: 0x80, then zeros). */
const PAD_MARK = 0x80;

const derive = (secret: string, label: string) =>
  Buffer.from(hkdfSync('sha256', secret, 'chain-gateway redis values', label, 32));

/**
 * The name of a secret in Redis keys: 8 hex digits of an HMAC under a label of its own, so that
 * deployments with different secrets (or one half-way through a rotation) never share a key, while
 * the name tells nothing of the secret.
 */
export const keyId = (secret: string): string =>
  createHmac('sha256', secret).update('chain-gateway redis key id').digest('hex').slice(0, 8);

/** `text` in UTF-8, marked and padded with zeros to its size class. */
function pad(text: string): Buffer {
  const bytes = Buffer.byteLength(text);
  let size = PAD_FLOOR;
  while (size < bytes + 1) size *= 2;
  const padded = Buffer.alloc(size);
  padded.write(text, 'utf8');
  padded[bytes] = PAD_MARK;
  return padded;
}

/** The text `pad` padded, or null when the padding is not its own. */
function unpad(padded: Buffer): string | null {
  let end = padded.length - 1;
  while (end >= 0 && padded[end] === 0) end--;
  return end >= 0 && padded[end] === PAD_MARK ? padded.subarray(0, end).toString('utf8') : null;
}

/** The two keys of one secret. */
interface Keys {
  mac: Buffer;
  seal: Buffer;
}

const keysOf = (secret: string): Keys => ({ mac: derive(secret, 'mac'), seal: derive(secret, 'seal') });

export class RedisValues {
  /** The current secret's keys first (they sign and seal), then the previous one's (they only prove). */
  private readonly keys: Keys[];

  /** `previous`: CURSOR_SECRET_PREVIOUS during a rotation, trusted for reading, never for writing. */
  constructor(
    secret: string,
    private readonly onRejected: (kind: RedisRejectedKind) => void,
    previous: string | null = null,
  ) {
    this.keys = previous === null ? [keysOf(secret)] : [keysOf(secret), keysOf(previous)];
  }

  /** Counts a value that proved the key but cannot be taken (a live message not newer than one seen). */
  rejected(kind: RedisRejectedKind): void {
    this.onRejected(kind);
  }

  private get current(): Keys {
    return this.keys[0] as Keys;
  }

  /** A key holds no NUL (they are ours): it and the text are one unambiguous message. */
  private mac(macKey: Buffer, key: string, text: string): Buffer {
    return createHmac('sha256', macKey).update(key).update('\0').update(text).digest();
  }

  /** `text` as it is kept under `key`: readable, and proven by the deployment's key. */
  sign(key: string, text: string): string {
    return `${this.mac(this.current.mac, key, text).toString('base64url')}.${text}`;
  }

  /** The text `stored` under `key` holds, or null (counted as `kind`) when it was not signed for it. */
  verify(key: string, stored: string, kind: RedisRejectedKind): string | null {
    if (stored.charAt(MAC_CHARS) === '.') {
      const given = Buffer.from(stored.slice(0, MAC_CHARS), 'base64url');
      const text = stored.slice(MAC_CHARS + 1);
      const proven = (keys: Keys) => timingSafeEqual(given, this.mac(keys.mac, key, text));
      if (given.length === MAC_BYTES && this.keys.some(proven)) return text;
    }
    this.onRejected(kind);
    return null;
  }

  /** `text` as it is kept under `key`: unreadable without the deployment's key, and proven by it. */
  seal(key: string, text: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.current.seal, iv).setAAD(Buffer.from(key));
    const sealed = Buffer.concat([cipher.update(pad(text)), cipher.final()]);
    return [iv, cipher.getAuthTag(), sealed].map((part) => part.toString('base64url')).join('.');
  }

  /** The text sealed under `key`, or null (counted as `kind`) when it was not sealed for it. */
  open(key: string, stored: string, kind: RedisRejectedKind): string | null {
    const [iv, tag, sealed, ...rest] = stored.split('.').map((part) => Buffer.from(part, 'base64url'));
    if (iv?.length === IV_BYTES && tag?.length === TAG_BYTES && sealed && rest.length === 0) {
      for (const keys of this.keys) {
        const text = this.openWith(keys.seal, key, iv, tag, sealed);
        if (text !== null) return text;
      }
    }
    this.onRejected(kind);
    return null;
  }

  private openWith(sealKey: Buffer, key: string, iv: Buffer, tag: Buffer, sealed: Buffer): string | null {
    try {
      const decipher = createDecipheriv('aes-256-gcm', sealKey, iv).setAAD(Buffer.from(key));
      decipher.setAuthTag(tag);
      return unpad(Buffer.concat([decipher.update(sealed), decipher.final()]));
    } catch {
      // An altered value, or one sealed for another key or deployment: the tag does not match.
      return null;
    }
  }
}
