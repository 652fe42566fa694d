import type { IncomingMessage, ServerResponse } from 'node:http';
import { type ExecutionResult, GraphQLError } from 'graphql';
import { getSSEProcessor, isAsyncIterable } from 'graphql-yoga';
import { type CorsPolicy, EVENT_STREAM_HEADERS, Exchange, type RequestHeaders } from '../graphql/exchange.js';
import type { GatewayYoga } from '../graphql/yoga.js';
import { type Delivery, type LiveSink, StreamHandle } from '../live/streams.js';
import type { GatewayMetrics } from '../ops/metrics.js';
import type { Telemetry } from '../ops/request-trace.js';
import { headersOf, pipeResponse } from './node-response.js';

/**
 * GraphQL subscriptions over Server-Sent Events, written by the node:http adapter itself: what a
 * browser's EventSource (GET) and the `graphql-sse` client (POST, distinct connections) send. The
 * subscribe-time work runs through Yoga's one envelop pipeline (parse, validation, limits, pricing
 * and the rate limit, authorization, the subscription caps, the live groups); the stream that
 * follows is this module's: no WHATWG Request, Response or ReadableStream and no async-iterator
 * chain per subscriber, the events its group pushes written straight to the socket, each event's
 * frame serialized once for all the streams it goes to, and one ping timer for every stream. The
 * bytes are Yoga's (`:` first, `event: next` / `data:` per result, `event: complete` at the end,
 * the same headers); a parity test compares them. Anything else (a query asked for as an event
 * stream, extensions, a document that cannot be grouped) is answered as Yoga answers it.
 */

export interface EventStreamOptions {
  /** LIVE_BACKLOG: events waiting for one stream's socket before it is cut off. */
  backlog: number;
  /** How often every open stream gets a comment, so that proxies keep it open (Yoga's 12 s). */
  pingMs: number;
  metrics: GatewayMetrics;
}

/** Yoga's ping interval: a comment on every open stream, so that proxies keep it open. */
export const SSE_PING_MS = 12_000;

/**
 * How long a client whose stream ended at a shutdown waits before reconnecting (EventSource's
 * `retry:`): each stream a time of its own, at random within these bounds (contract.md §8), so that
 * the 10,000 clients of a draining instance come back over nine seconds, not all within one.
 */
export const SSE_RETRY_SPREAD_MS = { min: 1_000, max: 10_000 } as const;

const PING = ':\n\n';
const COMPLETE = 'event: complete\ndata:\n\n';
const HEADERS = {
  'Content-Type': 'text/event-stream',
  Connection: 'keep-alive',
  'Cache-Control': 'no-cache',
  'Content-Encoding': 'none',
  ...EVENT_STREAM_HEADERS,
} as const;

/** An error as Yoga writes it: without its internal extensions (`http`, `unexpected`). */
function writtenError(error: GraphQLError) {
  const {
    http: _http,
    unexpected: _unexpected,
    ...extensions
  } = (error.extensions ?? {}) as Record<string, unknown>;
  return {
    message: error.message,
    ...(error.locations ? { locations: error.locations } : {}),
    ...(error.path ? { path: error.path } : {}),
    ...(Object.keys(extensions).length > 0 ? { extensions } : {}),
  };
}

/** A result's JSON as Yoga's SSE processor writes it. */
function resultJson(result: ExecutionResult): string {
  const stringify = (result as { stringify?: (r: unknown) => string }).stringify ?? JSON.stringify;
  const http = (result.extensions as { http?: unknown } | undefined)?.http;
  if (!result.errors?.length && http === undefined) return stringify(result);
  const { http: _http, ...extensions } = (result.extensions ?? {}) as Record<string, unknown>;
  return stringify({
    ...result,
    ...(result.errors ? { errors: result.errors.map((e) => writtenError(e as GraphQLError)) } : {}),
    extensions: Object.keys(extensions).length > 0 ? extensions : undefined,
  });
}

