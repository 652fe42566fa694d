import { timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { HttpError } from './http.js';

/** Accepts exactly `Authorization: Bearer <token>` (scheme case-insensitive); 401 otherwise. */
export function requireBearer(headers: IncomingHttpHeaders, token: string): void {
  const header = headers.authorization ?? '';
  const match = /^bearer +(\S+)$/i.exec(header);
  const given = Buffer.from(match?.[1] ?? '');
  const expected = Buffer.from(token);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw new HttpError(401, match ? 'invalid access token' : 'missing bearer token', {
      headers: { 'www-authenticate': 'Bearer' },
    });
  }
}
