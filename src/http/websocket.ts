import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import {
  type DocumentNode,
  type ExecutionArgs,
  type ExecutionResult,
  type FormattedExecutionResult,
  GraphQLError,
  type GraphQLFormattedError,
  getOperationAST,
  Kind,
} from 'graphql';
import type { SubscribePayload } from 'graphql-ws';
import { useServer } from 'graphql-ws/use/ws';
import { isAsyncIterable, processRegularResult } from 'graphql-yoga';
import { WebSocket, WebSocketServer } from 'ws';
import { GRAPHQL_PATH } from '../config.js';
import { GatewayError } from '../errors.js';
import { Exchange, type RequestHeaders } from '../exchange/exchange.js';
import type { CorsPolicy } from '../exchange/headers.js';
import { publicError } from '../exchange/public-errors.js';
import type { DocumentCache } from '../graphql/pipeline/documents.js';
import { type EnvelopedArgs, envelopedArgs } from '../graphql/pipeline/enveloped.js';
import { resultJson, writtenError, writtenResult } from '../graphql/pipeline/framing.js';
import type { AnswerShape } from '../graphql/pipeline/shape.js';
import type { Routing, SentParams } from '../graphql/routing.js';
import type { GatewayYoga } from '../graphql/yoga.js';
import { type Beat, type Delivery, type LiveSink, type StreamAges, StreamHandle } from '../live/streams.js';
import { errorSummary } from '../ops/logger.js';
import { CLIENT_HEADER_NAMES, type Telemetry } from '../ops/request-trace.js';
import { type MessageBudget, messageBudgetOf, refuseSocket } from './intake.js';

/**
 * GraphQL over WebSocket on /graphql: the `graphql-transport-ws` protocol (The Guild's graphql-ws
 * server on `ws`) for subscriptions, queries and the mutation. A writer over the one pipeline, as
 * sse.ts is: each `subscribe` message is a request of its own (its exchange: trace, log line,
 * metrics, cancellation) run through Yoga's envelop pipeline, and asked of the plugins' HTTP-stage
 * rules (graphql/routing.ts) as the JSON POST it amounts to; a plugin that would send it to Yoga's
 * own path refuses it here. A grouped subscription's events are written straight to the socket,
 * each event's payload serialized once for every socket. The socket's own bounds: the upgrade's
 * Origin must be one CORS allows (none: a server-side client) — WebSockets have no preflight, so
 * this replaces CSRF prevention; messages within MAX_REQUEST_BYTES; `connection_init` within
 * WS_INIT_TIMEOUT_MS (else 4408); a ping every SSE_PING_MS, the socket closed if the last went
 * unanswered; LIVE_BACKLOG messages waiting, then cut; 1001 at a drain and at the socket's age
 * (MAX_STREAM_AGE_MS, checked on the ping's timer). Authorization comes from
 * `connectionParams.authorization`, else the upgrade's `Authorization` header.
 */

/** The headers that name a client (ops/request-trace.ts), which connectionParams may carry. */
const CLIENT_NAMING: ReadonlySet<string> = new Set(CLIENT_HEADER_NAMES);

/** How long a socket may stay open without `connection_init` (graphql-ws closes it with 4408). */
export const WS_INIT_TIMEOUT_MS = 3_000;

/** How long sockets told to go away (1001) get to close before they are cut. */
const CLOSE_GRACE_MS = 1_000;

import type { UpgradeListener } from './node-server.js';

export interface WebSocketOptions {
  yoga: GatewayYoga;
  telemetry: Telemetry;
  cors: CorsPolicy;
  /** What the plugins decide at the HTTP stage, asked for every operation. */
  routing: Routing;
  /** How an operation answers (one result, or a stream), asked of the document cache. */
  documents: DocumentCache;
  /** MAX_REQUEST_BYTES: ws's maxPayload; a larger message closes the socket (1009) unread. */
  maxMessageBytes: number;
  /** LIVE_BACKLOG: messages waiting for one socket before it is cut off. */
  backlog: number;
  pingMs: number;
  initTimeoutMs: number;
  /** MAX_OPERATIONS_PER_SOCKET: queries and mutations in flight on one socket; one more is refused. */
  maxOperations: number;
  /** MAX_STREAM_AGE_MS: when each socket is told to go away (1001) for its client to reconnect. */
  ages: StreamAges;
  /** Whether the process is shutting down: no new socket is opened. */
  draining(): boolean;
}

