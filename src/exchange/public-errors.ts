import { type ExecutionResult, GraphQLError } from 'graphql';
import { maskError } from 'graphql-yoga';
import { CONTRACT_CODES, INTERNAL_MESSAGE } from '../errors.js';

/**
 * What a client sees of an error, decided here for every path: Yoga's own (its `maskError`), the
 * JSON fast path and its prepared requests (their last part, and what they catch), the SSE
 * adapter, the events of live groups, and the last resort. Two steps, always in this order:
 *
 * 1. Masking: an unexpected error (anything but a GraphQLError raised on purpose: a bug, or a
 *    GraphQLError caused by one) becomes a bare INTERNAL_SERVER_ERROR, whatever NODE_ENV says,
 *    never with its message, stack or cause; what is masked is logged once, where it is masked.
 * 2. Contract codes: every error a client sees carries a code of the contract. The frameworks'
 *    own codes (Yoga's BAD_REQUEST, GRAPHQL_PARSE_FAILED, …) and uncoded errors of the document or
 *    its variables are requests the caller got wrong: BAD_USER_INPUT, same message and status.
 */

/** The codes of the contract (docs/graph.md, Errors): nothing else reaches a client. */
const CONTRACT_CODE_SET: ReadonlySet<string> = new Set(CONTRACT_CODES);

export const isContractCode = (code: unknown): boolean =>
  typeof code === 'string' && CONTRACT_CODE_SET.has(code);

/**
 * Step 1 alone, as Yoga's `maskError` (Yoga logs what it masks): an unexpected error as a bare
 * INTERNAL_SERVER_ERROR; an error raised on purpose as it is.
 */
export const maskUnexpected = (error: unknown, message: string = INTERNAL_MESSAGE): Error =>
  maskError(error, message, false);

/**
 * Errors of the document or its variables have no path, and no cause but graphql-js's own (a
 * variable's coercion wraps the scalar's GraphQLError): the caller's mistake, not the gateway's.
 */
const isRequestError = (cause: unknown) => cause === undefined || cause instanceof GraphQLError;

/** Step 2 alone: an error as a client may see it, with a contract code. */
export function contractError(error: GraphQLError): GraphQLError {
  const code = error.extensions?.code;
  if (isContractCode(code)) return error;
  if (code !== undefined || (!error.path && isRequestError(error.originalError))) {
    // `http` stays for Yoga, which takes the status from it and strips it. Yoga also keeps the
    // cause of an unreadable body (`originalError`, which quotes the body) and answers such a
    // body 400 because of it; the cause goes, and the 400 is made explicit instead.
    // graphql-jit's errors of variable coercion come without extensions.
    const { originalError, http, ...extensions } = (error.extensions ?? {}) as {
      originalError?: unknown;
      http?: object;
    };
    return new GraphQLError(error.message, {
      nodes: error.nodes,
      source: error.source,
      positions: error.positions,
      extensions: {
        ...extensions,
        ...(http ? { http: originalError ? { ...http, spec: false } : http } : {}),
        code: 'BAD_USER_INPUT',
      },
    });
  }
  return new GraphQLError(INTERNAL_MESSAGE, {
    path: error.path,
    extensions: { code: 'INTERNAL_SERVER_ERROR' },
  });
}

/** What logs an error that was masked (its summary, never shown to a client). */
export type MaskLog = (error: unknown) => void;

/** Both steps, logging what step 1 masked: an error a path caught, or a group's event raised. */
export function publicError(error: unknown, log: MaskLog): GraphQLError {
  const masked = maskUnexpected(error);
  if (masked !== error) log(error);
  return contractError(masked as GraphQLError);
}

/** A result with every error through step 1, logging what it masked (as Yoga's masking does). */
export function maskedResult<T extends ExecutionResult>(result: T, log: MaskLog): T {
  if (!result.errors) return result;
  return {
    ...result,
    errors: result.errors.map((error) => {
      const masked = maskUnexpected(error);
      if (masked !== error) log(error);
      return masked as GraphQLError;
    }),
  };
}

/**
 * A result with every error through step 2: the result itself when all carry a contract code
 * already, never a copy, so that an answer from the response cache keeps its serialized text.
 */
export function contractResult<T extends ExecutionResult>(result: T): T {
  const errors = result.errors;
  if (!errors?.some((e) => !isContractCode(e.extensions?.code))) return result;
  return { ...result, errors: errors.map(contractError) };
}

/** The whole answer of the last resort (a request whose answer itself failed): a bare 500's body. */
export const INTERNAL_ANSWER = JSON.stringify({
  errors: [{ message: INTERNAL_MESSAGE, extensions: { code: 'INTERNAL_SERVER_ERROR' } }],
});
