import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { ExecutionResult } from 'graphql';
import { processRegularResult } from 'graphql-yoga';
import { GRAPHQL_PATH } from '../config.js';
import { bodyWithin } from '../exchange/body.js';
import { Exchange, exchangeAnswering, type RequestHeaders } from '../exchange/exchange.js';
import { answerHeaders, type CorsPolicy, DEFAULT_CACHE_CONTROL } from '../exchange/headers.js';
import { INTERNAL_ANSWER, publicError } from '../exchange/public-errors.js';
import type { DocumentCache } from '../graphql/pipeline/documents.js';
import { envelopedArgs } from '../graphql/pipeline/enveloped.js';
import { MULTIPART } from '../graphql/pipeline/multipart.js';
import type { PreparedRequest } from '../graphql/pipeline/parts.js';
import { type AnswerShape, streamTransport } from '../graphql/pipeline/shape.js';
import type { AdapterRequest, Routing, SentParams, WholeAnswer } from '../graphql/routing.js';
import type { ContextSource, GatewayYoga } from '../graphql/yoga.js';
import { errorSummary } from '../ops/logger.js';
import { startTrace, type Telemetry } from '../ops/request-trace.js';
import type { Context } from '../schema/context.js';
import { headersOf, pipeResponse } from './node-response.js';
import { type EventStreams, SSE, serveSubscription } from './sse.js';

/**
 * The node:http listener of the gateway: a transport adapter in front of Yoga. The common
 * request, a JSON POST to /graphql asking for JSON (plain, or the GraphQL over HTTP media type
 * Apollo Client 4 and urql ask for, answered as Yoga answers it), is handed to Yoga's envelop pipeline
 * (every plugin of the schema: prepared documents, limits, telemetry's operation name,
 * error masking) straight from node:http, without building WHATWG Request and Response objects:
 * on a small machine that translation costs more than the GraphQL work. A repeated request of a hot
 * query, sent as text (POST, or GET: a CDN's miss) or named by a manifest's or APQ's id, runs its
 * prepared request instead (the same plugins' parts, graphql/pipeline/); a subscription asked for
 * as an event stream (POST, or an EventSource's GET) is written by sse.ts. Whether the adapter may
 * take a request is the plugins' to say (graphql/routing.ts): any plugin that declines it sends it
 * to Yoga, as does anything the adapter does not read (other methods, paths and media types,
 * batches, odd bodies). Answers are finished by their exchange (exchange/exchange.ts) and encoded by
 * Yoga's own result processor, as on Yoga's path; parity tests compare the paths byte for byte.
 */

/** A request's parameters with its document's text (sent, or named by id and held in process). */
type GraphQLParams = SentParams & { query: string };

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const PARAMS = new Set(['query', 'variables', 'operationName', 'extensions', 'documentId']);

/** A single GraphQL request body of the known members, each of its type (no batch); null: Yoga reads it. */
function sentParams(body: unknown): SentParams | null {
  if (!isObject(body)) return null;
  for (const member in body) if (!PARAMS.has(member)) return null;
  const { query, variables, operationName, extensions, documentId } = body;
  if (query !== undefined && typeof query !== 'string') return null;
  if (variables !== undefined && variables !== null && !isObject(variables)) return null;
  if (operationName !== undefined && operationName !== null && typeof operationName !== 'string') return null;
  if (extensions !== undefined && extensions !== null && !isObject(extensions)) return null;
  if (documentId !== undefined && typeof documentId !== 'string') return null;
  return body as SentParams;
}

/** The stream a request asks for (an event stream, Apollo's multipart subscriptions), if any: shape.ts. */
const streamOf = (req: IncomingMessage) => streamTransport(req.headers.accept);

/** The path of a request's URL. */
function pathOf(req: IncomingMessage): string {
  const q = req.url?.indexOf('?') ?? -1;
  return (q === -1 ? req.url : req.url?.slice(0, q)) ?? '/';
}

/** The media types Yoga's regular result processor writes, in the order it tries them. */
const REGULAR_MEDIA_TYPES = ['application/graphql-response+json', 'application/json'] as const;
type RegularMediaType = (typeof REGULAR_MEDIA_TYPES)[number];

/**
 * The media type Yoga answers one result in for this Accept (its useResultProcessors, mirrored):
 * the first range in utf-8 (q-values are not read) that one of its media types matches, the last
 * of them when a wildcard matches both (JSON); no Accept is a wildcard. Apollo Client 4 and urql
 * ask for `application/graphql-response+json` first. Null: Yoga writes it otherwise (an event
 * stream, 406).
 */
