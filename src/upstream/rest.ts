import { type ErrorCode, UpstreamError, type UpstreamName } from '../errors.js';
import { bool, field, int, int64, type Obj, obj, ShapeError } from './decode.js';
import type { QueryValue } from './http.js';
import type { PageArgs, PageInfo } from './models.js';

/** REST conventions shared by the explorer and staking services, in both dialects. */

/**
 * The pagination query parameters as contract.md names them. go-kratos binds either spelling of a
 * field, so the snake_case names reach both dialects.
 */
export function pageQuery(args: PageArgs): Record<string, QueryValue> {
  return {
    'pagination.page': args.page,
    'pagination.page_size': args.pageSize,
    'pagination.cursor': args.cursor ?? undefined,
  };
}

/**
 * The pagination object (upstream-api.md 2.3, or its protojson form). `total`
 * arrives as a string or a number and is kept as exact text; an explorer that leaves out `hasPrev`
 * or `totalPages` has them derived from what it did send.
 */
export function toPageInfo(value: unknown): PageInfo {
  const p = obj(value, 'pagination');
  const total = int64(p, 'total');
  if (total.startsWith('-')) throw new ShapeError('pagination.total is not a count');
  const page = int(p, 'page');
  const pageSize = int(p, 'pageSize');
  return {
    page,
    pageSize,
    total,
    totalPages:
      field(p, 'totalPages') === undefined
        ? Math.ceil(Number(total) / Math.max(pageSize, 1))
        : int(p, 'totalPages'),
    hasPreviousPage: field(p, 'hasPrev') === undefined ? page > 1 : bool(p, 'hasPrev'),
    hasNextPage: bool(p, 'hasNext'),
  };
}

/** What an envelope `{ code, message, data }` with a failing code means for the caller. */
export type EnvelopeFailure = (code: number) => { code: ErrorCode; message?: string } | undefined;

/**
 * The body inside the explorer's envelope `{ code, message, data }`, which some staking
 * deployments use too. A body without a numeric `code` is taken as bare. A failing code is an
 * UpstreamError (UPSTREAM_ERROR unless `failure` says otherwise); its message stays in the log.
 */
export function unwrapEnvelope(
  upstream: UpstreamName,
  body: Obj,
  successCodes: readonly number[],
  failure?: EnvelopeFailure,
): Obj {
  const code = body.code;
  if (typeof code !== 'number' || !('data' in body || 'message' in body)) return body;
  if (!successCodes.includes(code)) {
    const mapped =
      failure?.(code) ?? (code === 401 || code === 403 ? { code: 'UNAUTHENTICATED' as const } : undefined);
    throw new UpstreamError(
      upstream,
      mapped?.code ?? 'UPSTREAM_ERROR',
      `envelope code ${code}: ${String(body.message).slice(0, 200)}`,
      mapped?.message,
    );
  }
  return obj(body.data, 'data');
}

/**
 * Decodes upstream JSON with `map`, which reads it in either dialect (decode.ts). A body of the
 * wrong shape becomes UPSTREAM_ERROR.
 */
export function decodeBody<T>(upstream: UpstreamName, what: string, body: unknown, map: (o: Obj) => T): T {
  try {
    return map(obj(body, what));
  } catch (error) {
    if (error instanceof ShapeError) {
      throw new UpstreamError(upstream, 'UPSTREAM_ERROR', `${what}: ${error.message}`);
    }
    throw error;
  }
}