/**
 * One frame per result, whichever streams it goes to: a group's event is serialized once. An event
 * a client can resume after carries its `id:` (a block's height), which EventSource sends back as
 * Last-Event-ID when it reconnects.
 */
const frames = new WeakMap<ExecutionResult, Buffer>();
function frameOf({ result, id }: Delivery): Buffer {
  let frame = frames.get(result);
  if (!frame) {
    frame = Buffer.from(
      `${id === undefined ? '' : `id: ${id}\n`}event: next\ndata: ${resultJson(result)}\n\n`,
    );
    frames.set(result, frame);
  }
  return frame;
}

/** One subscriber's socket, written at its pace: events wait (shared frames) up to LIVE_BACKLOG. */
class EventStream implements LiveSink {
  private readonly waiting: Delivery[] = [];
  private completing = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly streams: EventStreams,
  ) {
    // Listeners every stream shares, the stream on its response: no closures per stream.
    (res as Writing)[STREAM] = this;
    res.on('drain', flushStream);
    // A write that fails (the client gone mid-write) closes the socket; it must not throw.
    res.on('error', ignore);
  }

  /** The stream ended (its handle says so): it leaves the process's open streams. */
  release(): void {
    this.streams.closed(this);
  }

  private get options(): EventStreamOptions {
    return this.streams.options;
  }

  deliver(delivery: Delivery): void {
    if (this.res.destroyed || this.completing) return;
    if (this.waiting.length === 0 && !this.res.writableNeedDrain) this.write(delivery);
    else if (this.waiting.length >= this.options.backlog) {
      // A reader that stopped: cut, holding no more than LIVE_BACKLOG events for it.
      this.options.metrics.observeCut();
      this.waiting.length = 0;
      this.res.destroy();
    } else this.waiting.push(delivery);
  }

  complete(): void {
    this.completing = true;
    if (this.waiting.length === 0) this.end();
  }

  /** The stream's end: at a shutdown, a `retry:` hint first, so that the client reconnects elsewhere. */
  private end(): void {
    const retry = this.streams.retry();
    this.res.end(retry === null ? COMPLETE : `retry: ${retry}\n\n${COMPLETE}`);
  }

  ping(): void {
    if (this.completing || this.res.writableEnded || this.res.destroyed) return;
    if (this.waiting.length === 0 && !this.res.writableNeedDrain) this.res.write(PING);
  }

  private write(delivery: Delivery): void {
    this.res.write(frameOf(delivery));
    this.options.metrics.observeDelivery((Date.now() - delivery.polledAt) / 1000);
  }

  flush(): void {
    while (this.waiting.length > 0 && !this.res.writableNeedDrain && !this.res.destroyed) {
      this.write(this.waiting.shift() as Delivery);
    }
    if (this.completing && this.waiting.length === 0 && !this.res.writableEnded) this.end();
  }
}

const STREAM = Symbol('event stream');
type Writing = ServerResponse & { [STREAM]?: EventStream };
function flushStream(this: Writing): void {
  this[STREAM]?.flush();
}
const ignore = () => {};

/** Every open stream of the process, and their one ping timer. */
export class EventStreams {
  private readonly open = new Set<EventStream>();
  private timer: NodeJS.Timeout | null = null;
  /** Set once the process shuts down: the bounds of the `retry:` hint streams end with from then on. */
  private retrySpread: { min: number; max: number } | null = null;

  constructor(readonly options: EventStreamOptions) {}

  /** The process is shutting down: streams that end from now on tell their clients to reconnect. */
  closing(spread: { min: number; max: number }): void {
    this.retrySpread = spread;
  }

  /** The `retry:` hint of a stream that ends now (ms, at random within the spread): null until the process shuts down. */
  retry(): number | null {
    const spread = this.retrySpread;
    return spread === null ? null : spread.min + Math.floor(Math.random() * (spread.max - spread.min + 1));
  }

