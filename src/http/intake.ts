import {
  type IncomingMessage,
  type RequestListener,
  type Server,
  type ServerResponse,
  STATUS_CODES,
} from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { ServerLimits } from '../config.js';
import type { ErrorCode } from '../errors.js';
import { BODY_ADMISSION, type BodyAdmission, TOO_LARGE_MESSAGE } from '../exchange/body.js';
import { answerHeaders, type CorsPolicy, DEFAULT_CACHE_CONTROL } from '../exchange/headers.js';
import type { GatewayMetrics } from '../ops/metrics.js';
import { startTrace } from '../ops/request-trace.js';
import { type ClientIdentity, clientAddress } from '../scale/rate-limit.js';
import { headersOf } from './node-response.js';

/**
 * Admission of a request before anything reads its body (contract.md §8, §9), in front of the
 * gateway's listener, so that the fast path and Yoga's path are both behind it. Each refusal is a
 * coded JSON answer with `connection: close`, counted in `http_requests_refused_total{reason}`:
 * - the body cap, decided here alone: a declared length over MAX_REQUEST_BYTES, 413 before a byte
 *   is read; a chunked body judged as its readers read it (exchange/body.ts' `bodyWithin`), and cut;
 * - a body on a GET or a HEAD, which nothing reads (400, `unread_body`); a chunked body still
 *   arriving when its answer goes out ends its connection;
 * - bytes of bodies in flight, each reserved at its declared length (chunked: the cap) until its
 *   request closes, and of WebSocket operations until answered (`MessageBudget`): per process
 *   (503, `body_budget`) and per client (429, `client_body_budget`);
 * - a client's sockets, or behind TRUST_PROXY its requests (429, `client_connections`);
 * - a body's pace (BODY_TIMEOUT_MS, MIN_BODY_RATE; at once when the budget is full) and first
 *   byte (BODY_FIRST_BYTE_MS): 408, `slow_body`, judged at `socket.bytesRead`, never by `data`.
 */

export type IntakeLimits = Pick<
  ServerLimits,
  | 'maxInflightBodyBytes'
  | 'maxInflightBodyBytesPerClient'
  | 'maxConnectionsPerClient'
  | 'minBodyRate'
  | 'bodyTimeoutMs'
  | 'bodyFirstByteMs'
>;

export type IntakeMetrics = Pick<GatewayMetrics, 'observeIntakeRefused' | 'bodyBytesInFlight'>;

export interface IntakeOptions {
  limits: IntakeLimits;
  /** MAX_REQUEST_BYTES: the body cap, and what a body of unknown length reserves. */
  maxRequestBytes: number;
  identity: ClientIdentity;
  /** The gateway's CORS policy: whose pages may read a refusal, as every other answer. */
  cors: CorsPolicy;
  metrics: IntakeMetrics;
}

const CLIENT = Symbol('intake client');
type Counted = Socket & { [CLIENT]?: string };
type Reserving = IncomingMessage & { [BODY_ADMISSION]?: Arriving };

/** How long a socket beyond its client's cap may stay without sending the request it is refused. */
const REFUSED_SOCKET_MS = 1_000;

/**
 * How long a body is admitted before it can be behind its pace (and cut to make room): its first
 * bytes may still be a round trip away.
 */
const SHED_AFTER_MS = 100;

/** When a refused client may try again: a connection or a body ends within a second or so. */
const RETRY_AFTER_MS = 1_000;

/**
 * A body admitted and still arriving: what it reserved and for whom, where it stands against its
 * allowance, and the judge its readers ask (exchange/body.ts' `bodyWithin`).
 */
class Arriving implements BodyAdmission {
  /** Its place in `Intake.arriving`; -1 once released. */
  index: number;
  /** The socket's `bytesRead` when it was admitted: more since means its body has sent some. */
  readonly start: number;
  /** When it was admitted (performance.now()). */
  readonly admittedAt = performance.now();
  /** The socket's `bytesRead` when the timer last looked; -1 until it first has. */
  seen = -1;
  /** When its allowance runs out (performance.now()); set when the timer first sees it. */
  deadline = 0;
  /** When its first byte must have come by; 0 once one has. Set when the timer first sees it. */
  firstByteBy = 0;

