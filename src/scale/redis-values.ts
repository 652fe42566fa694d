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
 * Redis is a neighbour, not a friend). Whoever can reach the deployment's Redis can write any key
 * and read every key and channel; without the deployment's secret they can neither make a value
 * the gateway accepts nor read a sealed one.
 *
 * - `sign`: an HMAC-SHA256 over the Redis key and the text, then the text (`<mac>.<text>`). The
 *   key is in the MAC, so a value copied from another key (another cache entry, another source's
 *   lease) does not verify there. For what is public anyway: cached answers, public events.
 * - `seal`: AES-256-GCM with a random 96-bit IV and the Redis key as additional authenticated data
 *   (`<iv>.<tag>.<ciphertext>`), for what only a token holder may see: the events and state of
 *   private live sources.
 * - `verify` / `open`: the text, or null when the value does not prove the key; then it is a miss
 *   (never served, never parsed) and `onRejected(kind)` counts it (`redis_rejected_total{kind}`).
 *
 * Both keys are derived once, by HKDF-SHA256 from the deployment's secret (CURSOR_SECRET) under
 * labels of their own, so that neither is the secret that signs cursors and names tokens, nor each
 * other. Nothing of them is ever sent to Redis: its scripts compare bytes, Node proves them.
 */

/** Bytes of an HMAC-SHA256, and their length in base64url: every signed value starts with them. */
const MAC_BYTES = 32;
const MAC_CHARS = 43;
const IV_BYTES = 12;
const TAG_BYTES = 16;

const derive = (secret: string, label: string) =>
  Buffer.from(hkdfSync('sha256', secret, 'chain-gateway redis values', label, 32));

export class RedisValues {
  private readonly macKey: Buffer;
  private readonly sealKey: Buffer;

  constructor(
    secret: string,
    private readonly onRejected: (kind: RedisRejectedKind) => void,
  ) {
    this.macKey = derive(secret, 'mac');
    this.sealKey = derive(secret, 'seal');
  }

  /** A key holds no NUL (they are ours): it and the text are one unambiguous message. */
  private mac(key: string, text: string): Buffer {
    return createHmac('sha256', this.macKey).update(key).update('\0').update(text).digest();
  }

  /** `text` as it is kept under `key`: readable, and proven by the deployment's key. */
  sign(key: string, text: string): string {
    return `${this.mac(key, text).toString('base64url')}.${text}`;
  }

  /** The text `stored` under `key` holds, or null (counted as `kind`) when it was not signed for it. */
  verify(key: string, stored: string, kind: RedisRejectedKind): string | null {
    if (stored.charAt(MAC_CHARS) === '.') {
      const given = Buffer.from(stored.slice(0, MAC_CHARS), 'base64url');
      const text = stored.slice(MAC_CHARS + 1);
      if (given.length === MAC_BYTES && timingSafeEqual(given, this.mac(key, text))) return text;
    }
    this.onRejected(kind);
    return null;
  }

  /** `text` as it is kept under `key`: unreadable without the deployment's key, and proven by it. */
  seal(key: string, text: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.sealKey, iv).setAAD(Buffer.from(key));
    const sealed = Buffer.concat([cipher.update(text, 'utf8'), cipher.final()]);
    return [iv, cipher.getAuthTag(), sealed].map((part) => part.toString('base64url')).join('.');
  }

  /** The text sealed under `key`, or null (counted as `kind`) when it was not sealed for it. */
  open(key: string, stored: string, kind: RedisRejectedKind): string | null {
    const [iv, tag, sealed, ...rest] = stored.split('.').map((part) => Buffer.from(part, 'base64url'));
    if (iv?.length === IV_BYTES && tag?.length === TAG_BYTES && sealed && rest.length === 0) {
      try {
        const decipher = createDecipheriv('aes-256-gcm', this.sealKey, iv).setAAD(Buffer.from(key));
        decipher.setAuthTag(tag);
        return Buffer.concat([decipher.update(sealed), decipher.final()]).toString('utf8');
      } catch {
        // An altered value, or one sealed for another key or deployment: the tag does not match.
      }
    }
    this.onRejected(kind);
    return null;
  }
}
