import { BREAK, type DocumentNode, getOperationAST, parse, visit } from 'graphql';

/**
 * How an operation answers: one result (a query's, the mutation's), its results delivered
 * incrementally (`@defer`, `@stream`: multipart or SSE, answered by Yoga), or one result per event
 * (a subscription). Decided here only: the adapter's routing, the CSRF exemption of EventSource, the
 * live groups and graphql-jit's compilation each ask this module.
 */
export type AnswerShape = 'single' | 'incremental' | 'subscription';

/** Whether a document asks for incremental delivery (`@defer`, `@stream`) anywhere. */
export function incremental(document: DocumentNode): boolean {
  let found = false;
  visit(document, {
    Directive(node) {
      if (node.name.value !== 'defer' && node.name.value !== 'stream') return undefined;
      found = true;
      return BREAK;
    },
  });
  return found;
}

/** The shape of a parsed document's operation; null when the document has no such operation. */
export function answerShape(
  document: DocumentNode,
  operationName: string | null | undefined,
): AnswerShape | null {
  const operation = getOperationAST(document, operationName ?? undefined);
  if (!operation) return null;
  if (operation.operation === 'subscription') return 'subscription';
  return incremental(document) ? 'incremental' : 'single';
}

/**
 * Words without which a text can neither subscribe nor defer: a GraphQL name is a run of the
 * characters `\w` matches, so the keyword and the directives' names stand between word boundaries.
 */
const STREAMING_WORDS = /\b(?:subscription|defer|stream)\b/;

/**
 * The shape of an operation sent as text: 'single' without a parse when the text lacks the words
 * every other shape needs (a word in a string or a comment only costs the parse); null when the text
 * does not parse or lacks the operation (whichever path runs it answers why).
 */
export function answerShapeOfText(
  source: string,
  operationName: string | null | undefined,
  parsed: (source: string) => DocumentNode = parse,
): AnswerShape | null {
  if (!STREAMING_WORDS.test(source)) return 'single';
  try {
    return answerShape(parsed(source), operationName);
  } catch {
    return null;
  }
}

/**
 * How a subscription's events travel over HTTP, as its Accept asks: `sse` for exactly
 * `text/event-stream` (a browser's EventSource, graphql-sse), `multipart` for Apollo's multipart
 * subscriptions (a `multipart/mixed` range with `subscriptionSpec=1.0`: Apollo Client's HttpLink,
 * Apollo Kotlin and iOS); null for any other (answered by Yoga: JSON, or 406). Decided here only:
 * the adapter's routing and the subscription caps' plugin ask it.
 */
export type StreamTransport = 'sse' | 'multipart';

const MULTIPART_SUBSCRIPTION =
  /^\s*multipart\/mixed\s*;(?:[^,]*;)?\s*subscriptionspec\s*=\s*"?1\.0"?\s*(?:;|$)/i;

export function streamTransport(accept: string | null | undefined): StreamTransport | null {
  if (!accept) return null;
  if (accept.trim() === 'text/event-stream') return 'sse';
  for (const range of accept.split(',')) if (MULTIPART_SUBSCRIPTION.test(range)) return 'multipart';
  return null;
}
