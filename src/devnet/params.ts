import { HttpError } from './http.js';

export const PAGINATION_PARAMS = ['pagination.page', 'pagination.page_size', 'pagination.cursor'] as const;
export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;
const MAX_CURSOR_LENGTH = 128;
const INT32_MAX = 2_147_483_647;

/** Rejects parameters the endpoint does not know and any parameter given twice. */
export function allowOnly(query: URLSearchParams, allowed: readonly string[]): void {
  const seen = new Set<string>();
  for (const name of query.keys()) {
    if (!allowed.includes(name)) throw new HttpError(400, `unknown query parameter: ${name.slice(0, 64)}`);
    if (seen.has(name)) throw new HttpError(400, `query parameter given more than once: ${name}`);
    seen.add(name);
  }
}

export function requiredParam(query: URLSearchParams, name: string): string {
  const value = query.get(name);
  if (value === null || value === '') throw new HttpError(400, `query parameter ${name} is required`);
  if (value.includes('\0')) throw new HttpError(400, `query parameter ${name} contains a null byte`);
  if (value.length > 256) throw new HttpError(400, `query parameter ${name} is longer than 256 characters`);
  return value;
}

function int32Param(query: URLSearchParams, name: string, fallback: number): number {
  const raw = query.get(name);
  if (raw === null) return fallback;
  if (!/^\d{1,10}$/.test(raw) || Number(raw) > INT32_MAX) {
    throw new HttpError(400, `${name} must be a non-negative 32-bit integer`);
  }
  return Number(raw);
}

export interface PageRequest {
  page: number;
  pageSize: number;
  cursor: string | null;
}

export function pageRequest(query: URLSearchParams): PageRequest {
  const page = int32Param(query, 'pagination.page', 1);
  const pageSize = int32Param(query, 'pagination.page_size', DEFAULT_PAGE_SIZE);
  if (page < 1) throw new HttpError(400, 'pagination.page starts at 1');
  if (pageSize < 1 || pageSize > MAX_PAGE_SIZE) {
    throw new HttpError(400, `pagination.page_size must be between 1 and ${MAX_PAGE_SIZE}`);
  }
  const cursor = query.get('pagination.cursor');
  if (cursor !== null && (cursor === '' || cursor.length > MAX_CURSOR_LENGTH || cursor.includes('\0'))) {
    throw new HttpError(400, 'pagination.cursor is malformed');
  }
  return { page, pageSize, cursor };
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
