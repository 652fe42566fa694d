import { createHmac, timingSafeEqual } from 'node:crypto';
import { badUserInput } from '../errors.js';

/**
 * Opaque page cursors (contract.md §6): a cursor names its list and the upstream's key of the
 * node it points after, and is signed, so that whatever the key looks like (an address of a form
 * the gateway does not know, a transaction number) it is taken back for the same list, while a
 * cursor of another list, or one made up, is refused (BAD_USER_INPUT) before any upstream call.
 *
 * `c1.<base64url(list \0 key)>.<base64url(HMAC-SHA256(list \0 key))[0..16]>`: the key is carried,
 * not hidden (it is the upstream's own paging key); the signature only vouches that the gateway
 * handed the cursor out. Every instance of a deployment shares the secret (CURSOR_SECRET, or one
 * derived from the deployment's upstreams), so a cursor from one is good on any other. During a
 * rotation, a cursor signed with CURSOR_SECRET_PREVIOUS is taken back too; new ones are signed
 * with CURSOR_SECRET alone.
 */

const VERSION = 'c1';
/** The longest cursor taken back: room for an upstream key of about 3 KB. */
export const MAX_CURSOR = 4_096;

const sign = (secret: string, payload: string): string =>
  createHmac('sha256', secret).update(payload).digest('base64url').slice(0, 16);

export class CursorCodec {
  /** `previous`: CURSOR_SECRET_PREVIOUS, trusted for cursors handed out before the rotation. */
  constructor(
    private readonly secret: string,
    private readonly previous: string | null = null,
  ) {}

  /** The cursor of `key` in `list`. */
  encode(list: string, key: string): string {
    const payload = `${list}\u0000${key}`;
    return `${VERSION}.${Buffer.from(payload).toString('base64url')}.${sign(this.secret, payload)}`;
  }

  /** Whether `signature` is the payload's under the current secret or the previous one. */
  private signed(payload: string, signature: string): boolean {
    const given = Buffer.from(signature);
    const secrets = this.previous === null ? [this.secret] : [this.secret, this.previous];
    return secrets.some((secret) => {
      const expected = Buffer.from(sign(secret, payload));
      return expected.length === given.length && timingSafeEqual(expected, given);
    });
  }

  /** The key a cursor of `list` carries; BAD_USER_INPUT naming `argument` for any other text. */
  decode(list: string, cursor: string, argument: string): string {
    const refused = () =>
      badUserInput(
        argument,
        `${argument} is not a cursor of this list: pass back a PageInfo.endCursor or an edge's cursor.`,
      );
    const [version, body, signature, ...rest] = cursor.length <= MAX_CURSOR ? cursor.split('.') : [];
    if (version !== VERSION || body === undefined || signature === undefined || rest.length > 0)
      throw refused();
    const payload = Buffer.from(body, 'base64url').toString('utf8');
    if (!this.signed(payload, signature)) throw refused();
    const separator = payload.indexOf('\u0000');
    if (payload.slice(0, separator) !== list) throw refused();
    return payload.slice(separator + 1);
  }
}