/** An event's payload, serialized once per result for every socket it goes to. */
const payloads = new WeakMap<ExecutionResult, string>();
function payloadOf(result: ExecutionResult): string {
  let payload = payloads.get(result);
  if (payload === undefined) {
    payload = resultJson(result);
    payloads.set(result, payload);
  }
  return payload;
}

/** A single result as the JSON fast path answers it (Yoga's regular processor): its status and text. */
async function encoded(
  yoga: GatewayYoga,
  result: ExecutionResult,
): Promise<{ status: number; text: string }> {
  if (!result.errors && !result.extensions?.http) {
    const stringify = (result as { stringify?: (r: unknown) => string }).stringify ?? JSON.stringify;
    return { status: 200, text: stringify(result) };
  }
  const response = await processRegularResult(result as never, yoga.fetchAPI, 'application/json');
  return { status: response.status, text: await response.text() };
}

const nextFrame = (id: string, payload: string) =>
  `{"id":${JSON.stringify(id)},"type":"next","payload":${payload}}`;

const DONE: IteratorResult<never> = { value: undefined, done: true };
/** What graphql-ws iterates once the writer has written a result itself: nothing, then `complete`. */
const written = (): AsyncIterableIterator<never> => ({
  next: () => Promise.resolve(DONE),
  return: () => Promise.resolve(DONE),
  [Symbol.asyncIterator]() {
    return this;
  },
});

/** One operation of a socket, from its `subscribe` message to its end. */
interface Operation {
  id: string;
  connection: Connection;
  exchange: Exchange;
  /** A subscription's stream, whose end releases what it holds (live/streams.ts). */
  handle: StreamHandle | null;
  /** Whether its exchange has ended (its log line written). */
  answered: boolean;
  /** Whether it holds one of the socket's places for operations in flight (not a subscription). */
  placed: boolean;
  /** Bytes of its message held in the client's body budget until it is answered (intake.ts). */
  held: number;
}

/** One socket: its client's headers and credential, its operations, what waits to be written. */
class Connection {
  alive = true;
  /** When the socket reaches its age (StreamAges' clock); once told to go away, when it is cut. */
  endsAt: number;
  private waiting = 0;
  /** The client's name and version from connectionParams (nameClient); null: the upgrade's. */
  private named: Map<string, string> | null = null;
  /** Queries and mutations of the socket not answered yet. */
  private inFlight = 0;
  /** connectionParams.authorization, else the upgrade's Authorization header (set at connection_init). */
  private authorization: string | null;
  /** Bytes of the message being handled (graphql-ws calls onSubscribe within its `message` event); -1: none. */
  private arrived = -1;
  /** Intake's share of the body budget for the socket's client; null: nothing judges the messages. */
  private readonly budget: MessageBudget | null;
  readonly operations = new Map<string, Operation>();
  /** The headers every operation of the socket is read with. */
  readonly headers: RequestHeaders;

  constructor(
    readonly ws: WebSocket,
    readonly req: IncomingMessage,
    readonly sockets: WebSockets,
  ) {
    this.authorization = req.headers.authorization ?? null;
    this.budget = messageBudgetOf(req);
    this.endsAt = sockets.options.ages.deadline();
    // Before graphql-ws's own listener, which hands the message's operation to onSubscribe at once.
    ws.prependListener('message', (data: Buffer) => {
      this.arrived = data.length;
    });
    // Read now: the rate limit asks for it when the socket may have gone.
    void req.socket.remoteAddress;
    const upgrade = req.headers;
    this.headers = {
      get: (name) => {
        const key = name.toLowerCase();
        if (key === 'authorization') return this.authorization;
        // A request id names one request; a socket carries many, each with an id of its own.
        if (key === 'x-request-id') return null;
        if (this.named && CLIENT_NAMING.has(key)) return this.named.get(key) ?? null;
        const value = upgrade[key];
        return Array.isArray(value) ? value.join(', ') : (value ?? null);
      },
      has: (name) => this.headers.get(name) !== null,
    };
  }

