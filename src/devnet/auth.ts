import { timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { HttpError } from './http.js';

/** The bearer tokens the devnet accepts: its own, and any a test grants (and may revoke). */
export class DevnetTokens {
  private readonly tokens: Set<string>;

  constructor(tokens: readonly string[]) {
    this.tokens = new Set(tokens);
  }

  grant(token: string): void {
    this.tokens.add(token);
  }

  revoke(token: string): void {
    this.tokens.delete(token);
  }

  /** Whether `given` is one of the tokens, compared in constant time for each. */
  accepts(given: string): boolean {
    const bytes = Buffer.from(given);
    let found = false;
    for (const token of this.tokens) {
      const expected = Buffer.from(token);
      if (expected.length === bytes.length && timingSafeEqual(expected, bytes)) found = true;
    }
    return found;
  }
}

/** Accepts exactly `Authorization: Bearer <token>` (scheme case-insensitive) of a known token; 401 otherwise. */
export function requireBearer(headers: IncomingHttpHeaders, tokens: DevnetTokens): void {
  const header = headers.authorization ?? '';
  const match = /^bearer +(\S+)$/i.exec(header);
  if (!match?.[1] || !tokens.accepts(match[1])) {
    throw new HttpError(401, match ? 'invalid access token' : 'missing bearer token', {
      headers: { 'www-authenticate': 'Bearer' },
    });
  }
}
