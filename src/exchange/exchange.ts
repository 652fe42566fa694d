import type { ServerResponse } from 'node:http';
import type { ExecutionResult } from 'graphql';
import {
  attachTrace,
  finishTrace,
  type RequestTrace,
  recordResult,
  startTrace,
  type Telemetry,
} from '../ops/request-trace.js';
import { budgetOf } from '../scale/rate-limit.js';
import { Cancellation } from '../upstream/cancellation.js';
import { answerHeaders, type CorsPolicy } from './headers.js';
import { contractResult } from './public-errors.js';

/**
 * How every request of the gateway is answered, whichever path carries it: Yoga's own (GET,
 * GraphiQL, batches, health, errors of the HTTP layer; graphql/plugins/answers.ts opens its
 * exchange) and the node:http adapter's fast path, stream writers and WebSockets (http/). Below
 * both, so that admission (http/intake.ts) and the GraphQL pipeline share it: the answer's headers
 * (headers.ts), the error codes a client may see (public-errors.ts), the cost a client asked for,
 * what a result records in the request's trace, and when a request ends (log line, metrics, span).
 */

/**
 * The result a client gets, and what it records in the request's trace: every error carries a
 * contract code, the extensions carry the chain's height the answer reflects when it is known, and, when the request asked for it (`x-graphql-cost: true`), the extensions carry
 * its cost (docs/graph.md): the price, MAX_COMPLEXITY and, when it was charged, what is left of the
 * client's budget. A result whose errors are all in order and that tells no cost is returned as it
 * is: never a copy, so that an answer from the response cache keeps its serialized text.
 */
export function finishResult<T extends ExecutionResult>(
  trace: RequestTrace | undefined,
  result: T,
  stampsText = false,
): T {
  result = contractResult(result);
  if (!trace) return result;
  recordResult(trace, result);
  const { chainHeight } = trace;
  const stamped =
    chainHeight === null ||
    result.extensions?.chainHeight === chainHeight ||
    (stampsText && !result.extensions && !result.errors);
  if (!trace.cost && stamped) return result;
  // A copy: the result itself may be the response cache's, kept for everyone (which keeps the
  // height it was read at in its own text: a hit then needs no copy).
  const extensions: Record<string, unknown> = { ...result.extensions };
  if (chainHeight !== null) extensions.chainHeight = chainHeight;
  if (trace.cost)
    extensions.cost = trace.budget ? { ...trace.cost, budget: budgetOf(trace.budget) } : trace.cost;
  return { ...result, extensions };
}

/** A request's headers, read as a fetch Headers is (node:http's are read in place: node-response.ts). */
export interface RequestHeaders {
  get(name: string): string | null;
  has(name: string): boolean;
}

/**
 * One request, from its opening to its end, whichever path answers it: its trace (request id,
 * span, log line and metrics, finished once), its cancellation (the caller gone before the answer
 * is written: its upstream calls cancelled, logged 499), the headers every answer of it carries,
 * and its result finished as every answer is (finishResult, above). The adapter's JSON fast path and SSE
 * writer open one per request they answer (http/); `useAnswers` opens one for every request Yoga
 * reads, on the node:http socket Yoga was handed when there is one. A whole answer ends when its
 * socket closes; a stream when its head is written; an answer with no socket (`yoga.fetch`) when
 * Yoga has it ready.
 */
export class Exchange {
  readonly res: ServerResponse | null;
  readonly headers: RequestHeaders;
  readonly trace: RequestTrace;
  readonly cancel = new Cancellation();
  /**
   * What the pipeline reads of the request: its method, its headers and its cancellation, with the
   * trace on it.
   */
  readonly request: { method: string; headers: RequestHeaders; signal: Cancellation };
  /** Whether its end is a GraphQL request's (log line, metrics, span), or a health check's, GraphiQL's… */
  private readonly graphql: boolean;
  private ended = false;

  constructor(
    {
      res = null,
      method,
      headers,
      graphql = true,
    }: { res?: ServerResponse | null; method: string; headers: RequestHeaders; graphql?: boolean },
    private readonly telemetry: Telemetry,
    private readonly cors: CorsPolicy,
  ) {
    this.res = res;
    this.headers = headers;
    this.graphql = graphql;
    this.trace = startTrace((name) => headers.get(name), graphql);
    // The head its latest-state fields are read at: the one known as it opens (contract.md §9).
    this.trace.chainHeight = telemetry.head?.height() ?? null;
    this.request = { method, headers, signal: this.cancel };
    attachTrace(this.request, this.trace);
    if (res) {
      // One listener function for every exchange, the exchange on its response: no closure each.
      (res as Answering)[EXCHANGE] = this;
      res.once('close', closed);
    }
  }

  /** The headers of every answer of this request (headers.ts), with `extra`. */
  answerHeaders(extra: Record<string, string> = {}): Record<string, string> {
    return answerHeaders(this.cors, this.headers.get('origin'), this.trace, extra);
  }

  /**
   * A result finished as every answer is: contract codes only, the cost asked for, recorded.
   * `stampsText`: the caller writes a bare success's text through `stampedText`, which adds the
   * chain height there (no copy of the result for it).
   */
  finish(result: ExecutionResult, stampsText = false): ExecutionResult {
    return finishResult(this.trace, result, stampsText);
  }

  /** A bare success's JSON `text` with its chain height, as finishResult would have put it. */
  stampedText(result: ExecutionResult, text: string): string {
    const { chainHeight } = this.trace;
    if (chainHeight === null || result.extensions || result.errors) return text;
    return `${text.slice(0, -1)},"extensions":{"chainHeight":${chainHeight}}}`;
  }

  /**
   * Yoga has its response for this request (a head and a body to come): a stream, or an answer with
   * no socket to watch, ends here; a whole answer on a socket ends when the socket closes.
   */
  answered(status: number, stream: boolean): void {
    if (stream || !this.res) this.end(status);
  }

  /**
   * The request is answered with `status` (a stream: once its head is written): its log line,
   * metrics and span, once. From then on the exchange holds nothing for its response.
   */
  end(status: number): void {
    if (this.ended) return;
    this.ended = true;
    if (this.graphql) finishTrace(this.telemetry, this.trace, status);
    if (!this.res) return;
    (this.res as Answering)[EXCHANGE] = undefined;
    this.res.off('close', closed);
  }

  /** The socket closed: the end of an answer written whole, or a caller gone before it (499). */
  closed(): void {
    if (this.res?.writableFinished) {
      this.end(this.res.statusCode);
      return;
    }
    this.cancel.abort(new Error('client disconnected'));
    this.end(499);
  }
}

const EXCHANGE = Symbol('exchange');
type Answering = ServerResponse & { [EXCHANGE]?: Exchange };
function closed(this: Answering): void {
  this[EXCHANGE]?.closed();
}

/** The exchange a response answers, until it ends. */
export const exchangeAnswering = (res: ServerResponse): Exchange | undefined => (res as Answering)[EXCHANGE];

/** Where Yoga's path keeps a request's exchange: on its fetch Request, under a symbol. */
const OF_REQUEST = Symbol('exchange of a request');
type Exchanged = { [OF_REQUEST]?: Exchange };
export const attachExchange = (request: object, exchange: Exchange): void => {
  (request as Exchanged)[OF_REQUEST] = exchange;
  attachTrace(request, exchange.trace);
};
export const exchangeOf = (request: object | undefined): Exchange | undefined =>
  request ? (request as Exchanged)[OF_REQUEST] : undefined;
