import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ExecutionResult } from 'graphql';
import { addChargeHeaders, type CorsPolicy, finishResult } from '../graphql/plugins/answers.js';
import {
  attachTrace,
  finishTrace,
  type RequestTrace,
  startTrace,
  type Telemetry,
} from '../ops/request-trace.js';
import { Cancellation } from '../upstream/cancellation.js';
import { headersOf, type RequestHeaders } from './node-response.js';

/**
 * One request the node:http adapter answers itself, from its opening to its end: its trace (request
 * id, span, log line and metrics, finished once), its cancellation (the caller gone before the
 * answer is written: its upstream calls cancelled, logged 499), the headers every answer of it
 * carries, and its result finished as every answer is (answers.ts). The JSON fast path and the SSE
 * writer each open one per request; Yoga's path does the same with the same functions, in its
 * telemetry and answers plugins.
 */
export class Exchange {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly headers: RequestHeaders;
  readonly trace: RequestTrace;
  readonly cancel = new Cancellation();
  /** What the pipeline reads of the request: its headers and its cancellation, with the trace on it. */
  readonly request: { headers: Exchange['headers']; signal: Cancellation };
  private ended = false;

  constructor(
    {
      req,
      res,
      headers = headersOf(req),
    }: { req: IncomingMessage; res: ServerResponse; headers?: RequestHeaders },
    private readonly telemetry: Telemetry,
    private readonly cors: CorsPolicy,
  ) {
    this.req = req;
    this.res = res;
    this.headers = headers;
    this.trace = startTrace(this.headers.get);
    this.request = { headers: this.headers, signal: this.cancel };
    attachTrace(this.request, this.trace);
    // One listener function for every exchange, the exchange on its response: no closure each.
    (res as Answering)[EXCHANGE] = this;
    res.once('close', closed);
  }

  /**
   * The headers of every answer of this request: CORS and `x-request-id`, then `extra`, and what its
   * charge says (RateLimit, `vary`), once the pipeline charged it.
   */
  answerHeaders(extra: Record<string, string> = {}): Record<string, string> {
    return addChargeHeaders(
      { ...this.cors.headers(this.headers.get('origin'), this.trace.requestId), ...extra },
      this.trace,
    );
  }

  /** A result finished as every answer is: contract codes only, the cost asked for, recorded. */
  finish(result: ExecutionResult): ExecutionResult {
    return finishResult(this.trace, result);
  }

  /**
   * The request is answered with `status` (a stream: once its head is written): its log line,
   * metrics and span, once. From then on the exchange holds nothing for its response.
   */
  end(status: number): void {
    if (this.ended) return;
    this.ended = true;
    finishTrace(this.telemetry, this.trace, status);
    (this.res as Answering)[EXCHANGE] = undefined;
    this.res.off('close', closed);
  }

  /** The socket closed: the end of an answer written whole, or a caller gone before it (499). */
  closed(): void {
    if (this.res.writableFinished) {
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