  constructor(
    private readonly intake: Intake,
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    readonly bytes: number,
    readonly client: string,
    index: number,
  ) {
    this.index = index;
    this.start = req.socket?.bytesRead ?? 0;
  }

  within(read: number): boolean {
    return this.intake.within(this, read);
  }
}

const TOO_LARGE = { message: TOO_LARGE_MESSAGE, code: 'BAD_USER_INPUT' } as const;

export class Intake {
  private readonly limits: IntakeLimits;
  private readonly maxRequestBytes: number;
  private readonly identity: ClientIdentity;
  private readonly metrics: IntakeMetrics;
  private readonly cors: CorsPolicy;
  /** Bytes reserved by the bodies in `arriving`. */
  private inFlight = 0;
  /** Bytes reserved by the bodies in `arriving`, by client (MAX_INFLIGHT_BODY_BYTES_PER_CLIENT). */
  private readonly clientBodies = new Map<string, number>();
  /**
   * The bodies admitted and not yet released, in no order: an array with swap-removal, which costs
   * a tenth of a Map or Set keyed by objects (their identity hashes) on every request.
   */
  private readonly arriving: Arriving[] = [];
  private timer: NodeJS.Timeout | null = null;
  /** How often the timer looks: a tenth of the shorter allowance, within [50 ms, 1 s]. */
  private readonly tickMs: number;
  /** Per client: its open sockets (TRUST_PROXY = 0) or its requests in flight (TRUST_PROXY > 0). */
  private readonly clients = new Map<string, number>();
  /** Sockets opened beyond their client's cap, answered 429 when their request comes. */
  private readonly refusedSockets = new WeakSet<Socket>();
  private refusedOpen = 0;

  constructor(options: IntakeOptions) {
    this.limits = options.limits;
    this.maxRequestBytes = options.maxRequestBytes;
    this.identity = options.identity;
    this.metrics = options.metrics;
    this.cors = options.cors;
    const shorter = Math.min(options.limits.bodyTimeoutMs, options.limits.bodyFirstByteMs);
    this.tickMs = Math.min(1_000, Math.max(50, Math.ceil(shorter / 10)));
  }

  /** Puts `server`'s sockets under the per-client cap, when sockets name their clients. */
  watch(server: Server): void {
    if (this.identity.trustProxy === 0) server.on('connection', (socket: Socket) => this.opened(socket));
  }

  /**
   * `listener` behind admission: a refused request never reaches it. As node:http's
   * `checkContinue` listener (`writeContinue`), a request sent with `Expect: 100-continue` is told
   * to send its body only once admitted, so that a refused one never sends it.
   */
  admit(listener: RequestListener, writeContinue = false): RequestListener {
    return (req, res) => {
      if (this.refusedOpen > 0 && this.refusedSockets.has(req.socket)) {
        this.tooManyConnections(req, res);
        return;
      }
      const forwarded = this.identity.trustProxy > 0 ? this.forwardedClient(req) : null;
      if (forwarded !== null && (this.clients.get(forwarded) ?? 0) >= this.limits.maxConnectionsPerClient) {
        this.metrics.observeIntakeRefused('client_connections');
        this.tooManyConnections(req, res);
        return;
      }
      if (!this.admitBody(req, res, forwarded)) return;
      if (forwarded !== null) {
        this.clients.set(forwarded, (this.clients.get(forwarded) ?? 0) + 1);
        res.on('close', () => this.left(forwarded));
      }
      if (writeContinue) res.writeContinue();
      listener(req, res);
    };
  }