function regularMediaType(accept: string | undefined): RegularMediaType | null {
  // The usual Accepts of plain JSON clients, without parsing.
  if (!accept || accept === 'application/json' || accept === '*/*') return 'application/json';
  for (const range of accept.replace(/\s/g, '').toLowerCase().split(',')) {
    const [type = '', ...params] = range.split(';');
    if ((params.find((param) => param.includes('charset=')) ?? 'charset=utf-8') !== 'charset=utf-8') continue;
    const [group, sub] = type.split('/');
    let chosen: RegularMediaType | null = null;
    for (const media of REGULAR_MEDIA_TYPES) {
      const [mediaGroup, mediaSub] = media.split('/');
      if ((group === '*' || group === mediaGroup) && (sub === '*' || sub === mediaSub)) chosen = media;
    }
    if (chosen) return chosen;
  }
  return null;
}

const CONTENT_TYPES: Readonly<Record<RegularMediaType, string>> = {
  'application/graphql-response+json': 'application/graphql-response+json; charset=utf-8',
  'application/json': 'application/json; charset=utf-8',
};

/** Whether a request accepts what the adapter writes: one result as Yoga writes it, or a stream. */
function acceptsAnswer(req: IncomingMessage): boolean {
  return regularMediaType(req.headers.accept) !== null || streamOf(req) !== null;
}

/**
 * JSON in, JSON (or an event stream of a subscription) out, on the GraphQL endpoint: the only POSTs
 * the adapter reads. Whether it runs them is the plugins' to say (graphql/routing.ts).
 */
function readable(req: IncomingMessage): boolean {
  if (req.method !== 'POST' || pathOf(req) !== GRAPHQL_PATH) return false;
  const type = req.headers['content-type'];
  if (!type || !/^application\/json\s*(;|$)/i.test(type)) return false;
  return acceptsAnswer(req);
}

/**
 * Hands a request whose body was already read to Yoga, as a fetch Request, and streams Yoga's
 * answer back as it comes: a single JSON body, or a stream (SSE, multipart) written at the pace the
 * client reads it; the client's disconnect cancels the stream.
 */
export async function toYoga(yoga: GatewayYoga, req: IncomingMessage, res: ServerResponse, body: Buffer) {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (typeof value === 'string') headers.set(name, value);
  }
  // The node:http request goes along as server context, as Yoga's node adapter passes it: the
  // rate limit reads the client's address from it, and a stalled stream is cut through `res`.
  const response = await yoga.fetch(
    `http://${req.headers.host ?? 'localhost'}${req.url}`,
    { method: 'POST', headers, body: new Uint8Array(body) },
    { req, res },
  );
  await pipeResponse(res, response);
}

/** What runs a hot operation's repeated request: its prepared request, and the request's context. */
export interface PreparedPath {
  documents: DocumentCache;
  context(source: ContextSource): Context;
}

/**
 * A hot operation's repeated request (`hot`) runs its prepared request
 * (graphql/pipeline/): the parts of the pipeline's plugins, then the compiled plan. Any
 * other request is parsed, validated and executed through Yoga's envelop pipeline, as Yoga's
 * processRequest does.
 */
async function run(
  yoga: GatewayYoga,
  { telemetry, prepared }: { telemetry: Telemetry; prepared: PreparedPath },
  {
    request,
    params,
    hot,
  }: { request: ContextSource['request']; params: GraphQLParams; hot: PreparedRequest | null },
  serverContext: { req: IncomingMessage; res: ServerResponse },
): Promise<ExecutionResult> {
  try {
    if (hot) {
      telemetry.metrics.preparedRequests.inc();
      // The context Yoga's envelop pipeline would build: its initial context, extended.
      const context = {
        request,
        params,
        ...serverContext,
        ...prepared.context({ request, ...serverContext }),
      };
      return await hot.run(context, params.variables ?? undefined);
    }
    const envelope = yoga.getEnveloped({ request, params, ...serverContext });
    const args = await envelopedArgs(envelope, params, request.signal);
    if ('errors' in args) return args;
    // A single result: the routing left operations that answer in streams to Yoga (shape.ts).
    return (await envelope.execute(args)) as ExecutionResult;
  } catch (error) {
    // Errors of parsing and of the gateway's plugins arrive as GraphQLErrors; anything else is a
    // bug, logged without its message and masked (public-errors.ts).
    return {
      errors: [
        publicError(error, (bug) =>
          telemetry.logger.error({ err: errorSummary(bug as Error) }, 'fast path failed'),
        ),
      ],
    };
  }
}

