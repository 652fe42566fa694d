import type { ExecutionResult } from 'graphql';
import { badUserInput, GatewayError } from '../../errors.js';
import { traceOf } from '../../ops/request-trace.js';
import type { AbortLike } from '../../upstream/cancellation.js';
import { type PartPlugin, partPlugin, type RequestPart } from '../pipeline/parts.js';

/**
 * `Min-Chain-Height: <n>` (contract.md §9): a request answered from state read at or after height
 * n. After pricing (it is charged like the request itself, waiting or not), before the response
 * cache (whose entries read below n are no answer for it: response-cache.ts reads the request's
 * trace): it waits for the chain's head (live/head.ts) up to MIN_CHAIN_HEIGHT_WAIT_MS, then runs
 * stamped with that head; a head that does not get there in time is UPSTREAM_TIMEOUT with
 * `extensions.chainHeight` (the head known, or null). A value that is no height is BAD_USER_INPUT,
 * and nothing runs. A part of every prepared request, so both paths wait alike.
 */

/** What it needs of the chain's head (live/head.ts ChainHead). */
export interface HeadWaits {
  height(): number | null;
  waitFor(min: number, timeoutMs: number, signal?: AbortLike): Promise<number | null>;
}

export const MIN_CHAIN_HEIGHT = 'min-chain-height';
const HEIGHT = /^[1-9]\d{0,15}$/;

const refused = (error: GatewayError): { answer: ExecutionResult } => ({ answer: { errors: [error] } });

export function useMinChainHeight(head: HeadWaits, waitMs: number): PartPlugin {
  type Request = { headers: { get(name: string): string | null }; signal?: AbortLike };
  const part: RequestPart = ({ contextValue }) => {
    const request = (contextValue as { request?: Request } | undefined)?.request;
    const given = request?.headers.get(MIN_CHAIN_HEIGHT) ?? null;
    // Most requests: nothing to wait for, and no promise made.
    if (given === null) return undefined;
    const min = HEIGHT.test(given.trim()) ? Number(given.trim()) : Number.NaN;
    if (!Number.isSafeInteger(min))
      return refused(
        badUserInput(MIN_CHAIN_HEIGHT, 'Min-Chain-Height must be a block height: a whole number from 1.'),
      );
    const trace = traceOf(request);
    if (trace) trace.minChainHeight = min;
    return head.waitFor(min, waitMs, request?.signal).then((height) => {
      if (height === null) {
        const chainHeight = head.height();
        if (trace) trace.chainHeight = chainHeight;
        return refused(
          new GatewayError(`The chain has not reached height ${min} in time.`, 'UPSTREAM_TIMEOUT', {
            chainHeight,
          }),
        );
      }
      if (trace) trace.chainHeight = height;
      return undefined;
    });
  };
  return partPlugin(() => part);
}
