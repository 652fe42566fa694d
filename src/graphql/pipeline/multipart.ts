import type { ExecutionResult, GraphQLError } from 'graphql';
import { isAsyncIterable, type Plugin } from 'graphql-yoga';
import { EVENT_STREAM_HEADERS } from '../../exchange/headers.js';
import type { Delivery } from '../../live/streams.js';
import {
  refusalHeaders,
  resultJson,
  StreamFraming,
  type WholeStream,
  wholeResponse,
  writtenError,
} from './framing.js';

/**
 * Apollo's multipart HTTP subscriptions (what Apollo Client's HttpLink, Apollo Kotlin and Apollo iOS
 * send: `Accept: multipart/mixed;subscriptionSpec=1.0`): the same pipeline, live groups and caps as
 * SSE, other bytes. Each part is `application/json`: an event is `{"payload": <result>}`, a
 * heartbeat `{}` every MULTIPART_HEARTBEAT_MS (clients ignore it), and a subscription refused before
 * its stream (a token refused, the caps, an invalid document) is the protocol's fatal message
 * `{"payload": null, "errors": [...]}` (its errors without locations or path), then the closing
 * boundary. Every part ends with the boundary, so that a client reads it at once. The adapter's
 * stream writer writes it (http/sse.ts); on Yoga's path (a request the adapter does not take, such
 * as one with extensions: Apollo Client 4 sends its name in them) `processMultipartSubscription`.
 */

/** How often an open multipart stream gets a heartbeat (Apollo Router's interval). */
export const MULTIPART_HEARTBEAT_MS = 5_000;

const BOUNDARY = '\r\n--graphql';
const PART = '\r\ncontent-type: application/json; charset=utf-8\r\n\r\n';
const HEARTBEAT = `${PART}{}${BOUNDARY}`;
const END = '--\r\n';

/** A result processor, as a plugin's `onResultProcess` sets one (graphql-yoga does not export its type). */
type ResultProcessor = Parameters<
  Parameters<NonNullable<Plugin['onResultProcess']>>[0]['setResultProcessor']
>[0];

/** A refusal's error at the transport level: the protocol's top-level errors have no locations or path. */
function transportError(error: GraphQLError) {
  const { locations: _locations, path: _path, ...rest } = writtenError(error);
  return rest;
}

class MultipartSubscriptions extends StreamFraming {
  readonly headers = {
    'Content-Type': 'multipart/mixed;boundary="graphql";subscriptionSpec="1.0"',
    'Cache-Control': 'no-cache',
    ...EVENT_STREAM_HEADERS,
  };
  readonly keepAlive = HEARTBEAT;
  override readonly keepAliveMs = MULTIPART_HEARTBEAT_MS;
  /**
   * Never ended at its age (MAX_STREAM_AGE_MS): Apollo Client does not resubscribe to a stream the
   * server ends, whatever its last part, so an aged stream would end the page's live view.
   */
  override readonly reconnects = false;

  /** The first boundary and a heartbeat, so that the client's fetch has its answer at once. */
  opening(): string {
    return `${BOUNDARY}${HEARTBEAT}`;
  }

  protected encode({ result }: Delivery): string {
    return `${PART}{"payload":${resultJson(result)}}${BOUNDARY}`;
  }

  /** No `retry:` here: Apollo resubscribes by its own policy. */
  closing(): string {
    return END;
  }

  single(result: ExecutionResult): WholeStream {
    const fatal = result.errors?.length
      ? `{"payload":null,"errors":${JSON.stringify(result.errors.map((e) => transportError(e as GraphQLError)))}}`
      : `{"payload":${resultJson(result)}}`;
    return {
      status: 200,
      headers: { ...this.headers, ...refusalHeaders(result) },
      body: `${BOUNDARY}${PART}${fatal}${BOUNDARY}${END}`,
    };
  }
}

export const MULTIPART = new MultipartSubscriptions();

/**
 * The framing on Yoga's path, as Yoga's SSE processor writes SSE there: results pulled at the
 * client's pace, a heartbeat timer per stream, the iterator returned when the client goes.
 */
export const processMultipartSubscription: ResultProcessor = (result, fetchAPI) => {
  if (!isAsyncIterable(result)) return wholeResponse(MULTIPART.single(result as ExecutionResult), fetchAPI);
  const iterator = result[Symbol.asyncIterator]();
  const encoder = new fetchAPI.TextEncoder();
  let heartbeat: NodeJS.Timeout | undefined;
  const body = new fetchAPI.ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode(MULTIPART.opening()));
      heartbeat = setInterval(() => {
        if ((controller.desiredSize ?? 0) > 0) controller.enqueue(encoder.encode(HEARTBEAT));
      }, MULTIPART_HEARTBEAT_MS);
    },
    async pull(controller) {
      const next = await iterator.next();
      if (!next.done) {
        const delivery = { result: next.value as ExecutionResult, polledAt: Date.now(), id: undefined };
        controller.enqueue(MULTIPART.frameOf(delivery));
        return;
      }
      clearInterval(heartbeat);
      controller.enqueue(encoder.encode(END));
      controller.close();
    },
    async cancel() {
      clearInterval(heartbeat);
      await iterator.return?.();
    },
  });
  return new fetchAPI.Response(body, { status: 200, headers: MULTIPART.headers });
};