  /**
   * The request's body against the cap, the client's share and the process budget: reserved and
   * watched until its request closes, or refused (and answered); false when refused.
   */
  private admitBody(req: IncomingMessage, res: ServerResponse, forwarded: string | null): boolean {
    const declared = req.headers['content-length'];
    let bytes: number;
    if (declared !== undefined) bytes = Number(declared);
    else if (req.headers['transfer-encoding'] !== undefined) bytes = this.maxRequestBytes;
    else return true;
    if (!(bytes > 0)) return true;
    // Nothing reads the body of a GET or a HEAD (an SSE stream's included): it would hold its
    // reservation, unread, for as long as its answer lasts.
    if (req.method === 'GET' || req.method === 'HEAD') {
      this.metrics.observeIntakeRefused('unread_body');
      refuse(this.cors, req, res, 400, {
        message: `A ${req.method} request carries no body.`,
        code: 'BAD_USER_INPUT',
      });
      return false;
    }
    if (bytes > this.maxRequestBytes) {
      this.metrics.observeIntakeRefused('body_too_large');
      refuse(this.cors, req, res, 413, TOO_LARGE);
      return false;
    }
    const client = forwarded ?? this.socketClient(req.socket);
    const refused = this.charge(client, bytes);
    if (refused !== null) {
      const { status, ...error } = refused;
      refuse(this.cors, req, res, status, error);
      return false;
    }
    this.reserve(new Arriving(this, req, res, bytes, client, this.arriving.length));
    return true;
  }

  /**
   * `bytes` more of `client`'s request bodies (or WebSocket messages) in flight, against the process
   * budget, then the client's share: held (null), or refused (counted) with the refusal's status.
   */
  charge(client: string, bytes: number): (Refusal & { status: number }) | null {
    const held = this.clientBodies.get(client) ?? 0;
    const overShare = held + bytes > this.limits.maxInflightBodyBytesPerClient;
    const over = this.inFlight + bytes - this.limits.maxInflightBodyBytes;
    // The process budget first: a client that fills it alone (a share as large) is told so as
    // before. Another makes room by cutting bodies behind their pace, if they hold enough.
    if (over > 0 && (overShare || !this.shed(over))) {
      this.metrics.observeIntakeRefused('body_budget');
      return {
        status: 503,
        message: 'The server is receiving too many request bodies at once: retry shortly.',
        code: 'RATE_LIMITED',
        retryAfterMs: RETRY_AFTER_MS,
      };
    }
    if (overShare) {
      this.metrics.observeIntakeRefused('client_body_budget');
      return {
        status: 429,
        message: `This client is sending too many request bodies at once: at most ${this.limits.maxInflightBodyBytesPerClient} bytes.`,
        code: 'RATE_LIMITED',
        retryAfterMs: RETRY_AFTER_MS,
      };
    }
    this.inFlight += bytes;
    this.clientBodies.set(client, held + bytes);
    this.metrics.bodyBytesInFlight.inc(bytes);
    return null;
  }

  /**
   * Makes `need` bytes of the process budget free by cutting the bodies furthest behind
   * MIN_BODY_RATE since their admission, the largest deficit first (408, as the timer would later):
   * trickling bodies, however often their clients open new ones, must not keep everyone else out
   * for BODY_TIMEOUT_MS. None within SHED_AFTER_MS of its admission, none the server holds unread;
   * false, cutting none, when those behind hold too little.
   */
  private shed(need: number): boolean {
    const now = performance.now();
    const behind: { body: Arriving; deficit: number }[] = [];
    let room = 0;
    for (const body of this.arriving) {
      const { req } = body;
      const elapsed = now - body.admittedAt;
      if (elapsed < SHED_AFTER_MS || req.complete || req.readableLength > 0 || body.res.headersSent) continue;
      const arrived = (req.socket?.bytesRead ?? body.start) - body.start;
      const deficit = (this.limits.minBodyRate * elapsed) / 1_000 - arrived;
      if (deficit <= 0) continue;
      behind.push({ body, deficit });
      room += body.bytes;
    }
    if (room < need) return false;
    behind.sort((a, b) => b.deficit - a.deficit);
    for (let i = 0, freed = 0; freed < need; i++) {
      const { body } = behind[i] as { body: Arriving };
      freed += body.bytes;
      this.cut(body, 'pace');
    }
    return true;
  }

