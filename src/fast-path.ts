import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { ExecutionResult } from 'graphql';
import { GraphQLError, getOperationAST } from 'graphql';
import { processRegularResult, type YogaServerInstance } from 'graphql-yoga';
import type { Context } from './context.js';
import {
  attachTrace,
  errorSummary,
  finishTrace,
  recordResult,
  startTrace,
  type Telemetry,
} from './telemetry.js';
import { Cancellation } from './upstream/cancellation.js';

/**
 * The node:http listener of the gateway. The common request, a JSON POST to /graphql asking for
 * JSON, runs Yoga's own envelop pipeline (every plugin of the schema, parse and validation
 * caches, limits, error masking) straight from node:http, without building WHATWG Request and
 * Response objects: on a small machine that translation costs more than the GraphQL work. Its
 * answer is shaped by Yoga's own result processor, so both paths answer alike (a test compares
 * them). Everything else (GET, GraphiQL, batches, other media types, health, odd bodies) goes to
 * Yoga unchanged.
 */

interface GraphQLParams {
  query: string;
  variables?: Record<string, unknown> | null;
  operationName?: string | null;
  extensions?: Record<string, unknown> | null;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A plain GraphQL request body that needs nothing beyond execution (no batch, no persisted query). */
function plainParams(body: unknown): GraphQLParams | null {
  if (!isObject(body) || typeof body.query !== 'string') return null;
  const { query, variables, operationName, extensions, ...rest } = body;
  if (Object.keys(rest).length > 0) return null;
  if (variables !== undefined && variables !== null && !isObject(variables)) return null;
  if (operationName !== undefined && operationName !== null && typeof operationName !== 'string') return null;
  if (extensions !== undefined && extensions !== null) return null;
  return body as unknown as GraphQLParams;
}

/** JSON in, JSON out, and a declared length within the cap: the only requests the fast path takes. */
function eligible(req: IncomingMessage, maxBytes: number): boolean {
  if (req.method !== 'POST') return false;
  const q = req.url?.indexOf('?') ?? -1;
  if ((q === -1 ? req.url : req.url?.slice(0, q)) !== '/graphql') return false;
  const type = req.headers['content-type'];
  if (!type || !/^application\/json\s*(;|$)/i.test(type)) return false;
  const accept = req.headers.accept;
  if (accept && accept !== '*/*' && !/^application\/json\s*(;[^,]*)?$/i.test(accept)) return false;
  const length = Number(req.headers['content-length']);
  return Number.isInteger(length) && length > 0 && length <= maxBytes;
}

function headersOf(req: IncomingMessage) {
  return { get: (name: string) => (req.headers[name.toLowerCase()] as string | undefined) ?? null };
}

export function createRequestListener(
  yoga: YogaServerInstance<Record<string, unknown>, Context>,
  maxBodyBytes: number,
  telemetry: Telemetry & { operationLabel: (name: unknown) => string },
  /** Off when only persisted operations may run: the fast path runs any document it is given. */
  fastPath = true,
): RequestListener {
  /** Hands a request whose body was already read to Yoga, as a fetch Request. */
  const toYoga = async (req: IncomingMessage, res: ServerResponse, body: Buffer) => {
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (typeof value === 'string') headers.set(name, value);
    }
    const response = await yoga.fetch(`http://${req.headers.host ?? 'localhost'}${req.url}`, {
      method: 'POST',
      headers,
      body: new Uint8Array(body),
    });
    res.writeHead(response.status, Object.fromEntries(response.headers));
    res.end(Buffer.from(await response.arrayBuffer()));
  };

  const execute = async (req: IncomingMessage, res: ServerResponse, params: GraphQLParams) => {
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
    res.setHeader('x-request-id', trace.requestId);
    const {
      parse,
      validate,
      contextFactory,
      execute: run,
      schema,
    } = yoga.getEnveloped({ request, params, req, res });
    let result: ExecutionResult;
    try {
      const document = parse(params.query);
      trace.operation = telemetry.operationLabel(
        params.operationName ?? getOperationAST(document, params.operationName)?.name?.value,
      );
      const errors = validate(schema, document);
      result =
        errors.length > 0
          ? { errors }
          : ((await run({
              schema,
              document,
              contextValue: await contextFactory(),
              variableValues: params.variables ?? undefined,
              operationName: params.operationName ?? undefined,
            })) as ExecutionResult);
    } catch (error) {
      // Syntax errors arrive coded by the gateway's plugins; anything else is a bug, masked.
      if (error instanceof GraphQLError) result = { errors: [error] };
      else {
        telemetry.logger.error({ err: errorSummary(error as Error) }, 'fast path failed');
        result = {
          errors: [new GraphQLError('Unexpected error.', { extensions: { code: 'INTERNAL_SERVER_ERROR' } })],
        };
      }
    }
    if (res.destroyed) return;
    recordResult(trace, result);
    if (!result.errors) {
      // No errors, no internals to strip: the common case skips the Response object entirely.
      const stringify = (result as { stringify?: (r: unknown) => string }).stringify ?? JSON.stringify;
      const text = stringify(result);
      res.writeHead(200, {
        'content-type': 'application/json; charset=utf-8',
        'content-length': Buffer.byteLength(text),
      });
      res.end(text);
      return;
    }
    const response = await processRegularResult(result as never, yoga.fetchAPI, 'application/json');
    const text = await response.text();
    res.writeHead(response.status, {
      ...Object.fromEntries(response.headers),
      'content-length': Buffer.byteLength(text),
    });
    res.end(text);
  };

  return (req, res) => {
    telemetry.metrics.inFlight.inc();
    res.once('close', () => telemetry.metrics.inFlight.dec());
    if (!fastPath || !eligible(req, maxBodyBytes)) {
      yoga(req, res);
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('error', () => res.destroy());
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      let params: GraphQLParams | null = null;
      try {
        params = plainParams(JSON.parse(body.toString('utf8')));
      } catch {
        params = null;
      }
      const handled = params ? execute(req, res, params) : toYoga(req, res, body);
      handled.catch(() => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json; charset=utf-8' });
        res.end(
          JSON.stringify({
            errors: [{ message: 'Unexpected error.', extensions: { code: 'INTERNAL_SERVER_ERROR' } }],
          }),
        );
      });
    });
  };
}