/**
 * A finished result as a whole answer in the media type Yoga would choose: a bare success as its
 * JSON, anything with errors through Yoga's encoder (its status codes for that media type).
 */
async function answerOf(
  yoga: GatewayYoga,
  exchange: Exchange,
  result: ExecutionResult,
  media: RegularMediaType,
  common: Record<string, string>,
): Promise<WholeAnswer> {
  if (!result.errors) {
    // No errors, no internals to strip: the common case skips the Response object entirely.
    const stringify = (result as { stringify?: (r: unknown) => string }).stringify ?? JSON.stringify;
    const text = exchange.stampedText(result, stringify(result));
    return {
      status: 200,
      headers: {
        'content-type': CONTENT_TYPES[media],
        'content-length': String(Buffer.byteLength(text)),
        ...common,
      },
      body: text,
    };
  }
  const response = await processRegularResult(result as never, yoga.fetchAPI, media);
  const text = await response.text();
  return {
    status: response.status,
    headers: {
      ...Object.fromEntries(response.headers),
      'content-length': String(Buffer.byteLength(text)),
      ...common,
    },
    body: text,
  };
}

/** One fast-path request, traced from start to close, answered as its exchange finishes every answer. */
async function answer(
  yoga: GatewayYoga,
  {
    telemetry,
    cors,
    prepared,
    routing,
  }: Pick<ListenerOptions, 'telemetry' | 'cors' | 'prepared' | 'routing'>,
  {
    req,
    res,
    params,
    hot,
    headers,
  }: {
    req: IncomingMessage;
    res: ServerResponse;
    params: GraphQLParams;
    hot: PreparedRequest | null;
    headers: RequestHeaders;
  },
): Promise<void> {
  // Ends when the socket closes: the answer written, or the caller gone (cancelled, 499).
  const exchange = new Exchange({ res, method: req.method as string, headers }, telemetry, cors);
  const { request } = exchange;
  const result = exchange.finish(
    await run(yoga, { telemetry, prepared }, { request, params, hot }, { req, res }),
    true,
  );
  if (res.destroyed) return;
  const whole = await answerOf(
    yoga,
    exchange,
    result,
    // The listener took the request because this is not null (acceptsAnswer).
    regularMediaType(req.headers.accept) ?? 'application/json',
    exchange.answerHeaders({ 'cache-control': DEFAULT_CACHE_CONTROL }),
  );
  // What the plugins' onResponse would make of it on Yoga's path (a shareable GET's entity tag, a 304).
  const written = routing.answer(request, whole);
  if (res.destroyed) return;
  res.writeHead(written.status, written.headers);
  res.end(written.body ?? undefined);
}

/** The last resort: an answer that failed is logged, and the client gets a masked 500 (or a cut). */
function failed(telemetry: Telemetry, cors: CorsPolicy, req: IncomingMessage, res: ServerResponse) {
  return (error: Error) => {
    // The request's id as its exchange has it, or as a refusal before one would (the caller's, or new).
    const { requestId } = exchangeAnswering(res)?.trace ?? startTrace(headersOf(req).get, false);
    telemetry.logger.error({ err: errorSummary(error), requestId }, 'answer failed');
    // Once headers are out, a body can no longer be replaced: the connection is cut instead.
    if (res.headersSent) {
      res.destroy();
      return;
    }
    res.writeHead(
      500,
      answerHeaders(
        cors,
        req.headers.origin,
        { requestId },
        {
          'content-type': 'application/json; charset=utf-8',
          'cache-control': DEFAULT_CACHE_CONTROL,
        },
      ),
    );
    res.end(INTERNAL_ANSWER);
  };
}

/**
 * A GET's GraphQL parameters (`?query=…`: a CDN's miss, an EventSource), or null when Yoga should read
 * them (no document, extensions, variables that are not a JSON object).
 */
function getParams(req: IncomingMessage): SentParams | null {
  // Parsed after a fixed origin, so that a path such as `//%zz` can never be read as a host.
  let url: URL;
  try {
    url = new URL(`http://gateway${req.url ?? '/'}`);
  } catch {
    return null;
  }
  if (url.searchParams.has('extensions')) return null;
  const query = url.searchParams.get('query');
  if (!query) return null;
  let variables: unknown = null;
  try {
    variables = JSON.parse(url.searchParams.get('variables') ?? 'null');
  } catch {
    return null;
  }
  if (variables !== null && !isObject(variables)) return null;
  return { query, variables, operationName: url.searchParams.get('operationName') };
}

