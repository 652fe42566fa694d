import { createGraphQLError } from '@graphql-tools/utils';
import { useCSRFPrevention } from '@graphql-yoga/plugin-csrf-prevention';
import type { Plugin } from 'graphql-yoga';
import { CSRF_HEADERS } from '../../exchange/headers.js';
import { answerShapeOfText, streamTransport } from '../pipeline/shape.js';
import { type AdapterRequest, type HttpStagePlugin, withHttpStage } from '../routing.js';

/**
 * A request must carry a header a plain HTML form cannot set (content-type application/json
 * counts), so that a cross-site form or link cannot act with a visitor's cookies (Yoga's CSRF
 * prevention). One exception, only where it is needed: a GET that asks only for an event stream and
 * whose document's operation is a subscription, which is how a browser's EventSource subscribes (it
 * cannot set a header). Such a request only reads, and what it reads a page of another origin
 * cannot see (CORS). Anything the exception cannot prove (a query, a document that does not parse,
 * a document named only by its persisted hash) needs the header like any other request, and its
 * refusal (403, BAD_USER_INPUT) says which header to send.
 */

/**
 * Yoga's own refusal names no header; a frontend developer whose client sends its queries as GETs
 * (urql's default) must learn from it what to send.
 */
export const CSRF_REFUSAL =
  'CSRF prevention: send the header x-graphql-csrf: 1 (or apollo-require-preflight: true) with a GET, or use POST with content-type application/json.';

const refused = () =>
  createGraphQLError(CSRF_REFUSAL, { extensions: { http: { status: 403 }, code: 'BAD_USER_INPUT' } });

/** The exception: an EventSource's subscription. */
function exempt({ method, headers, params, shape }: AdapterRequest): boolean {
  return (
    method === 'GET' &&
    streamTransport(headers.get('accept')) === 'sse' &&
    typeof params.query === 'string' &&
    shape() === 'subscription'
  );
}

export function useCsrfPrevention(): HttpStagePlugin {
  const prevention = useCSRFPrevention({ requestHeaders: [...CSRF_HEADERS] }) as Required<
    Pick<Plugin, 'onRequestParse'>
  >;
  /**
   * The one predicate, for a request as either path sees it: refused unless exempt, by Yoga's
   * check itself.
   */
  const refuses = (request: AdapterRequest): boolean => {
    if (exempt(request)) return false;
    try {
      prevention.onRequestParse({ request } as never);
      return false;
    } catch {
      return true;
    }
  };
  return withHttpStage(
    {
      onRequestParse(payload) {
        const { request, url } = payload;
        const query = url.searchParams.get('query') ?? undefined;
        const operationName = url.searchParams.get('operationName');
        const sent: AdapterRequest = {
          method: request.method,
          path: url.pathname,
          headers: request.headers,
          params: { query, operationName },
          shape: () => (query === undefined ? null : answerShapeOfText(query, operationName)),
        };
        if (refuses(sent)) throw refused();
      },
    },
    {
      declines: (request) => (refuses(request) ? 'CSRF prevention: no header a form cannot set' : null),
    },
  );
}