  /**
   * connection_init: the client's name and version (the headers request-trace.ts reads, which clean
   * and cut them as on HTTP), which a browser cannot set on an upgrade and gives in connectionParams
   * instead: as keys of their own, or in a `headers` object (Apollo's GraphQLWsLink users pass their
   * HttpLink's). When given there, they stand for the upgrade's; only strings are read.
   */
  nameClient(params: Readonly<Record<string, unknown>> | undefined): void {
    const nested = params?.headers;
    const sources = [typeof nested === 'object' && nested !== null ? nested : {}, params ?? {}];
    for (const source of sources) {
      for (const [key, value] of Object.entries(source)) {
        const name = key.toLowerCase();
        if (typeof value !== 'string' || !CLIENT_NAMING.has(name)) continue;
        this.named ??= new Map();
        this.named.set(name, value);
      }
    }
  }

  /** connection_init: its `authorization`, when given, is the socket's credential. */
  authorize(params: Readonly<Record<string, unknown>> | undefined): boolean {
    const keys = Object.keys(params ?? {}).filter((key) => key.toLowerCase() === 'authorization');
    if (keys.length === 0) return true;
    const given = params?.[keys[0] as string];
    if (keys.length > 1 || typeof given !== 'string') return false;
    this.authorization = given;
    return true;
  }

  /** Hands a message to the socket; a socket with LIVE_BACKLOG of them unwritten is cut off. */
  send(text: string): void {
    if (this.ws.readyState !== WebSocket.OPEN) return;
    if (this.waiting >= this.sockets.options.backlog) {
      this.sockets.options.telemetry.metrics.observeCut();
      this.ws.terminate();
      return;
    }
    this.waiting++;
    this.ws.send(text, this.sent);
  }

  private readonly sent = () => {
    this.waiting--;
  };

  /** An operation that ended leaves the socket's (its id may then name a new one). */
  forget(operation: Operation): void {
    if (this.operations.get(operation.id) === operation) this.operations.delete(operation.id);
    this.unplace(operation);
  }

  /**
   * A place for a query or mutation among the socket's MAX_OPERATIONS_PER_SOCKET in flight (its
   * subscriptions are bounded by the stream caps): false when none is free.
   */
  place(operation: Operation): boolean {
    if (operation.handle) return true;
    if (this.inFlight >= this.sockets.options.maxOperations) return false;
    this.inFlight++;
    operation.placed = true;
    return true;
  }

  /**
   * The message being handled, held in the client's body budget until its operation is answered:
   * the bytes held, or the refusal (RATE_LIMITED) when the budget has no room. A message whose size
   * went unseen weighs the cap.
   */
  hold(): number | GatewayError {
    const bytes = this.arrived < 0 ? this.sockets.options.maxMessageBytes : this.arrived;
    this.arrived = -1;
    if (this.budget === null) return 0;
    const refused = this.budget.hold(bytes);
    if (refused === null) return bytes;
    const { message, code, retryAfterMs, status } = refused;
    const retryAfter = String(Math.ceil((retryAfterMs ?? 1_000) / 1_000));
    return new GatewayError(message, code, {
      retryAfterMs,
      http: { status, headers: { 'retry-after': retryAfter } },
    });
  }

  /** Gives an operation's message back to the budget, once: it has been answered, or its socket closed. */
  unhold(operation: Operation): void {
    if (operation.held === 0) return;
    this.budget?.release(operation.held);
    operation.held = 0;
  }

