import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { ExecutionArgs, ExecutionResult } from 'graphql';
import { GraphQLError } from 'graphql';
import { processRegularResult, type YogaServerInstance } from 'graphql-yoga';
import { INTERNAL_MESSAGE } from '../errors.js';
import type { Context } from '../graphql/context.js';
import type { DocumentCache, PreparedRequest } from '../graphql/plugins/prepared.js';
import type { ContextSource } from '../graphql/yoga.js';
import { errorSummary } from '../ops/logger.js';
import { attachTrace, finishTrace, startTrace, type Telemetry } from '../ops/request-trace.js';
import { Cancellation } from '../upstream/cancellation.js';
import { addChargeHeaders, type CorsPolicy, DEFAULT_CACHE_CONTROL, finishResult } from './answer.js';
import { headersOf, pipeResponse } from './node-response.js';
import { type EventStreams, type StreamParams, serveSubscription } from './sse.js';

/**
 * The node:http listener of the gateway: a transport adapter in front of Yoga. The common
 * request, a JSON POST to /graphql asking for JSON, is handed to Yoga's own envelop pipeline
 * (every plugin of the schema: prepared documents, limits, telemetry's operation name,
 * error masking) straight from node:http, without building WHATWG Request and Response objects:
 * on a small machine that translation costs more than the GraphQL work. A repeated request of a hot
 * query, sent as text or named by a manifest's or APQ's id, runs its prepared request instead (the
 * same plugins' parts, graphql/plugins/prepared.ts). Its answer is finished by answer.ts and
 * encoded by Yoga's own result processor, as on Yoga's path; parity tests compare the paths byte
 * for byte. Everything else (GET, GraphiQL, batches, other media types, health, odd bodies, ids
 * not at hand) goes to Yoga unchanged.
 */

interface GraphQLParams {
  query: string;
  variables?: Record<string, unknown> | null;
  operationName?: string | null;
  extensions?: Record<string, unknown> | null;
  documentId?: string;
}

/** A request's parameters as sent: its document by text, or named by id (`query` then absent). */
type SentParams = Omit<GraphQLParams, 'query'> & { query?: string };

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A single GraphQL request body of the known members, each of its type (no batch); null: Yoga reads it. */
function sentParams(body: unknown): SentParams | null {
  if (!isObject(body)) return null;
  const { query, variables, operationName, extensions, documentId, ...rest } = body;
  if (Object.keys(rest).length > 0) return null;
  if (query !== undefined && typeof query !== 'string') return null;
  if (variables !== undefined && variables !== null && !isObject(variables)) return null;
  if (operationName !== undefined && operationName !== null && typeof operationName !== 'string') return null;
  if (extensions !== undefined && extensions !== null && !isObject(extensions)) return null;
  if (documentId !== undefined && typeof documentId !== 'string') return null;
  return body as SentParams;
}

/** Whether a request names its document by id: a manifest's `documentId` or hash, or APQ's hash. */
const namesDocument = (params: SentParams) =>
  params.documentId !== undefined || (params.extensions !== undefined && params.extensions !== null);

/** Whether a request asks for an event stream and nothing else (EventSource, `graphql-sse`). */
const wantsEventStream = (req: IncomingMessage) => req.headers.accept?.trim() === 'text/event-stream';

/**
 * JSON in, JSON (or an event stream of a subscription) out, and a declared length within the cap:
 * the only POSTs the adapter takes.
 */
function eligible(req: IncomingMessage, maxBytes: number): boolean {
  if (req.method !== 'POST') return false;
  const q = req.url?.indexOf('?') ?? -1;
  if ((q === -1 ? req.url : req.url?.slice(0, q)) !== '/graphql') return false;
  const type = req.headers['content-type'];
  if (!type || !/^application\/json\s*(;|$)/i.test(type)) return false;
  const accept = req.headers.accept;
  if (
    accept &&
    accept !== '*/*' &&
    !/^application\/json\s*(;[^,]*)?$/i.test(accept) &&
    !wantsEventStream(req)
  )
    return false;
  const length = Number(req.headers['content-length']);
  return Number.isInteger(length) && length > 0 && length <= maxBytes;
}

export type GatewayYoga = YogaServerInstance<Record<string, unknown>, Context>;

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

/**
 * Documents the fast path does not run: subscriptions and `@defer`/`@stream` answer in streams
 * (SSE, multipart), which Yoga writes. Told by their text, before any parse: a false alarm (the
 * word in a string) only sends a request the longer way.
 */
