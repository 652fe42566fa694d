import { CircuitState } from 'cockatiel';

/** A circuit breaker's state as /metrics and /readyz name it. */
export type CircuitName = 'closed' | 'open' | 'half-open';

/** cockatiel's state by name: closed, half-open, or open (isolated counts as open). */
export function circuitName(state: CircuitState): CircuitName {
  return state === CircuitState.Closed ? 'closed' : state === CircuitState.HalfOpen ? 'half-open' : 'open';
}