  private unplace(operation: Operation): void {
    if (!operation.placed) return;
    operation.placed = false;
    this.inFlight--;
  }

  /** The socket closed: every operation under way is cancelled (499) and every stream ends. */
  closed(): void {
    for (const operation of [...this.operations.values()]) {
      if (!operation.answered) attempt(() => operation.exchange.closed());
      attempt(() => operation.handle?.closed());
    }
    for (const operation of this.operations.values()) {
      this.unplace(operation);
      this.unhold(operation);
    }
    this.operations.clear();
  }
}

/**
 * A grouped subscription on its socket: the group's events written as they come, and what
 * graphql-ws iterates meanwhile (nothing, until the stream ends: then it sends `complete`).
 */
class SocketStream implements LiveSink, AsyncIterableIterator<never> {
  private ended = false;
  private resolve: ((result: IteratorResult<never>) => void) | null = null;

  constructor(
    private readonly operation: Operation,
    private readonly handle: StreamHandle,
  ) {}

  deliver(delivery: Delivery): void {
    if (this.ended) return;
    const { connection, id } = this.operation;
    connection.send(nextFrame(id, payloadOf(delivery.result)));
    connection.sockets.options.telemetry.metrics.observeDelivery((Date.now() - delivery.polledAt) / 1000);
  }

  /** The group's source ended: the stream's end follows (its handle's release, below). */
  complete(): void {
    this.release();
  }

  /** The stream ended, however it ended: graphql-ws completes it. */
  release(): void {
    this.ended = true;
    this.resolve?.(DONE);
    this.resolve = null;
  }

  next(): Promise<IteratorResult<never>> {
    if (this.ended) return Promise.resolve(DONE);
    return new Promise((resolve) => {
      this.resolve = resolve;
    });
  }

  /** The client completed it, or its socket closed. */
  return(): Promise<IteratorResult<never>> {
    this.handle.end();
    return Promise.resolve(DONE);
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}

/** Runs one step of a socket's end: one that throws (an abort listener) must not stop the others. */
function attempt(step: () => void): void {
  try {
    step();
  } catch {
    // Nothing to do: the step's own owner logs what it must.
  }
}

const CONNECTION = Symbol('websocket connection');
type Connected = WebSocket & { [CONNECTION]?: Connection };
const OPERATION = Symbol('websocket operation');
type Operated = EnvelopedArgs & {
  [OPERATION]: { operation: Operation; envelope: ReturnType<GatewayYoga['getEnveloped']> };
};

/** Every socket of the process: the upgrade, each operation through the pipeline, pings, the drain. */
export class WebSockets {
  private readonly server: WebSocketServer;
  private timer: NodeJS.Timeout | null = null;
  /** The ping timer's beat: every SSE_PING_MS, or more often when sockets' ages need it. */
  private readonly beat: Beat;
  /** Errors of a refusal, as Yoga wrote them, for graphql-ws's `error` message. */
  private readonly refusals = new WeakMap<readonly GraphQLError[], GraphQLFormattedError[]>();

  constructor(readonly options: WebSocketOptions) {
    this.beat = options.ages.beat(options.pingMs);
    this.server = new WebSocketServer({ noServer: true, maxPayload: options.maxMessageBytes });
    useServer(
      {
        connectionInitWaitTimeout: options.initTimeoutMs,
        // Never an internal error's message in a close reason, whatever NODE_ENV says.
        isProd: true,
        onConnect: ({ extra, connectionParams }) => {
          const connection = this.connectionOf(extra.socket);
          connection.nameClient(connectionParams);
          if (connection.authorize(connectionParams)) return true;
          extra.socket.close(4400, 'connectionParams.authorization must be one string');
          return false;
        },
        onSubscribe: ({ extra }, id, payload) => this.subscribe(this.connectionOf(extra.socket), id, payload),
        execute: (args) => this.run(args as Operated),
        subscribe: (args) => this.run(args as Operated),
        onNext: (_ctx, _id, _payload, _args, result) => writtenResult(result) as FormattedExecutionResult,
        onError: (_ctx, _id, _payload, errors) =>
          this.refusals.get(errors) ?? errors.map((e) => writtenError(publicError(e, this.logMasked))),
      },
      this.server,
      // Keep-alive pings are this class's, one timer for every socket.
      0,
    );
    // After graphql-ws's own listener, which only sets the socket up: its first message comes later.
    this.server.on('connection', (ws: Connected, req: IncomingMessage) => this.opened(ws, req));
  }

