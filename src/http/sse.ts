import type { IncomingMessage, ServerResponse } from 'node:http';
import { type ExecutionResult, GraphQLError } from 'graphql';
import { getSSEProcessor, isAsyncIterable } from 'graphql-yoga';
import { Exchange, type RequestHeaders } from '../exchange/exchange.js';
import { type CorsPolicy, EVENT_STREAM_HEADERS } from '../exchange/headers.js';
import { envelopedArgs } from '../graphql/pipeline/enveloped.js';
import { SSE, type StreamFraming } from '../graphql/pipeline/framing.js';
import { refusedForCapacity } from '../graphql/plugins/subscriptions.js';
import type { GatewayYoga } from '../graphql/yoga.js';
import {
  type Beat,
  type Delivery,
  type LiveSink,
  NEVER,
  type StreamAges,
  StreamHandle,
} from '../live/streams.js';
import type { GatewayMetrics } from '../ops/metrics.js';
import type { Telemetry } from '../ops/request-trace.js';
import { headersOf, pipeResponse, writable } from './node-response.js';

/**
 * GraphQL subscriptions over HTTP streams, written by the node:http adapter itself: Server-Sent
 * Events (a browser's EventSource, GET; `graphql-sse`, POST) and Apollo's multipart subscriptions
 * (graphql/pipeline/multipart.ts). The subscribe-time work runs through Yoga's one envelop pipeline
 * (parse, validation, limits, pricing and the rate limit, authorization, the subscription caps, the
 * live groups) whatever the transport; a transport is only its framing (graphql/pipeline/framing.ts:
 * the head, an event's bytes, the keep-alive, the end, a subscription answered with one result).
 * The stream is this module's: no WHATWG Request, Response or ReadableStream and no async-iterator
 * chain per subscriber, the events its group pushes written straight to the socket, each event's
 * bytes made once per framing for all the streams they go to, one keep-alive timer per framing
 * (which ends SSE streams at their age, MAX_STREAM_AGE_MS, too). SSE's bytes are Yoga's (a parity
 * test compares them) but for a block's `id:` and the `retry:` each stream starts with; a refusal
 * for capacity is a stream an EventSource comes back from by itself. Anything else (a query asked
 * for as an event stream, extensions) is Yoga's to answer.
 */

export interface EventStreamOptions {
  /** LIVE_BACKLOG: events waiting for one stream's socket before it is cut off. */
  backlog: number;
  /** How often every open SSE stream gets a comment, so that proxies keep it open (Yoga's 12 s). */
  pingMs: number;
  metrics: GatewayMetrics;
  /** MAX_STREAM_AGE_MS: when each stream is ended for its client to reconnect (live/streams.ts). */
  ages: StreamAges;
}

/** Yoga's ping interval: a comment on every open stream, so that proxies keep it open. */
export const SSE_PING_MS = 12_000;

export { SSE } from '../graphql/pipeline/framing.js';

/** One subscriber's socket, written at its pace: events wait (shared frames) up to LIVE_BACKLOG. */
class EventStream implements LiveSink {
  private readonly waiting: Delivery[] = [];
  private completing = false;
  /** When the stream reaches its age (`StreamAges`' clock), NEVER without one; once aged, when it is cut. */
  endsAt = NEVER;
  private aged = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly streams: EventStreams,
    readonly framing: StreamFraming,
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

  /**
   * The stream reached its age (at `now`): it ends once what waits for it is written, with no end
   * of the stream, so that its client comes back (through the load balancer, to any pod) and
   * resumes. A reader that has not taken what waited AGED_FLUSH_MS later is cut, as one that stops.
   */
  age(now: number): void {
    if (this.aged) {
      this.options.metrics.observeCut();
      this.res.destroy();
      return;
    }
    if (this.completing) return;
    this.aged = true;
    this.endsAt = now + AGED_FLUSH_MS;
    this.options.metrics.observeAged('sse');
    this.complete();
  }

  /** The stream's end: at its age or a shutdown, one its client comes back from (elsewhere). */
  private end(): void {
    this.res.end(this.aged || this.streams.draining ? this.framing.parting() : this.framing.closing());
  }

  ping(): void {
    if (this.completing || this.res.writableEnded || this.res.destroyed) return;
    if (this.waiting.length === 0 && !this.res.writableNeedDrain) this.res.write(this.framing.keepAlive);
  }

  private write(delivery: Delivery): void {
    this.res.write(this.framing.frameOf(delivery));
    this.options.metrics.observeDelivery((Date.now() - delivery.polledAt) / 1000);
  }

  flush(): void {
    while (this.waiting.length > 0 && !this.res.writableNeedDrain && !this.res.destroyed) {
      this.write(this.waiting.shift() as Delivery);
    }
    if (this.completing && this.waiting.length === 0 && !this.res.writableEnded) this.end();
  }
}

/** How long a stream at its age has to take what waits for it (deliveries stop at its age). */
const AGED_FLUSH_MS = 10_000;

const STREAM = Symbol('event stream');
type Writing = ServerResponse & { [STREAM]?: EventStream };
function flushStream(this: Writing): void {
  this[STREAM]?.flush();
}
const ignore = () => {};

/** The open streams of one framing, and their one keep-alive timer (which checks their ages too). */
interface KeptAlive {
  open: Set<EventStream>;
  timer: NodeJS.Timeout | null;
  beat: Beat;
}

/** One beat of a framing's timer: each stream past its age ends, the others get their keep-alive when due. */
function tick({ open, beat }: KeptAlive, now: number): void {
  const keepAlive = beat.next();
  for (const each of open) {
    if (each.endsAt <= now) each.age(now);
    else if (keepAlive) each.ping();
  }
}