  /** Streams an adopted member's events to `res` until the stream ends (its handle says when). */
  stream(res: ServerResponse, handle: StreamHandle): void {
    const stream = new EventStream(res, this);
    this.open.add(stream);
    if (!this.timer) {
      this.timer = setInterval(() => {
        for (const each of this.open) each.ping();
      }, this.options.pingMs);
      this.timer.unref();
    }
    handle.onEnd(stream);
    handle.member?.attach(stream);
  }

  /** A stream that ended leaves the open ones; the last takes the ping timer with it. */
  closed(stream: EventStream): void {
    this.open.delete(stream);
    if (this.open.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }
}

/** The GraphQL parameters of a request. */
export interface StreamParams {
  query: string;
  variables?: Record<string, unknown> | null;
  operationName?: string | null;
}

/** What the adapter needs to answer a subscription. */
export interface SubscriptionRequest {
  yoga: GatewayYoga;
  telemetry: Telemetry;
  cors: CorsPolicy;
  streams: EventStreams;
  req: IncomingMessage;
  res: ServerResponse;
  params: StreamParams;
  /** The request's headers, as the routing read them (node-response.ts). */
  headers?: RequestHeaders;
}

/** A single result (a refusal, an error) written as Yoga's SSE processor writes it. */
const processSse = getSSEProcessor();

/** A result (a refusal, an error, a stream this module does not write) as Yoga's SSE processor writes it. */
async function answerByYoga(request: SubscriptionRequest, exchange: Exchange, result: unknown) {
  const response = await processSse(result as ExecutionResult, request.yoga.fetchAPI, 'text/event-stream');
  exchange.end(response.status);
  await pipeResponse(request.res, response, exchange.answerHeaders(EVENT_STREAM_HEADERS));
}

/**
 * Runs a subscription request (its operation one, as the routing found: graphql/pipeline/shape.ts)
 * through the envelop pipeline and answers it.
 */
export async function serveSubscription(request: SubscriptionRequest): Promise<void> {
  const { yoga, telemetry, cors, req, res, params } = request;
  // A caller gone before the stream's head is written is logged 499 (its work cancelled).
  const exchange = new Exchange(
    { res, method: req.method as string, headers: request.headers ?? headersOf(req) },
    telemetry,
    cors,
  );
  // The stream's end watches the socket from now on: a client gone cancels the subscribe-time work.
  const sse = new StreamHandle(res, exchange.cancel);
  const envelope = yoga.getEnveloped({ request: exchange.request, params, req, res, sse });
  const once = (result: unknown) =>
    answerByYoga(request, exchange, exchange.finish(result as ExecutionResult));
  let document: ReturnType<typeof envelope.parse>;
  try {
    document = envelope.parse(params.query);
  } catch (error) {
    if (error instanceof GraphQLError) return once({ errors: [error] });
    throw error;
  }
  const errors = envelope.validate(envelope.schema, document);
  if (errors.length > 0) return once({ errors });
  let result: unknown;
  try {
    result = await envelope.subscribe({
      schema: envelope.schema,
      document,
      contextValue: await envelope.contextFactory(),
      variableValues: params.variables ?? undefined,
      operationName: params.operationName ?? undefined,
    });
  } catch (error) {
    sse.end();
    if (error instanceof GraphQLError) return once({ errors: [error] });
    throw error;
  }
  if (!isAsyncIterable(result)) {
    sse.end();
    return once(result);
  }
  // The client left while it subscribed: everything the stream took is given back already, and the
  // exchange logged it.
  if (sse.ended) return;
  // Not grouped (incremental delivery in a subscription): Yoga's own writer.
  if (!sse.member) return answerByYoga(request, exchange, result);
  // Priced and charged at its start: the stream's head says what it cost.
  res.writeHead(200, { ...HEADERS, ...exchange.answerHeaders() });
  res.write(PING);
  exchange.end(200);
  // From here the stream holds nothing of its request: events run in the group's own context, so
  // the request's signal, trace and context (and the pipeline's iterator over the member) go.
  sse.started();
  request.streams.stream(res, sse);
}
