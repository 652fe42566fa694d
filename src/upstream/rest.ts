import { UpstreamError, type UpstreamName } from '../errors.js';
import { bool, int, type Obj, obj, ShapeError, str } from './decode.js';
import type { QueryValue } from './http.js';
import type { PageArgs, PageInfo } from './models.js';

/** REST conventions shared by the explorer and staking services. */

/** The pagination query parameters exactly as upstream-api.md names them. */
export function pageQuery(args: PageArgs): Record<string, QueryValue> {
  return {
    'pagination.page': args.page,
    'pagination.page_size': args.pageSize,
    'pagination.cursor': args.cursor ?? undefined,
  };
}

/** The pagination object of upstream-api.md 2.3. */
export function toPageInfo(value: unknown): PageInfo {
  const p = obj(value, 'pagination');
  const total = str(p, 'total');
  if (!/^\d+$/.test(total)) throw new ShapeError('pagination.total is not a count');
  return {
    page: int(p, 'page'),
    pageSize: int(p, 'page_size'),
    total,
    totalPages: int(p, 'total_pages'),
    hasPreviousPage: bool(p, 'has_prev'),
    hasNextPage: bool(p, 'has_next'),
  };
}

/** Runs a mapping of upstream JSON; a body of the wrong shape becomes UPSTREAM_ERROR. */
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