export interface ListenerOptions {
  telemetry: Telemetry;
  cors: CorsPolicy;
  /** Every subscription stream the adapter writes itself (sse.ts). */
  streams: EventStreams;
  /** What the pipeline's plugins decide at the HTTP stage, which the adapter asks. */
  routing: Routing;
  /** Hot operations' prepared requests, and the context each request runs with. */
  prepared: PreparedPath;
}

/**
 * A request as the plugins see it at the HTTP stage (graphql/routing.ts). A hot operation's shape
 * is its prepared request's (one result); any other's is asked of the document cache when a plugin
 * asks.
 */
function adapterRequest(
  req: IncomingMessage,
  params: SentParams,
  text: string,
  { documents, hot }: { documents: DocumentCache; hot: PreparedRequest | null },
): AdapterRequest {
  let shape: AnswerShape | null | undefined = hot ? 'single' : undefined;
  return {
    method: req.method as string,
    path: pathOf(req),
    headers: headersOf(req),
    params,
    shape: () => {
      if (shape === undefined) shape = documents.shapeOf(text, params.operationName);
      return shape;
    },
  };
}

export function createRequestListener(yoga: GatewayYoga, options: ListenerOptions): RequestListener {
  const { telemetry, cors, streams, routing, prepared } = options;
  /**
   * Where a request goes once its parameters are read: to Yoga whenever a plugin declines it (it
   * needs a step or a refusal that only Yoga's path runs) or its document is named by an id no plugin
   * holds; otherwise by how its operation answers: a subscription asked for as a stream to the
   * adapter's stream writer (SSE, or Apollo's multipart), one result as JSON to the fast path (a
   * document named by id only as a prepared request: Yoga resolves, proves, registers and refuses
   * ids), anything else to Yoga.
   */
  const route = (req: IncomingMessage, res: ServerResponse, sent: SentParams, body: Buffer | null) => {
    const toYogaAgain = () => (body ? toYoga(yoga, req, res, body) : yoga(req, res));
    const text = sent.query ?? routing.named(sent);
    if (text === null) return toYogaAgain();
    const transport = streamOf(req);
    const hot = transport ? null : prepared.documents.preparedRequest(text, sent.operationName);
    // A GET of one result runs only a prepared query: Yoga's path parses the rest, refuses a
    // mutation (405) and answers what does not parse.
    if (req.method === 'GET' && !transport && !hot?.query) return toYogaAgain();
    const request = adapterRequest(req, sent, text, { documents: prepared.documents, hot });
    if (routing.declines(request) !== null) return toYogaAgain();
    const params = { ...sent, query: text };
    if (transport) {
      const { headers } = request;
      const framing = transport === 'multipart' ? MULTIPART : SSE;
      return request.shape() === 'subscription' && sent.query !== undefined
        ? serveSubscription({ yoga, telemetry, cors, streams, req, res, params, framing, headers })
        : toYogaAgain();
    }
    if (!hot && sent.query === undefined) return toYogaAgain();
    return answer(yoga, options, { req, res, params, hot, headers: request.headers });
  };
  return (req, res) => {
    telemetry.metrics.inFlight.inc();
    res.once('close', () => telemetry.metrics.inFlight.dec());
    if (req.method === 'GET') {
      const params = pathOf(req) === GRAPHQL_PATH && acceptsAnswer(req) ? getParams(req) : null;
      if (params) Promise.resolve(route(req, res, params, null)).catch(failed(telemetry, cors, req, res));
      else yoga(req, res);
      return;
    }
    if (!readable(req)) {
      yoga(req, res);
      return;
    }
    const chunks: Buffer[] = [];
    let read = 0;
    const onData = (chunk: Buffer) => {
      read += chunk.length;
      if (bodyWithin(req, read)) {
        chunks.push(chunk);
        return;
      }
      // Past the cap (a body of unknown length): intake has refused the request; nothing more of
      // it is kept, and it is never routed.
      chunks.length = 0;
      req.off('data', onData);
      req.off('end', onEnd);
    };
    const onEnd = () => {
      const body = Buffer.concat(chunks);
      // A stream's request lives as long as the stream: its chunks need not.
      chunks.length = 0;
      let params: SentParams | null = null;
      try {
        params = sentParams(JSON.parse(body.toString('utf8')));
      } catch {
        params = null;
      }
      const handled = params ? route(req, res, params, body) : toYoga(yoga, req, res, body);
      Promise.resolve(handled).catch(failed(telemetry, cors, req, res));
    };
    req.on('data', onData);
    req.on('error', () => res.destroy());
    req.on('end', onEnd);
  };
}
