import type { ExecutionResult, GraphQLError } from 'graphql';
import type { Delivery } from '../../live/streams.js';

/**
 * How a transport frames a subscription's stream of results (SSE here; Apollo's multipart:
 * multipart.ts): the bytes only. The writers are the adapter's one stream writer (http/sse.ts) and,
 * on Yoga's path, Yoga's SSE processor and multipart.ts's; limits, pricing, caps, groups and masking
 * are the pipeline's, whatever the framing. A result's bytes are made once per framing whichever
 * streams they go to (a group's event is one result object for all its members). Every `retry:`
 * the gateway writes is drawn by `jitter`.
 */

/** A time at random within `spread` (ms, bounds included): every reconnection hint is one. */
export function jitter(spread: { readonly min: number; readonly max: number }): number {
  return spread.min + Math.floor(Math.random() * (spread.max - spread.min + 1));
}

/** An error as Yoga writes it: without its internal extensions (`http`, `unexpected`). */
export function writtenError(error: GraphQLError) {
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

/** A result as Yoga's result processors write it: without the internals of its errors and extensions. */
export function writtenResult(result: ExecutionResult): ExecutionResult {
  const http = (result.extensions as { http?: unknown } | undefined)?.http;
  if (!result.errors?.length && http === undefined) return result;
  const { http: _http, ...extensions } = (result.extensions ?? {}) as Record<string, unknown>;
  return {
    ...result,
    ...(result.errors ? { errors: result.errors.map((e) => writtenError(e as GraphQLError)) } : {}),
    extensions: Object.keys(extensions).length > 0 ? extensions : undefined,
  } as ExecutionResult;
}

/** A result's JSON as Yoga's result processors write it (a compiled plan's own stringifier first). */
export function resultJson(result: ExecutionResult): string {
  const stringify = (result as { stringify?: (r: unknown) => string }).stringify ?? JSON.stringify;
  return stringify(writtenResult(result));
}

/** The headers a refusal's error asks for (`extensions.http.headers`: `retry-after`), as Yoga reads them. */
export function refusalHeaders(result: ExecutionResult): Record<string, string> {
  for (const error of result.errors ?? []) {
    const http = error.extensions?.http as { headers?: Record<string, string> } | undefined;
    if (http?.headers) return http.headers;
  }
  return {};
}

/** A subscription answered whole, in a stream's framing: its head's status and headers, and its bytes. */
export interface WholeStream {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** A whole answer as Yoga's path writes it: a fetch Response. */
export const wholeResponse = (whole: WholeStream, fetchAPI: { Response: typeof Response }): Response =>
  new fetchAPI.Response(whole.body, { status: whole.status, headers: whole.headers });

export abstract class StreamFraming {
  private readonly frames = new WeakMap<ExecutionResult, Buffer>();
  /** The head's headers besides the exchange's. */
  abstract readonly headers: Readonly<Record<string, string>>;
  /** What keeps an idle stream open through proxies. */
  abstract readonly keepAlive: string;
  /** How often; undefined: the writer's own interval. */
  readonly keepAliveMs: number | undefined = undefined;
  /** The bytes written with the head. */
  abstract opening(): string;
  /** The bytes of one event. */
  protected abstract encode(delivery: Delivery): string;
  /** The last bytes of a stream that is over. */
  abstract closing(): string;
  /**
   * Whether the framing's clients come back by themselves to a stream that ends without its end:
   * only such streams are ended at their age (MAX_STREAM_AGE_MS, live/streams.ts `StreamAges`).
   */
  readonly reconnects: boolean = false;
  /**
   * The last bytes of a stream ended for its client to come back (at its age, at a shutdown): a
   * framing whose clients do not come back by themselves ends it as one that is over.
   */
  parting(): string {
    return this.closing();
  }
  /**
   * A subscription the pipeline answered with one result (a refusal, an error), `capacity` the
   * refusal for capacity among its errors if it is one: its whole answer, or null for Yoga's.
   */
  abstract single(result: ExecutionResult, capacity: GraphQLError | null): WholeStream | null;

  /** One event's bytes, made once per result for every stream of this framing. */
  frameOf(delivery: Delivery): Buffer {
    let frame = this.frames.get(delivery.result);
    if (!frame) {
      frame = Buffer.from(this.encode(delivery));
      this.frames.set(delivery.result, frame);
    }
    return frame;
  }
}

/**
 * How long an EventSource waits before it reconnects (`retry:`): each stream starts with a time of
 * its own, at random within these bounds, and at a shutdown ends with another (contract.md §8, §9),
 * so that the clients of a crashed or draining instance come back over nine seconds, not within one.
 */
export const SSE_RETRY_SPREAD_MS = { min: 1_000, max: 10_000 } as const;

/**
 * A stream refused for capacity tells its EventSource to come back after a time at random between
 * the refusal's retry-after and this many times it: a full instance's refused clients spread out.
 */
const REFUSED_RETRY_SCALE = 5;

const COMPLETE = 'event: complete\ndata:\n\n';

/** Server-Sent Events as Yoga writes them: `:` first, `event: next` / `data:` per result, `event: complete`. */
class ServerSentEvents extends StreamFraming {
  readonly headers = {
    'Content-Type': 'text/event-stream',
    Connection: 'keep-alive',
    'Cache-Control': 'no-cache',
    'Content-Encoding': 'none',
  };
  readonly keepAlive = ':\n\n';

  /** Yoga's first comment, then the stream's own `retry:` (`ownRetry`). */
  opening(): string {
    return `:\n\n${this.ownRetry()}`;
  }

  /** Each stream's own `retry:`, so that the clients of an instance that crashed come back spread out. */
  ownRetry(): string {
    return `retry: ${jitter(SSE_RETRY_SPREAD_MS)}\n\n`;
  }

  /**
   * A stream Yoga's SSE processor writes (Yoga's path), given its own `retry:` too: after Yoga's
   * first chunk (its `:` comment), as the adapter writes it.
   */
  withOwnRetry(
    response: Response,
    fetchAPI: {
      TextEncoder: typeof TextEncoder;
      TransformStream: typeof TransformStream;
      Response: typeof Response;
    },
  ): Response {
    const retry = new fetchAPI.TextEncoder().encode(this.ownRetry());
    let first = true;
    const body = response.body?.pipeThrough(
      new fetchAPI.TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          controller.enqueue(chunk);
          if (first) controller.enqueue(retry);
          first = false;
        },
      }),
    );
    return new fetchAPI.Response(body, { status: response.status, headers: response.headers });
  }

  /** An event a client can resume after carries its `id:` (a block's height: Last-Event-ID). */
  protected encode({ result, id }: Delivery): string {
    return `${id === undefined ? '' : `id: ${id}\n`}event: next\ndata: ${resultJson(result)}\n\n`;
  }

  closing(): string {
    return COMPLETE;
  }

  /** An EventSource and graphql-sse's client reconnect to a stream that ends with no `complete`. */
  override readonly reconnects = true;

  /**
   * A stream ended at its age or at a shutdown: a `retry:` and no `complete`, which would end
   * graphql-sse's client for good. An EventSource comes back after the `retry:` with its
   * Last-Event-ID; graphql-sse's client after its own backoff (it reads no `retry:` and sends no
   * Last-Event-ID of its own).
   */
  override parting(): string {
    return this.ownRetry();
  }

  /**
   * A refusal for capacity: a 429 would end an EventSource for good (WHATWG: any status but 200
   * fails the connection), so it is a stream that carries the refusal, a `retry:` at random
   * between its retry-after and five times that, and ends: the EventSource comes back by itself,
   * and graphql-sse's client gets RATE_LIMITED as a result, then `complete`. Any other: Yoga's.
   */
  single(result: ExecutionResult, capacity: GraphQLError | null): WholeStream | null {
    if (!capacity) return null;
    const after = Number(capacity.extensions.retryAfterMs) || 1_000;
    const retry = jitter({ min: after, max: after * REFUSED_RETRY_SCALE });
    return {
      status: 200,
      headers: { ...this.headers, ...refusalHeaders(result) },
      body: `:\n\nretry: ${retry}\n\nevent: next\ndata: ${resultJson(result)}\n\n${COMPLETE}`,
    };
  }
}

export const SSE = new ServerSentEvents();
