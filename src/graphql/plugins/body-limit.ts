import type { IncomingMessage } from 'node:http';
import { createGraphQLError } from '@graphql-tools/utils';
import type { Plugin } from 'graphql-yoga';
import { bodyWithin, TOO_LARGE_MESSAGE } from '../../exchange/body.js';
import { type HttpStagePlugin, withHttpStage } from '../routing.js';

/**
 * The request-body cap (MAX_REQUEST_BYTES) as Yoga's reader meets it, in place of Yoga's
 * `maxRequestBodySize` (whose TransformStream holds about 10 KB per open stream). Intake
 * (http/intake.ts) decides the cap; this reader asks it (exchange/body.ts' `bodyWithin`) as bytes
 * come. Served without intake (`yoga.fetch`), the plugin checks the same cap itself: 413
 * `Request body too large`, 400 for a malformed length.
 */

const tooLarge = () =>
  createGraphQLError(TOO_LARGE_MESSAGE, {
    extensions: { http: { status: 413 }, code: 'REQUEST_ENTITY_TOO_LARGE' },
  });

const CONTENT_LENGTH = /^\d+$/;

export function useRequestBodyLimit(maxBytes: number): HttpStagePlugin {
  const plugin: Plugin = {
    onRequestParse({ request, requestParser, setRequestParser, fetchAPI, serverContext }) {
      const declared = request.headers.get('content-length');
      if (declared !== null) {
        if (!CONTENT_LENGTH.test(declared)) {
          throw createGraphQLError('Content-Length header is invalid.', {
            extensions: { http: { status: 400 }, code: 'BAD_REQUEST' },
          });
        }
        if (Number(declared) > maxBytes) throw tooLarge();
        return;
      }
      const body = request.body;
      if (!requestParser || !body) return;
      // The node:http request, on Yoga's node adapter and on the fast path's hand-over alike.
      const { req } = serverContext as { req?: IncomingMessage };
      let read = 0;
      // A native stream (a Request built by Node's fetch) pipes only into a native transform.
      const Transform = body instanceof ReadableStream ? TransformStream : fetchAPI.TransformStream;
      const counted = body.pipeThrough(
        new Transform<Uint8Array, Uint8Array>({
          transform(chunk, controller) {
            read += chunk.byteLength;
            if (!bodyWithin(req, read) || read > maxBytes) controller.error(tooLarge());
            else controller.enqueue(chunk);
          },
        }),
      );
      const parse = requestParser;
      setRequestParser(() =>
        parse(
          new fetchAPI.Request(request.url, {
            method: request.method,
            headers: request.headers,
            signal: request.signal,
            body: counted,
            duplex: 'half',
          } as RequestInit),
        ),
      );
    },
  };
  // The adapter reads a body whose declared length is within the cap; any other takes Yoga's path
  // (a body of unknown length is counted there, a malformed or excessive one refused).
  return withHttpStage(plugin, {
    declines: ({ method, headers }) => {
      if (method === 'GET') return null;
      const declared = headers.get('content-length');
      return declared !== null && CONTENT_LENGTH.test(declared) && Number(declared) <= maxBytes
        ? null
        : 'the body cap: no declared length within MAX_REQUEST_BYTES';
    },
  });
}