const STREAMING = /\bsubscription\b|@\s*(?:defer|stream)\b/;

/** What runs a hot operation's repeated request: its prepared request, and the request's context. */
export interface PreparedPath {
  documents: DocumentCache;
  context(source: ContextSource): Context;
  /**
   * The document a request names by id, when it is at hand in process without a check to make (a
   * persisted-operations manifest's entry, a registered APQ document); null: Yoga resolves the id.
   */
  named(params: SentParams): string | null;
}

/**
 * A hot operation's repeated request (`hot`) runs its prepared request
 * (graphql/plugins/prepared.ts): the parts of the pipeline's plugins, then the compiled plan. Any
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
    const { parse, validate, contextFactory, execute, schema } = yoga.getEnveloped({
      request,
      params,
      ...serverContext,
    });
    const document = parse(params.query);
    const errors = validate(schema, document);
    if (errors.length > 0) return { errors };
    const args: ExecutionArgs & { signal?: unknown } = {
      schema,
      document,
      contextValue: await contextFactory(),
      variableValues: params.variables ?? undefined,
      operationName: params.operationName ?? undefined,
      signal: request.signal,
    };
    const result = await execute(args);
    if (Symbol.asyncIterator in (result as object)) {
      // A stream the text test above missed (a directive written around a comment): Yoga's answer
      // to a stream asked for as plain JSON.
      await (result as AsyncGenerator).return?.(undefined);
      return {
        errors: [
          new GraphQLError(
            'This operation answers in a stream: ask for text/event-stream or multipart/mixed.',
            {
              extensions: { code: 'BAD_USER_INPUT', http: { status: 406 } },
            },
          ),
        ],
      };
    }
    return result as ExecutionResult;
  } catch (error) {
    // Errors of parsing and of the gateway's plugins arrive as GraphQLErrors; anything else is a
    // bug, logged without its message and masked.
    if (error instanceof GraphQLError) return { errors: [error] };
    telemetry.logger.error({ err: errorSummary(error as Error) }, 'fast path failed');
    return {
      errors: [new GraphQLError(INTERNAL_MESSAGE, { extensions: { code: 'INTERNAL_SERVER_ERROR' } })],
    };
  }
}

/** Writes a finished result: a bare success as its JSON, anything with errors through Yoga's encoder. */
async function write(
  yoga: GatewayYoga,
  res: ServerResponse,
  result: ExecutionResult,
  common: Record<string, string>,
): Promise<void> {
  if (!result.errors) {
    // No errors, no internals to strip: the common case skips the Response object entirely.
    const stringify = (result as { stringify?: (r: unknown) => string }).stringify ?? JSON.stringify;
    const text = stringify(result);
    res.writeHead(200, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(text),
      ...common,
    });
    res.end(text);
    return;
  }
  const response = await processRegularResult(result as never, yoga.fetchAPI, 'application/json');
  const text = await response.text();
  if (res.destroyed) return;
  res.writeHead(response.status, {
    ...Object.fromEntries(response.headers),
    'content-length': Buffer.byteLength(text),
    ...common,
  });
  res.end(text);
}

/** One fast-path request, traced from start to close, answered as answer.ts finishes every answer. */
async function answer(
  yoga: GatewayYoga,
  { telemetry, cors, prepared }: Pick<ListenerOptions, 'telemetry' | 'cors' | 'prepared'>,
  {
    req,
    res,
    params,
    hot,
  }: { req: IncomingMessage; res: ServerResponse; params: GraphQLParams; hot: PreparedRequest | null },
): Promise<void> {
  const headers = headersOf(req);
  const trace = startTrace(headers.get);
  // The caller's disconnect cancels its upstream calls, as on Yoga's path, and is logged as 499.
  const cancel = new Cancellation();
  res.once('close', () => {
    if (res.writableFinished) finishTrace(telemetry, trace, res.statusCode);
    else {
      cancel.abort(new Error('client disconnected'));
      finishTrace(telemetry, trace, 499);
    }
  });
  const request = { headers, signal: cancel };
  attachTrace(request, trace);
  const result = finishResult(
    trace,
    await run(yoga, { telemetry, prepared }, { request, params, hot }, { req, res }),
  );
  if (res.destroyed) return;
  const common = {
    ...cors.headers(headers.get('origin'), trace.requestId),
    'cache-control': DEFAULT_CACHE_CONTROL,
  };
  await write(yoga, res, result, addChargeHeaders(common, trace));
}

