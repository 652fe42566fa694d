import type { ServerResponse } from 'node:http';
import type { ExecutionResult } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { GRAPHQL_PATH } from '../../config.js';
import { attachExchange, Exchange, exchangeOf, finishResult } from '../../exchange/exchange.js';
import { type CorsPolicy, DEFAULT_CACHE_CONTROL, EVENT_STREAM_HEADERS } from '../../exchange/headers.js';
import type { Telemetry } from '../../ops/request-trace.js';
import { type HttpStagePlugin, withHttpStage } from '../routing.js';

/** Media types of answers that stream: ended as a stream's exchange is, once the head is written. */
const STREAMING = /^(text\/event-stream|multipart\/mixed)/;

/**
 * The exchange (exchange.ts) of every request Yoga reads: opened first, on the node:http socket Yoga
 * was handed when there is one (its 499, its end at the socket's close), or with none
 * (`yoga.fetch`); its results (single or batched) finished, its preflights answered, and every
 * response's headers written, as the adapter's paths do with the same exchange.
 */
export function useAnswers(telemetry: Telemetry, cors: CorsPolicy): HttpStagePlugin {
  const open = (request: Request, serverContext: unknown, graphql: boolean): Exchange => {
    const res = (serverContext as { res?: ServerResponse } | undefined)?.res;
    // The adapter hands Yoga only requests it has not opened an exchange for (fast-path.ts).
    const exchange = new Exchange(
      { res, method: request.method, headers: request.headers, graphql },
      telemetry,
      cors,
    );
    attachExchange(request, exchange);
    return exchange;
  };
  const plugin: Plugin = {
    onRequest({ request, url, serverContext, endResponse }) {
      open(request, serverContext, url.pathname === GRAPHQL_PATH);
      if (request.method === 'OPTIONS' && request.headers.has('access-control-request-method')) {
        endResponse(
          new Response(null, { status: 204, headers: cors.preflight(request.headers.get('origin')) }),
        );
      }
    },
    onResultProcess({ request, result, setResult }) {
      if (Array.isArray(result)) setResult(result.map((r) => finishResult(undefined, r as ExecutionResult)));
      else if (!(Symbol.asyncIterator in (result as object))) {
        setResult(finishResult(exchangeOf(request)?.trace, result as ExecutionResult));
      }
    },
    onResponse({ request, response, serverContext }) {
      // A response one of Yoga's own plugins gave before this one saw the request (GraphiQL's page).
      const exchange = exchangeOf(request) ?? open(request, serverContext, false);
      for (const [name, value] of Object.entries(exchange.answerHeaders())) response.headers.set(name, value);
      if (!response.headers.has('cache-control'))
        response.headers.set('cache-control', DEFAULT_CACHE_CONTROL);
      const type = response.headers.get('content-type') ?? '';
      if (type.startsWith('text/event-stream')) {
        for (const [name, value] of Object.entries(EVENT_STREAM_HEADERS)) response.headers.set(name, value);
      }
      exchange.answered(response.status, STREAMING.test(type));
    },
  };
  return withHttpStage(plugin, {
    // A preflight is an OPTIONS request, which the adapter never takes.
    declines: ({ method }) => (method === 'OPTIONS' ? 'a CORS preflight' : null),
  });
}
