import type { LiveUpdates } from '../live/index.js';
import type { StreamHandle } from '../live/streams.js';
import type { CursorCodec } from './cursors.js';
import type { Loaders } from './loaders.js';

/** What every resolver of one GraphQL request sees. */
export interface Context {
  /** The caller's bearer token, or null. Forwarded only where contract.md says. */
  callerToken: string | null;
  /** Server-side token for explorer reads when the caller sends none (EXPLORER_TOKEN). */
  explorerToken: string | null;
  loaders: Loaders;
  /** The highest query cost this request may have. */
  maxComplexity: number;
  /**
   * The block height a reconnecting subscriber last received (its EventSource's Last-Event-ID):
   * `blockAdded` starts with the blocks after it. Null for a new subscriber.
   */
  resumeAfter: number | null;
  /** Counts an upstream enum value the graph answered as UNSPECIFIED (see /metrics). */
  unknownEnumValue(enumName: string): void;
  /** The gateway's live updates, where subscription fields open their streams. */
  live: LiveUpdates;
  /**
   * A subscription stream's one end (streams.ts): what holds something for the stream registers its
   * release there; it closes the connection of a reader that stopped; and, when the transport
   * writes streams itself (http/sse.ts), it hands the subscriber's group member over.
   */
  stream: StreamHandle;
  /** The deployment's page cursors: made from the upstreams' keys, taken back signed. */
  cursors: CursorCodec;
}

/** The token explorer reads go with: the caller's, else the server's EXPLORER_TOKEN; null: none. */
export const explorerTokenOf = (ctx: Pick<Context, 'callerToken' | 'explorerToken'>): string | null =>
  ctx.callerToken ?? ctx.explorerToken;

/** A Last-Event-ID the gateway gave out (a block's height), or null: anything else is ignored. */
export function resumeAfter(header: string | null): number | null {
  return header && /^\d{1,15}$/.test(header) ? Number(header) : null;
}

/** The token of an `Authorization: Bearer <token>` header; null for no header or another scheme. */
export function bearerToken(header: string | null): string | null {
  const match = header ? /^Bearer +([\x21-\x7e]+) *$/i.exec(header) : null;
  return match?.[1] ?? null;
}
