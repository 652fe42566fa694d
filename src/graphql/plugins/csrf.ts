import { useCSRFPrevention } from '@graphql-yoga/plugin-csrf-prevention';
import type { Plugin } from 'graphql-yoga';

/**
 * A request must carry a header a plain HTML form cannot set (content-type application/json
 * counts), so that a cross-site form cannot act with a visitor's cookies (Yoga's CSRF prevention).
 * One exception: a GET that asks only for an event stream, which is how a browser's EventSource
 * subscribes (it cannot set a header). Such a request only reads (a mutation over GET is refused),
 * and what it reads a page of another origin cannot see (CORS).
 */
export function useCsrfPrevention(): Plugin {
  const prevention = useCSRFPrevention({ requestHeaders: ['x-graphql-csrf', 'apollo-require-preflight'] });
  return {
    onRequestParse(payload) {
      const { request } = payload;
      if (request.method === 'GET' && request.headers.get('accept')?.trim() === 'text/event-stream') return;
      return prevention.onRequestParse?.(payload);
    },
  };
}