  /** Gives back `bytes` that `charge` held for `client`. */
  discharge(client: string, bytes: number): void {
    this.inFlight -= bytes;
    const held = (this.clientBodies.get(client) ?? bytes) - bytes;
    if (held > 0) this.clientBodies.set(client, held);
    else this.clientBodies.delete(client);
    this.metrics.bodyBytesInFlight.dec(bytes);
  }

  /**
   * node:http's `upgrade` listener behind the per-client cap: a WebSocket is a connection of its
   * client. A socket opened beyond the cap is refused (429) here as its request would be; behind
   * proxies (TRUST_PROXY > 0) the upgrade counts for its client until its socket closes.
   */
  admitUpgrade(
    listener: (req: IncomingMessage, socket: Duplex, head: Buffer) => void,
  ): (req: IncomingMessage, socket: Duplex, head: Buffer) => void {
    return (req, socket, head) => {
      const forwarded = this.identity.trustProxy > 0 ? this.forwardedClient(req) : null;
      const refused = this.refusedOpen > 0 && this.refusedSockets.has(req.socket);
      if (
        refused ||
        (forwarded !== null && (this.clients.get(forwarded) ?? 0) >= this.limits.maxConnectionsPerClient)
      ) {
        if (forwarded !== null) this.metrics.observeIntakeRefused('client_connections');
        refuseSocket(this.cors, req, socket, 429, this.tooManyConnectionsError());
        return;
      }
      if (forwarded !== null) {
        this.clients.set(forwarded, (this.clients.get(forwarded) ?? 0) + 1);
        socket.once('close', () => this.left(forwarded));
      }
      (req as Budgeted)[MESSAGE_BUDGET] = new MessageBudget(this, forwarded ?? this.socketClient(req.socket));
      listener(req, socket, head);
    };
  }

  /** A new socket (TRUST_PROXY = 0): counted for its client, or marked refused beyond the cap. */
  private opened(socket: Socket): void {
    const client = clientAddress(socket.remoteAddress, null, this.identity);
    const open = this.clients.get(client) ?? 0;
    if (open >= this.limits.maxConnectionsPerClient) {
      this.metrics.observeIntakeRefused('client_connections');
      this.refusedSockets.add(socket);
      this.refusedOpen++;
      socket.on('close', () => this.refusedOpen--);
      // node:http closes a socket whose timeout fires with no request to tell: one that never
      // sends its request is not held for HEADERS_TIMEOUT_MS.
      socket.setTimeout(REFUSED_SOCKET_MS);
      return;
    }
    this.clients.set(client, open + 1);
    // One listener for every socket, its client on the socket: no closure per connection (a
    // process holds one per open stream).
    (socket as Counted)[CLIENT] = client;
    socket.on('close', this.socketClosed);
  }

  /** The client a socket names (TRUST_PROXY = 0): as counted when it opened, else its address. */
  private socketClient(socket: Socket): string {
    return (socket as Counted)[CLIENT] ?? clientAddress(socket.remoteAddress, null, this.identity);
  }

  private readonly socketClosed = (() => {
    const intake = this;
    return function (this: Counted) {
      const client = this[CLIENT];
      if (client !== undefined) intake.left(client);
    };
  })();

  private left(client: string): void {
    const open = (this.clients.get(client) ?? 1) - 1;
    if (open === 0) this.clients.delete(client);
    else this.clients.set(client, open);
  }

  private forwardedClient(req: IncomingMessage): string {
    return clientAddress(
      req.socket.remoteAddress,
      req.headers['x-forwarded-for'] as string | undefined,
      this.identity,
    );
  }

  private tooManyConnectionsError(): Refusal {
    return {
      message: `Too many connections from this client: at most ${this.limits.maxConnectionsPerClient} at once.`,
      code: 'RATE_LIMITED',
      retryAfterMs: RETRY_AFTER_MS,
    };
  }

