import { GraphQLError } from 'graphql';

/**
 * The error codes of the public contract. Every error a client sees carries one in
 * `extensions.code`; upstream errors also name the upstream in `extensions.upstream`.
 */
export const CONTRACT_CODES = [
  'BAD_USER_INPUT',
  'UNAUTHENTICATED',
  'UPSTREAM_TIMEOUT',
  'UPSTREAM_UNAVAILABLE',
  'UPSTREAM_ERROR',
  'INTERNAL_SERVER_ERROR',
  // contract.md §5, Rate limits: over a client's budget (HTTP 429, with `extensions.retryAfterMs`).
  'RATE_LIMITED',
  // contract.md §6: an automatic persisted query's hash the gateway does not know (send the document).
  'PERSISTED_QUERY_NOT_FOUND',
] as const;

export type ErrorCode = (typeof CONTRACT_CODES)[number];

/** The whole message of an unexpected error: nothing of its cause reaches a client. */
export const INTERNAL_MESSAGE = 'Unexpected error.';

export type UpstreamName = 'scan' | 'explorer' | 'stake';

/** An expected failure, safe to show as it is: its message is written by the gateway, never copied. */
export class GatewayError extends GraphQLError {
  constructor(message: string, code: ErrorCode, extensions: Record<string, unknown> = {}) {
    super(message, { extensions: { code, ...extensions } });
    this.name = 'GatewayError';
  }
}

export const badUserInput = (argument: string, message: string): GatewayError =>
  new GatewayError(message, 'BAD_USER_INPUT', { argument });

export const unauthenticated = (message: string, extensions: Record<string, unknown> = {}): GatewayError =>
  new GatewayError(message, 'UNAUTHENTICATED', extensions);

const UPSTREAM_LABEL: Record<UpstreamName, string> = {
  scan: 'search service',
  explorer: 'explorer service',
  stake: 'staking service',
};

/**
 * How far a failed request got, which decides whether the upstream may have acted on it:
 * `'unsent'`, refused before any byte of it left (circuit open, bulkhead full, connection refused,
 * budget spent while queued or connecting); `'sent'`, written and no status came back (reset,
 * closed, no headers in time); or the status the upstream answered, even when its body then
 * failed (cut, late, too large).
 */
export type Delivery = 'unsent' | 'sent' | number;

/**
 * A failed upstream call. The client sees a fixed message per code; `detail` (status, upstream
 * message, cause) is for logs only and is never serialized into a response.
 */
export class UpstreamError extends GatewayError {
  /** Set by the HTTP layer on every failure of a call; undefined (unknown) for anything else. */
  delivery: Delivery | undefined = undefined;

  constructor(
    readonly upstream: UpstreamName,
    code: ErrorCode,
    readonly detail: string,
    message = UpstreamError.messageFor(upstream, code),
    readonly status?: number,
    extensions: Record<string, unknown> = {},
  ) {
    super(message, code, { upstream, ...extensions });
    this.name = 'UpstreamError';
  }

  static messageFor(upstream: UpstreamName, code: ErrorCode): string {
    const label = UPSTREAM_LABEL[upstream];
    switch (code) {
      case 'UPSTREAM_TIMEOUT':
        return `The ${label} did not answer in time.`;
      case 'UPSTREAM_UNAVAILABLE':
        return `The ${label} is unavailable.`;
      case 'UNAUTHENTICATED':
        return `The ${label} rejected the access token.`;
      default:
        return `The ${label} answered with an error.`;
    }
  }
}