  private readonly logMasked = (error: unknown) =>
    this.options.telemetry.logger.error({ err: errorSummary(error as Error) }, 'websocket operation failed');

  private connectionOf(ws: WebSocket): Connection {
    return (ws as Connected)[CONNECTION] as Connection;
  }

  /** node:http's `upgrade` listener: a socket on /graphql from an origin CORS allows, or a refusal. */
  readonly upgrade: UpgradeListener = (req, socket, head) => {
    const refusal = this.refusalOf(req);
    if (refusal) {
      this.refuse(req, socket, refusal);
      return;
    }
    this.server.handleUpgrade(req, socket, head, (ws) => this.server.emit('connection', ws, req));
  };

  private refusalOf(req: IncomingMessage): { status: number; message: string } | null {
    const path = req.url?.split('?')[0];
    if (path !== GRAPHQL_PATH)
      return { status: 404, message: `WebSockets are served on ${GRAPHQL_PATH} only.` };
    if (this.options.draining()) return { status: 503, message: 'The server is shutting down: reconnect.' };
    const origin = req.headers.origin;
    // A page of another origin must not act with its visitor's network position (cross-site
    // WebSocket hijacking); a server-side client sends no Origin.
    if (origin !== undefined && !this.options.cors.allows(origin))
      return { status: 403, message: 'This origin may not open a WebSocket here (CORS_ORIGINS).' };
    return null;
  }

  /** An upgrade refused before the handshake: an HTTP answer, and the socket closed. */
  private refuse(
    req: IncomingMessage,
    socket: Duplex,
    { status, message }: { status: number; message: string },
  ) {
    this.options.telemetry.logger.warn({ status, reason: message }, 'websocket upgrade refused');
    const code = status === 503 ? 'RATE_LIMITED' : 'BAD_USER_INPUT';
    refuseSocket(this.options.cors, req, socket, status, { message, code });
  }

  private opened(ws: Connected, req: IncomingMessage): void {
    const connection = new Connection(ws, req, this);
    ws[CONNECTION] = connection;
    // A client's protocol error (a message over maxPayload, a bad frame): ws closes the socket with
    // its code (1009, 1002…). Logged here, not written to the console as graphql-ws's listener does.
    ws.removeAllListeners('error');
    ws.on('error', (error) =>
      this.options.telemetry.logger.info(
        { err: errorSummary(error) },
        'websocket closed on a protocol error',
      ),
    );
    ws.on('pong', () => {
      connection.alive = true;
    });
    ws.once('close', () => connection.closed());
    if (this.timer) return;
    this.timer = setInterval(() => this.ping(), this.beat.everyMs);
    this.timer.unref();
  }

  /** Every socket past its age goes away; on the keep-alive's beats, one that did not answer the last ping is closed. */
  private ping(): void {
    if (this.server.clients.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = null;
    }
    const keepAlive = this.beat.next();
    const now = this.options.ages.now();
    for (const ws of this.server.clients as Set<Connected>) {
      const connection = ws[CONNECTION];
      if (!connection) continue;
      if (connection.endsAt <= now) this.aged(ws, connection, now);
      else if (!keepAlive) continue;
      else if (!connection.alive) ws.terminate();
      else {
        connection.alive = false;
        ws.ping();
      }
    }
  }

