import { useCSRFPrevention } from '@graphql-yoga/plugin-csrf-prevention';
import { getOperationAST, parse } from 'graphql';
import type { Plugin } from 'graphql-yoga';

/**
 * A request must carry a header a plain HTML form cannot set (content-type application/json
 * counts), so that a cross-site form or link cannot act with a visitor's cookies (Yoga's CSRF
 * prevention). One exception, only where it is needed: a GET that asks only for an event stream and
 * whose document's operation is a subscription, which is how a browser's EventSource subscribes (it
 * cannot set a header). Such a request only reads, and what it reads a page of another origin
 * cannot see (CORS). Anything the exception cannot prove (a query, a document that does not parse,
 * a document named only by its persisted hash) needs the header like any other request.
 */
export function useCsrfPrevention(): Plugin {
  const prevention = useCSRFPrevention({ requestHeaders: ['x-graphql-csrf', 'apollo-require-preflight'] });
  return {
    onRequestParse(payload) {
      const { request, url } = payload;
      if (
        request.method === 'GET' &&
        request.headers.get('accept')?.trim() === 'text/event-stream' &&
        subscribes(url.searchParams)
      ) {
        return;
      }
      return prevention.onRequestParse?.(payload);
    },
  };
}

/** Whether a GET's document is a subscription (its named operation, or its only one). */
function subscribes(search: URLSearchParams): boolean {
  const query = search.get('query');
  if (!query) return false;
  try {
    return (
      getOperationAST(parse(query), search.get('operationName') || undefined)?.operation === 'subscription'
    );
  } catch {
    return false;
  }
}