/** The last resort: an answer that failed is logged, and the client gets a masked 500 (or a cut). */
function failed(telemetry: Telemetry, cors: CorsPolicy, req: IncomingMessage, res: ServerResponse) {
  return (error: Error) => {
    telemetry.logger.error({ err: errorSummary(error) }, 'answer failed');
    // Once headers are out, a body can no longer be replaced: the connection is cut instead.
    if (res.headersSent) {
      res.destroy();
      return;
    }
    res.writeHead(500, {
      ...cors.headers(req.headers.origin, undefined),
      'content-type': 'application/json; charset=utf-8',
      'cache-control': DEFAULT_CACHE_CONTROL,
    });
    res.end(
      JSON.stringify({
        errors: [{ message: INTERNAL_MESSAGE, extensions: { code: 'INTERNAL_SERVER_ERROR' } }],
      }),
    );
  };
}

/**
 * A subscription GET (`?query=…`, what an EventSource sends): its parameters, or null when Yoga
 * should answer it (no subscription in it, extensions, variables that are not a JSON object).
 */
function subscriptionGet(req: IncomingMessage): StreamParams | null {
  // Parsed after a fixed origin, so that a path such as `//%zz` can never be read as a host.
  let url: URL;
  try {
    url = new URL(`http://gateway${req.url ?? '/'}`);
  } catch {
    return null;
  }
  if (url.pathname !== '/graphql' || url.searchParams.has('extensions')) return null;
  const query = url.searchParams.get('query');
  if (!query || !/\bsubscription\b/.test(query)) return null;
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
  maxBodyBytes: number;
  telemetry: Telemetry;
  cors: CorsPolicy;
  /** Every subscription stream the adapter writes itself (sse.ts). */
  streams: EventStreams;
  /**
   * Off when only persisted operations may run: documents sent as text then go to Yoga (which
   * refuses them), and only the prepared requests of hot manifest entries run here.
   */
  fastPath: boolean;
  /** Hot operations' prepared requests, and the context each request runs with. */
  prepared: PreparedPath;
}

export function createRequestListener(yoga: GatewayYoga, options: ListenerOptions): RequestListener {
  const { maxBodyBytes, telemetry, cors, streams, fastPath, prepared } = options;
  const subscription = (
    req: IncomingMessage,
    res: ServerResponse,
    params: StreamParams,
    body: Buffer | null,
  ) =>
    serveSubscription({ yoga, telemetry, cors, streams, req, res, params }).then((served) => {
      if (served) return;
      if (body) return toYoga(yoga, req, res, body);
      yoga(req, res);
    });
  /**
   * Where a JSON POST goes. An event stream is never answered as JSON: a subscription's is written
   * here, anything else (a query asked for as an event stream) by Yoga. A document named by id runs
   * here only as a prepared request: Yoga resolves, proves, registers and refuses ids. A document
   * sent as text runs here unless only persisted operations may run, or its text asks for a stream
   * (a prepared request is a query's, never a stream).
   */
  const route = (req: IncomingMessage, res: ServerResponse, sent: SentParams, body: Buffer) => {
    const named = sent.query === undefined || namesDocument(sent);
    if (wantsEventStream(req)) {
      return fastPath && !named && /\bsubscription\b/.test(sent.query as string)
        ? subscription(req, res, sent as GraphQLParams, body)
        : toYoga(yoga, req, res, body);
    }
    if (named) {
      const text = sent.query === undefined ? prepared.named(sent) : null;
      const hot = text === null ? null : prepared.documents.preparedRequest(text, sent.operationName);
      return hot && text !== null
        ? answer(yoga, options, { req, res, params: { ...sent, query: text }, hot })
        : toYoga(yoga, req, res, body);
    }
    if (!fastPath) return toYoga(yoga, req, res, body);
    const params = sent as GraphQLParams;
    const hot = prepared.documents.preparedRequest(params.query, params.operationName);
    return hot || !STREAMING.test(params.query)
      ? answer(yoga, options, { req, res, params, hot })
      : toYoga(yoga, req, res, body);
  };
  return (req, res) => {
    telemetry.metrics.inFlight.inc();
    res.once('close', () => telemetry.metrics.inFlight.dec());
    const get = fastPath && req.method === 'GET' && wantsEventStream(req) ? subscriptionGet(req) : null;
    if (get) {
      subscription(req, res, get, null).catch(failed(telemetry, cors, req, res));
      return;
    }
    if (!eligible(req, maxBodyBytes)) {
      yoga(req, res);
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('error', () => res.destroy());
    req.on('end', () => {
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
      handled.catch(failed(telemetry, cors, req, res));
    });
  };
}