  /**
   * A `subscribe` message: the request it amounts to, asked of the plugins' HTTP-stage rules, then
   * parsed and validated in the pipeline; its execution arguments, or its refusal.
   */
  private async subscribe(
    connection: Connection,
    id: string,
    payload: SubscribePayload,
  ): Promise<ExecutionArgs | readonly GraphQLError[]> {
    const { yoga, telemetry, cors } = this.options;
    const exchange = new Exchange({ method: 'POST', headers: connection.headers }, telemetry, cors);
    const params = paramsOf(payload);
    // First, so that a message beyond the budget is refused before its document is parsed.
    const held = connection.hold();
    const shape =
      typeof held === 'number' ? this.options.documents.shapeOf(params.query, params.operationName) : null;
    const handle = shape === 'subscription' ? new StreamHandle(undefined, exchange.cancel) : null;
    const operation: Operation = {
      id,
      connection,
      exchange,
      handle,
      answered: false,
      placed: false,
      held: typeof held === 'number' ? held : 0,
    };
    connection.operations.set(id, operation);
    // A subscription's operation lasts as long as its stream, however the stream ends.
    handle?.onEnd(() => connection.forget(operation));
    try {
      if (typeof held !== 'number') return await this.refused(operation, [held]);
      if (!connection.place(operation))
        return await this.refused(operation, [tooManyOperations(this.options.maxOperations)]);
      const declined = this.options.routing.declines({
        method: 'POST',
        path: GRAPHQL_PATH,
        headers: routedHeaders(connection.headers, shape, this.options.maxMessageBytes),
        params,
        shape: () => shape,
      });
      if (declined !== null)
        return await this.refused(operation, [
          new GatewayError(`Not served over WebSocket: ${declined}.`, 'BAD_USER_INPUT'),
        ]);
      const envelope = yoga.getEnveloped({
        request: exchange.request,
        params,
        req: connection.req,
        sse: handle,
      });
      // Its upstream calls are cancelled when the socket closes before its answer.
      const args = await envelopedArgs(envelope, params, exchange.request.signal);
      if ('errors' in args) return await this.refused(operation, args.errors);
      const { document } = args;
      // graphql-ws would answer this with an error of its own: graphql-js's, as HTTP answers it.
      if (!getOperationAST(document, params.operationName))
        return await this.refused(operation, [noOperation(document, params.operationName)]);
      const operated: Operated = { ...args, [OPERATION]: { operation, envelope } };
      return operated;
    } catch (error) {
      // Errors of parsing and of the gateway's plugins are GraphQLErrors; anything else is masked.
      return this.refused(operation, [publicError(error, this.logMasked)]);
    }
  }

  /** A refusal before execution: graphql-ws's `error` message, with the errors HTTP would answer. */
  private async refused(
    operation: Operation,
    errors: readonly GraphQLError[],
  ): Promise<readonly GraphQLError[]> {
    operation.handle?.end();
    const finished = operation.exchange.finish({ errors }).errors as readonly GraphQLError[];
    const { status, text } = await encoded(this.options.yoga, { errors: finished });
    this.refusals.set(finished, (JSON.parse(text) as { errors: GraphQLFormattedError[] }).errors);
    this.answered(operation, status);
    return finished;
  }

  private answered(operation: Operation, status: number): void {
    operation.answered = true;
    operation.connection.unhold(operation);
    operation.exchange.end(status);
    if (!operation.handle) operation.connection.forget(operation);
  }

