import type { Block, FailedTransaction, Validator, ValidatorStatistics } from '../upstream/models.js';

/**
 * What a poll found, as it travels from the poller to every subscriber (through Redis between
 * instances: plain JSON of the graph's models). `polledAt`: when the poll's answer came (ms since
 * the epoch), from which the delivery delay is measured. `refused`: the source's credential was
 * refused (a revoked token): every subscriber's stream ends with UNAUTHENTICATED.
 */
export type LiveEvent =
  | { kind: 'block'; block: Block; polledAt: number }
  | { kind: 'validator'; validator: Validator; polledAt: number }
  | { kind: 'statistics'; statistics: ValidatorStatistics; polledAt: number }
  | { kind: 'failedTransaction'; transaction: FailedTransaction; polledAt: number }
  | { kind: 'refused'; polledAt: number }
  // The chain's head as a poll of blocks found it with no new block (head.ts): listeners that
  // joined after the last block learn the head without waiting for the next one.
  | { kind: 'head'; height: number; polledAt: number };