  private tooManyConnections(req: IncomingMessage, res: ServerResponse): void {
    refuse(this.cors, req, res, 429, this.tooManyConnectionsError());
  }

  /** Watches an admitted body, whose bytes `charge` holds, until its request closes. */
  private reserve(body: Arriving): void {
    this.arriving.push(body);
    // node:http closes a request once its body has been read (or its socket goes), long before a
    // stream's end: one listener for every request, the body on the request, where its readers
    // find their judge.
    (body.req as Reserving)[BODY_ADMISSION] = body;
    body.req.on('close', this.requestClosed);
    // A body of unknown length answered before it was read to its end (a 404, a refusal).
    if (body.req.headers['content-length'] === undefined) body.res.once('finish', () => this.unread(body));
    if (this.timer === null) this.timer = setTimeout(this.tick, this.tickMs).unref();
  }

  private readonly requestClosed = (() => {
    const intake = this;
    return function (this: Reserving) {
      const body = this[BODY_ADMISSION];
      if (body !== undefined) intake.release(body);
    };
  })();

  /** Gives a body's reservation back, once. */
  private release(body: Arriving): void {
    (body.req as Reserving)[BODY_ADMISSION] = undefined;
    if (body.index < 0) return;
    const last = this.arriving.pop() as Arriving;
    if (last !== body) {
      this.arriving[body.index] = last;
      last.index = body.index;
    }
    body.index = -1;
    this.discharge(body.client, body.bytes);
  }

  /**
   * A chunked body still arriving once its answer went out: node:http would discard the rest,
   * however long, with no reader to ask the cap (nor an event to count it by), so its connection
   * ends with the answer, as after a refusal.
   */
  private unread(body: Arriving): void {
    if (body.index < 0 || body.req.complete) return;
    this.release(body);
    body.req.socket?.destroySoon();
  }

  /**
   * A reader's word on `read` bytes of `body` (exchange/body.ts' `bodyWithin`): within the cap, or
   * refused here, 413 if nothing was answered yet, else the socket closed. Only a body of unknown
   * length can go past it: node's parser reads no further than a declared length.
   */
  within(body: Arriving, read: number): boolean {
    if (read <= this.maxRequestBytes) return true;
    if (body.index >= 0) {
      this.release(body);
      this.metrics.observeIntakeRefused('body_too_large');
      this.refuseArriving(body, 413, TOO_LARGE);
    }
    return false;
  }

  /** The one timer: every body still arriving, against its allowance. */
  private readonly tick = () => {
    this.timer = null;
    const now = performance.now();
    const { bodyTimeoutMs, minBodyRate, bodyFirstByteMs } = this.limits;
    // From the end: a body cut here takes the last one's place, which has been looked at already.
    for (let i = this.arriving.length - 1; i >= 0; i--) {
      const body = this.arriving[i] as Arriving;
      const { req } = body;
      if (req.complete) continue;
      // Answered and detached from its socket, a request is not closed when the socket is.
      if (req.socket === null || req.socket.destroyed) {
        this.release(body);
        continue;
      }
      const read = req.socket?.bytesRead ?? body.seen;
      if (body.seen < 0) {
        body.deadline = now + bodyTimeoutMs;
        body.firstByteBy = now + bodyFirstByteMs;
      } else if (req.readableLength > 0) {
        // Bytes the server has and not yet read are its own delay, not the client's.
        body.deadline = now + bodyTimeoutMs;
      } else if (read > body.seen) {
        body.deadline = Math.min(
          now + bodyTimeoutMs,
          body.deadline + ((read - body.seen) * 1_000) / minBodyRate,
        );
      }
      body.seen = read;
      // Some of the body has come: read by a reader, waiting in the request, or read off the
      // socket since the headers (a body that came with them is in one of the first two).
      if (body.firstByteBy > 0 && (req.readableDidRead || req.readableLength > 0 || read > body.start)) {
        body.firstByteBy = 0;
      }
      if (body.firstByteBy > 0 && now > body.firstByteBy) this.cut(body, 'first byte');
      else if (now > body.deadline) this.cut(body, 'pace');
    }
    if (this.arriving.length > 0) this.timer = setTimeout(this.tick, this.tickMs).unref();
  };

