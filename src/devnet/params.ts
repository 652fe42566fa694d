import { INT32_MAX } from '../lib/decimal.js';
import { HttpError } from './http.js';

/**
 * Query parameters as a handler reads them: by their spec (upstream-api.md) names. The dialect
 * decides which spellings reach each name and whether unknown parameters are an error
 * (dialect.ts); a plain URLSearchParams is the spec's exact reading.
 */
export interface Params {
  get(name: string): string | null;
}

export const PAGINATION_PARAMS = ['pagination.page', 'pagination.page_size', 'pagination.cursor'] as const;
/** The validator list's top-level paging, as the production exporter spells it; it wins over `pagination.*`. */
export const TOP_LEVEL_PAGE_PARAMS = ['page', 'pageSize'] as const;
const DEFAULT_PAGE_SIZE = 20;
const MAX_PAGE_SIZE = 100;
const MAX_CURSOR_LENGTH = 128;

/** Rejects parameters the endpoint does not know and any parameter given twice. */
export function allowOnly(query: URLSearchParams, allowed: readonly string[]): void {
  const seen = new Set<string>();
  for (const name of query.keys()) {
    if (!allowed.includes(name)) throw new HttpError(400, `unknown query parameter: ${name.slice(0, 64)}`);
    if (seen.has(name)) throw new HttpError(400, `query parameter given more than once: ${name}`);
    seen.add(name);
  }
}

export function requiredParam(query: Params, name: string): string {
  const value = query.get(name);
  if (value === null || value === '') throw new HttpError(400, `query parameter ${name} is required`);
  if (value.includes('\0')) throw new HttpError(400, `query parameter ${name} contains a null byte`);
  if (value.length > 256) throw new HttpError(400, `query parameter ${name} is longer than 256 characters`);
  return value;
}

/** The first of `names` that is given, read as a non-negative 32-bit integer; null when none is. */
function firstInt32(query: Params, names: readonly string[]): { name: string; value: number } | null {
  for (const name of names) {
    const raw = query.get(name);
    if (raw === null) continue;
    if (!/^\d{1,10}$/.test(raw) || Number(raw) > INT32_MAX) {
      throw new HttpError(400, `${name} must be a non-negative 32-bit integer`);
    }
    return { name, value: Number(raw) };
  }
  return null;
}

export interface PageRequest {
  page: number;
  pageSize: number;
  cursor: string | null;
}

/** `topLevel`: also read TOP_LEVEL_PAGE_PARAMS, which take priority over their `pagination.*` twins. */
export function pageRequest(query: Params, options: { topLevel?: boolean } = {}): PageRequest {
  const [pageName, sizeName] = TOP_LEVEL_PAGE_PARAMS;
  const top = (name: string) => (options.topLevel ? [name] : []);
  const page = firstInt32(query, [...top(pageName), 'pagination.page']) ?? { name: 'page', value: 1 };
  const pageSize = firstInt32(query, [...top(sizeName), 'pagination.page_size']) ?? {
    name: 'page_size',
    value: DEFAULT_PAGE_SIZE,
  };
  if (page.value < 1) throw new HttpError(400, `${page.name} starts at 1`);
  if (pageSize.value < 1 || pageSize.value > MAX_PAGE_SIZE) {
    throw new HttpError(400, `${pageSize.name} must be between 1 and ${MAX_PAGE_SIZE}`);
  }
  const cursor = query.get('pagination.cursor');
  if (cursor !== null && (cursor === '' || cursor.length > MAX_CURSOR_LENGTH || cursor.includes('\0'))) {
    throw new HttpError(400, 'pagination.cursor is malformed');
  }
  return { page: page.value, pageSize: pageSize.value, cursor };
}

export interface PaginationRecord {
  page: number;
  page_size: number;
  total: string;
  total_pages: number;
  has_prev: boolean;
  has_next: boolean;
}

/**
 * One page of `items`. Without a cursor the page starts at (page - 1) * pageSize; with one, it starts
 * at `cursorStart(cursor)`, the first item after the cursor (the cursor takes priority over page).
 * Either way the pagination object describes where the page lies in the whole list.
 */
export function paginate<T>(
  items: readonly T[],
  request: PageRequest,
  cursorStart: (cursor: string) => number,
): { items: T[]; pagination: PaginationRecord } {
  const { pageSize } = request;
  const offset = request.cursor === null ? (request.page - 1) * pageSize : cursorStart(request.cursor);
  const totalPages = Math.ceil(items.length / pageSize);
  return {
    items: items.slice(offset, offset + pageSize),
    pagination: {
      page: Math.floor(offset / pageSize) + 1,
      page_size: pageSize,
      total: String(items.length),
      total_pages: totalPages,
      has_prev: offset > 0,
      has_next: offset + pageSize < items.length,
    },
  };
}

/** Index of the first item whose key is greater than `cursor`, in a list sorted by that key. */
export function afterKey<T>(items: readonly T[], key: (item: T) => string, cursor: string): number {
  let lo = 0;
  let hi = items.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (key(items[mid] as T) <= cursor) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
