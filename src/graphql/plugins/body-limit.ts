import { createGraphQLError } from '@graphql-tools/utils';
import type { Plugin } from 'graphql-yoga';
import { type HttpStagePlugin, withHttpStage } from '../routing.js';

/**
 * The request-body cap, in place of Yoga's `maxRequestBodySize`. Yoga's check pipes every body through a TransformStream into a
 * second Request, and on node:http that pipeline's listeners stay on the IncomingMessage until the
 * request ends: about 10 KB held by each open subscription stream (a POST whose request ends only
 * with its stream). Here a declared Content-Length is checked and trusted, as node's HTTP parser
 * never reads past it; only a body of unknown length (chunked) is counted as it arrives. Same
 * answers as Yoga's: 413 `Request body too large`, 400 for a malformed Content-Length.
 */

const tooLarge = () =>
  createGraphQLError('Request body too large', {
    extensions: { http: { status: 413 }, code: 'REQUEST_ENTITY_TOO_LARGE' },
  });

const CONTENT_LENGTH = /^\d+$/;

export function useRequestBodyLimit(maxBytes: number): HttpStagePlugin {
  const plugin: Plugin = {
    onRequestParse({ request, requestParser, setRequestParser, fetchAPI }) {
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
      let read = 0;
      // A native stream (a Request built by Node's fetch) pipes only into a native transform.
      const Transform = body instanceof ReadableStream ? TransformStream : fetchAPI.TransformStream;
      const counted = body.pipeThrough(
        new Transform<Uint8Array, Uint8Array>({
          transform(chunk, controller) {
            read += chunk.byteLength;
            if (read > maxBytes) controller.error(tooLarge());
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