  /** A body that fell behind its allowance: 408 if nothing was answered yet, else the socket closed. */
  private cut(body: Arriving, missed: 'first byte' | 'pace'): void {
    this.release(body);
    this.metrics.observeIntakeRefused('slow_body');
    this.refuseArriving(body, 408, {
      message:
        missed === 'first byte'
          ? `No byte of the request body arrived within ${this.limits.bodyFirstByteMs} ms.`
          : `The request body arrived slower than ${this.limits.minBodyRate} bytes a second.`,
      code: 'BAD_USER_INPUT',
    });
  }

  /** A body refused while it arrives: answered if nothing was yet, else its socket closed. */
  private refuseArriving(body: Arriving, status: number, error: { message: string; code: ErrorCode }): void {
    if (body.res.headersSent) body.req.socket?.destroy();
    else refuse(this.cors, body.req, body.res, status, error);
  }
}

/** A refusal's status, headers and text, as every refusal of admission is answered. */
export interface Refusal {
  message: string;
  code: ErrorCode;
  retryAfterMs?: number;
}

/**
 * A WebSocket's share of the body budget (its client's, as intake counts clients): each operation's
 * message is held from its arrival until it is answered (http/websocket.ts), as a request's body is
 * until it has arrived, since one socket carries many at once.
 */
export class MessageBudget {
  constructor(
    private readonly intake: Intake,
    private readonly client: string,
  ) {}

  /** Holds `bytes`; the refusal (RATE_LIMITED) when the process budget or the client's share is full. */
  hold(bytes: number): (Refusal & { status: number }) | null {
    return this.intake.charge(this.client, bytes);
  }

  release(bytes: number): void {
    this.intake.discharge(this.client, bytes);
  }
}

const MESSAGE_BUDGET = Symbol('message budget');
type Budgeted = IncomingMessage & { [MESSAGE_BUDGET]?: MessageBudget };

/** The budget an upgrade's messages are charged to, which intake set on its request; null: none judges them. */
export const messageBudgetOf = (req: IncomingMessage): MessageBudget | null =>
  (req as Budgeted)[MESSAGE_BUDGET] ?? null;

/**
 * A refusal answered before (or instead of) reading the request's body, with the headers of every
 * answer (CORS, `x-request-id`, `cache-control`), and with `connection: close`: the body is not
 * read, so the connection cannot carry another request.
 */
function refusal(cors: CorsPolicy, req: IncomingMessage, error: Refusal) {
  const { message, ...extensions } = error;
  const text = JSON.stringify({ errors: [{ message, extensions }] });
  // A trace only for its request id (the caller's, or a new one): no span, nothing recorded.
  const headers = answerHeaders(cors, req.headers.origin, startTrace(headersOf(req).get, false), {
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(text)),
    'cache-control': DEFAULT_CACHE_CONTROL,
    connection: 'close',
    ...(error.retryAfterMs === undefined
      ? {}
      : { 'retry-after': String(Math.ceil(error.retryAfterMs / 1_000)) }),
  });
  return { headers, text };
}

function refuse(
  cors: CorsPolicy,
  req: IncomingMessage,
  res: ServerResponse,
  status: number,
  error: Refusal,
): void {
  const { headers, text } = refusal(cors, req, error);
  res.writeHead(status, headers);
  res.end(text);
}

/** The same refusal written on a socket node:http handed over (an upgrade), which is then closed. */
export function refuseSocket(
  cors: CorsPolicy,
  req: IncomingMessage,
  socket: Duplex,
  status: number,
  error: Refusal,
): void {
  const { headers, text } = refusal(cors, req, error);
  const head = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  socket.on('error', () => {});
  socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n${head.join('')}\r\n${text}`);
}