  /**
   * Executes (or subscribes) in the pipeline, and writes what it answers: a result as the JSON fast
   * path answers it, a grouped stream's events as the group delivers them.
   */
  private async run(args: Operated): Promise<AsyncIterable<ExecutionResult>> {
    const { operation, envelope } = args[OPERATION];
    const { exchange, handle, connection, id } = operation;
    let result: unknown;
    try {
      result = handle ? await envelope.subscribe(args) : await envelope.execute(args);
    } catch (error) {
      result = { errors: [publicError(error, this.logMasked)] };
    }
    if (!isAsyncIterable(result)) {
      handle?.end();
      const { status, text } = await encoded(this.options.yoga, exchange.finish(result as ExecutionResult));
      connection.send(nextFrame(id, text));
      this.answered(operation, status);
      return written();
    }
    this.answered(operation, 200);
    // The client left while it subscribed: everything the stream took is given back already.
    if (handle?.ended) return written();
    // A stream the live groups do not carry: graphql-ws writes each result (onNext) as it comes.
    if (!handle?.member) return result as AsyncIterable<ExecutionResult>;
    // From here the stream holds nothing of its request: events run in the group's own context.
    handle.started();
    const stream = new SocketStream(operation, handle);
    handle.onEnd(stream);
    handle.member.attach(stream);
    return stream;
  }

  /**
   * A socket at its age (MAX_STREAM_AGE_MS) is told to go away (1001), as at a drain; one told so
   * that has not closed CLOSE_GRACE_MS later is cut. graphql-ws's client (6.x, at its defaults)
   * retries a 1001: it is not among the codes `isFatalInternalCloseCode` or
   * `shouldRetryConnectOrThrow` give up on, `retryAttempts` is 5 and starts again at each ack, and
   * its subscriptions are made again on the new socket.
   */
  private aged(ws: Connected, connection: Connection, now: number): void {
    if (ws.readyState !== WebSocket.OPEN) {
      ws.terminate();
      return;
    }
    connection.endsAt = now + CLOSE_GRACE_MS;
    this.options.telemetry.metrics.observeAged('websocket');
    ws.close(1001, 'The connection reached its age: reconnect.');
  }

  /** The drain: every socket told to go away (1001), and cut if it has not closed within a second. */
  close(): void {
    for (const ws of this.server.clients) ws.close(1001, 'The server is shutting down: reconnect.');
    if (this.server.clients.size === 0) return;
    setTimeout(() => {
      for (const ws of this.server.clients) ws.terminate();
    }, CLOSE_GRACE_MS).unref();
  }
}

/** An operation past MAX_OPERATIONS_PER_SOCKET: refused alone, its socket and the others go on. */
function tooManyOperations(max: number): GatewayError {
  return new GatewayError(
    `Too many operations in flight on this WebSocket: at most ${max} at once; wait for an answer before sending more.`,
    'RATE_LIMITED',
    // A place frees as soon as one of the others is answered; a second is a query's usual time.
    { retryAfterMs: 1_000, http: { status: 429, headers: { 'retry-after': '1' } } },
  );
}

/** graphql-js's refusal of a document that names no operation it can run. */
function noOperation(document: DocumentNode, operationName: string | null | undefined): GraphQLError {
  if (operationName) return new GraphQLError(`Unknown operation named "${operationName}".`);
  const operations = document.definitions.filter((d) => d.kind === Kind.OPERATION_DEFINITION).length;
  return new GraphQLError(
    operations > 1
      ? 'Must provide operation name if query contains multiple operations.'
      : 'Must provide an operation.',
  );
}

/** A `subscribe` message's parameters. */
function paramsOf(payload: SubscribePayload): SentParams & { query: string } {
  const { query, variables, operationName, extensions } = payload;
  return { query, variables: variables ?? null, operationName: operationName ?? null, extensions };
}

/**
 * The headers the plugins' HTTP-stage rules read of a `subscribe` message, the JSON POST it amounts
 * to: a JSON body within MAX_REQUEST_BYTES (ws refuses a larger message unread), asking for one
 * result or, for a subscription, a stream of events.
 */
function routedHeaders(headers: RequestHeaders, shape: AnswerShape | null, maxBytes: number): RequestHeaders {
  const own: Record<string, string> = {
    'content-type': 'application/json',
    'content-length': String(maxBytes),
    accept: shape === 'subscription' ? 'text/event-stream' : 'application/json',
  };
  return {
    get: (name) => own[name.toLowerCase()] ?? headers.get(name),
    has: (name) => own[name.toLowerCase()] !== undefined || headers.has(name),
  };
}
