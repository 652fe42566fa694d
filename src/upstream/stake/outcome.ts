import { type Delivery, type ErrorCode, UpstreamError } from '../../errors.js';

/**
 * What a failed buyback update tells its client (contract.md §7): every error says whether the
 * update happened, in `extensions.applied`, so that a client never retries a write that succeeded
 * nor gives up on one that did not. `true`: staking answered 2xx, whatever became of the body.
 * `false`: the request never left, or staking refused it. `null`: it was sent and no status came
 * back, so nobody knows; the client reads the round before trying again.
 */

/** What a client is told when nobody knows whether the update happened: it was sent, or maybe not. */
const readFirst = (delivery: Delivery | undefined) =>
  `The update ${delivery === 'sent' ? 'was sent and ' : ''}may have been applied: read the round before trying again.`;

/** Whether the update happened, from how far its request got; unknown (null) when that is unknown. */
export function appliedBy(delivery: Delivery | undefined): boolean | null {
  if (typeof delivery === 'number') return delivery >= 200 && delivery < 300;
  return delivery === 'unsent' ? false : null;
}

/** A 2xx answer the gateway could not read (cut, late, too large, not the documented JSON): applied. */
export function appliedButUnreadable(detail: string): UpstreamError {
  return new UpstreamError(
    'stake',
    'UPSTREAM_ERROR',
    `buyback update accepted, answer unreadable: ${detail}`,
    'The staking service accepted the update, but its answer could not be read: do not retry it; read the round again instead.',
    undefined,
    { applied: true },
  );
}

/** The same error, saying whether the update happened. */
export function withApplied(error: UpstreamError, applied: boolean | null): UpstreamError {
  const code = error.extensions.code as ErrorCode;
  const message =
    applied === null
      ? `${UpstreamError.messageFor('stake', code)} ${readFirst(error.delivery)}`
      : error.message;
  const said = new UpstreamError('stake', code, error.detail, message, error.status, { applied });
  said.delivery = error.delivery;
  return said;
}

/** Any failure of the update's call as the client sees it; one that is not the call's own is unknown. */
export function updateFailure(error: unknown): UpstreamError {
  if (!(error instanceof UpstreamError)) {
    const detail = `buyback update failed: ${error instanceof Error ? error.message : String(error)}`;
    return new UpstreamError('stake', 'INTERNAL_SERVER_ERROR', detail, readFirst(undefined), undefined, {
      applied: null,
    });
  }
  const applied = appliedBy(error.delivery);
  return applied === true ? appliedButUnreadable(error.detail) : withApplied(error, applied);
}