/** Every open stream of the process, and one keep-alive timer per framing. */
export class EventStreams {
  private readonly framings = new Map<StreamFraming, KeptAlive>();
  /** Set once the process shuts down: streams that end from then on tell their clients to come back. */
  draining = false;

  constructor(readonly options: EventStreamOptions) {}

  /** Streams an adopted member's events to `res` until the stream ends (its handle says when). */
  stream(res: ServerResponse, handle: StreamHandle, framing: StreamFraming): void {
    const stream = new EventStream(res, this, framing);
    const { ages } = this.options;
    if (framing.reconnects) stream.endsAt = ages.deadline();
    let kept = this.framings.get(framing);
    if (!kept) {
      const beat = ages.beat(framing.keepAliveMs ?? this.options.pingMs, framing.reconnects);
      kept = { open: new Set(), timer: null, beat };
      this.framings.set(framing, kept);
    }
    kept.open.add(stream);
    if (!kept.timer) {
      const framed = kept;
      kept.timer = setInterval(() => tick(framed, ages.now()), kept.beat.everyMs);
      kept.timer.unref();
    }
    handle.onEnd(stream);
    handle.member?.attach(stream);
  }

  /** A stream that ended leaves the open ones; the last of a framing takes its timer with it. */
  closed(stream: EventStream): void {
    const kept = this.framings.get(stream.framing);
    if (!kept) return;
    kept.open.delete(stream);
    if (kept.open.size === 0 && kept.timer) {
      clearInterval(kept.timer);
      kept.timer = null;
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
  /** How the stream is framed: the transport its Accept asked for (SSE, or pipeline/multipart.ts). */
  framing: StreamFraming;
  /** The request's headers, as the routing read them (node-response.ts). */
  headers?: RequestHeaders;
}

/** A single result (a refusal, an error) written as Yoga's SSE processor writes it. */
const processSse = getSSEProcessor();

/**
 * A subscription answered with one result (a refusal, an error): in the framing's own bytes when it
 * has them, else as Yoga's SSE processor writes it (and a stream this module does not group, SSE's).
 */
async function answerOnce(request: SubscriptionRequest, exchange: Exchange, result: unknown) {
  const whole = isAsyncIterable(result)
    ? null
    : request.framing.single(
        result as ExecutionResult,
        refusedForCapacity((result as ExecutionResult).errors),
      );
  if (whole) {
    const { res } = request;
    if (res.destroyed) return;
    res.writeHead(whole.status, { ...whole.headers, ...exchange.answerHeaders(EVENT_STREAM_HEADERS) });
    exchange.end(whole.status);
    res.end(whole.body);
    return;
  }
  const { fetchAPI } = request.yoga;
  const response = await processSse(result as ExecutionResult, fetchAPI, 'text/event-stream');
  exchange.end(response.status);
  // A stream (not a single result) starts with its own `retry:`, as the ones this module writes.
  const written = isAsyncIterable(result) ? SSE.withOwnRetry(response, fetchAPI) : response;
  await pipeResponse(request.res, written, exchange.answerHeaders(EVENT_STREAM_HEADERS));
}

/**
 * A stream the live groups do not take (incremental delivery inside a subscription) in a framing
 * Yoga has no writer for: its results written as they come, at the socket's pace.
 */
async function pumpUngrouped(
  { res, framing }: SubscriptionRequest,
  handle: StreamHandle,
  results: AsyncIterable<ExecutionResult>,
) {
  const iterator = results[Symbol.asyncIterator]();
  handle.onEnd(() => void iterator.return?.());
  res.on('error', ignore);
  try {
    for (let next = await iterator.next(); !next.done && !res.destroyed; next = await iterator.next()) {
      if (!res.write(framing.frameOf({ result: next.value, polledAt: Date.now(), id: undefined })))
        await writable(res);
    }
    if (!res.destroyed) res.end(framing.closing());
  } catch {
    // The stream failed after its head: a cut, as any stream whose body cannot go on.
    res.destroy();
  } finally {
    handle.end();
  }
}

/**
 * Runs a subscription request (its operation one, as the routing found: graphql/pipeline/shape.ts)
 * through the envelop pipeline and answers it.
 */
export async function serveSubscription(request: SubscriptionRequest): Promise<void> {
  const { yoga, telemetry, cors, req, res, params, framing } = request;
  // A caller gone before the stream's head is written is logged 499 (its work cancelled).
  const exchange = new Exchange(
    { res, method: req.method as string, headers: request.headers ?? headersOf(req) },
    telemetry,
    cors,
  );
  // The stream's end watches the socket from now on: a client gone cancels the subscribe-time work.
  const sse = new StreamHandle(res, exchange.cancel);
  const envelope = yoga.getEnveloped({ request: exchange.request, params, req, res, sse });
  const once = (result: unknown) => answerOnce(request, exchange, exchange.finish(result as ExecutionResult));
  let result: unknown;
  try {
    const args = await envelopedArgs(envelope, params, undefined);
    if ('errors' in args) {
      sse.end();
      return once(args);
    }
    result = await envelope.subscribe(args);
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
  // Not grouped (incremental delivery in a subscription): Yoga's own writer for SSE.
  if (!sse.member && framing === SSE) return answerOnce(request, exchange, result);
  // Priced and charged at its start: the stream's head says what it cost.
  res.writeHead(200, { ...framing.headers, ...exchange.answerHeaders(EVENT_STREAM_HEADERS) });
  res.write(framing.opening());
  exchange.end(200);
  // From here the stream holds nothing of its request: events run in the group's own context, so
  // the request's signal, trace and context (and the pipeline's iterator over the member) go.
  sse.started();
  if (!sse.member) return pumpUngrouped(request, sse, result as AsyncIterable<ExecutionResult>);
  request.streams.stream(res, sse, framing);
}
