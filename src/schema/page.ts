import type { ArgBuilder, ObjectRef } from '@pothos/core';
import { decodeAddress } from '../lib/address.js';
import type { Page, PageArgs, PageInfo } from '../upstream/models.js';
import { builder, type Types, UPSTREAM_COST } from './builder.js';
import { atLeast, between, cursor as cursorRule } from './rules.js';

/** Every paged field's page size: 20 unless asked, at most 100 (upstream-api.md §8). */
export const PAGE_SIZE = { default: 20, max: 100 } as const;

/**
 * How one list pages by cursor: a cursor is the key of the last node seen (upstream-api.md 4.3),
 * so the gateway builds it from a node, and checks the form of one a caller sends back before any
 * upstream call.
 */
export interface CursorRule<T> {
  /** The node's key, or null when the upstream did not send it. */
  key(node: T): string | null;
  /** Whether a caller's cursor has the form of a key of this list. */
  accepts(cursor: string): boolean;
  /** The form, for the error message: "a validator operator address". */
  form: string;
  /** The `cursor` argument's description: what the cursor names. */
  description: string;
}

/** A key that is an address (validators, delegations by validator): either encoding. */
export const addressCursor = <T>(key: (node: T) => string, description: string): CursorRule<T> => ({
  key,
  accepts: (cursor) => decodeAddress(cursor) !== null,
  form: 'a validator address (0x… or bech32)',
  description,
});

type PageInfoShape = PageInfo & { startCursor: string | null; endCursor: string | null };

export const PageInfoRef = builder.objectRef<PageInfoShape>('PageInfo').implement({
  description:
    'Where a page lies in the whole list. Page by number (`page`) or by cursor: pass `endCursor` as the list’s `cursor` argument for the page after this one.',
  fields: (t) => ({
    page: t.exposeInt('page', { description: 'This page’s number, from 1.' }),
    pageSize: t.exposeInt('pageSize', { description: 'Items per page.' }),
    total: t.expose('total', {
      type: 'BigInt',
      description: 'Items in the whole list, exactly as the upstream counted them.',
    }),
    totalPages: t.exposeInt('totalPages', { description: 'Pages in the whole list at this page size.' }),
    hasPreviousPage: t.exposeBoolean('hasPreviousPage', {
      description: 'Whether a page comes before this one.',
    }),
    hasNextPage: t.exposeBoolean('hasNextPage', { description: 'Whether a page comes after this one.' }),
    startCursor: t.exposeString('startCursor', {
      nullable: true,
      description: 'The cursor of the first node on this page; null when the page is empty.',
    }),
    endCursor: t.exposeString('endCursor', {
      nullable: true,
      description:
        'The cursor of the last node on this page: pass it as `cursor` for the next page. Null when the page is empty.',
    }),
  }),
});

/** `<Name>Page { nodes: [Name!]!, pageInfo: PageInfo! }` for a node type whose list pages by `cursor`. */
export function pageOf<T>(node: ObjectRef<Types, T>, name: string, what: string, cursor: CursorRule<T>) {
  return builder.objectRef<Page<T>>(`${name}Page`).implement({
    description: `One page of ${what}.`,
    fields: (t) => ({
      nodes: t.field({
        cacheScope: 'parent',
        type: [node],
        description: `The ${what} on this page.`,
        complexity: { field: 1, multiplier: 1 },
        resolve: (p) => p.nodes,
      }),
      pageInfo: t.field({
        cacheScope: 'parent',
        type: PageInfoRef,
        description: 'Where this page lies in the whole list, with the cursors of its ends.',
        resolve: (p) => {
          const first = p.nodes[0];
          const last = p.nodes[p.nodes.length - 1];
          return {
            ...p.pageInfo,
            startCursor: first === undefined ? null : cursor.key(first),
            endCursor: last === undefined ? null : cursor.key(last),
          };
        },
      }),
    }),
  });
}

/**
 * A page of a list the gateway holds whole (the validator list), shaped like the upstreams’:
 * `pageSize` items from index `start` (page n starts at (n - 1) × pageSize; a cursor right after
 * its node). `page` is the page holding the first item.
 */
export function slicePage<T>(items: readonly T[], start: number, pageSize: number): Page<T> {
  return {
    nodes: items.slice(start, start + pageSize),
    pageInfo: {
      page: Math.floor(start / pageSize) + 1,
      pageSize,
      total: String(items.length),
      totalPages: Math.ceil(items.length / pageSize),
      hasPreviousPage: start > 0,
      hasNextPage: start + pageSize < items.length,
    },
  };
}

/**
 * The paging arguments of every paged field, with their rules: `page` from 1, `pageSize` 1 to 100,
 * and `cursor` of the list's own form (checked before any upstream call).
 */
export const pagingArgs = (arg: ArgBuilder<Types>, cursor: CursorRule<never>) => ({
  page: arg.int({ defaultValue: 1, description: 'Page number, from 1.', validate: atLeast('page', 1) }),
  pageSize: arg.int({
    defaultValue: PAGE_SIZE.default,
    description: `Items per page, 1 to ${PAGE_SIZE.max}.`,
    validate: between('pageSize', 1, PAGE_SIZE.max),
  }),
  cursor: arg.string({ description: cursor.description, validate: cursorRule(cursor.accepts, cursor.form) }),
});

/** The page a paged field's (validated) arguments ask for. */
export const pageRequest = (args: {
  page?: number | null;
  pageSize?: number | null;
  cursor?: string | null;
}): PageArgs => ({
  page: args.page ?? 1,
  pageSize: args.pageSize ?? PAGE_SIZE.default,
  cursor: args.cursor ?? null,
});

/** The cost of a paged field: one upstream call, then each of up to pageSize nodes. */
export const pagedCost = (args: { pageSize?: number | null }) => ({
  field: UPSTREAM_COST,
  multiplier: Math.min(Math.max(args.pageSize ?? PAGE_SIZE.default, 1), PAGE_SIZE.max),
});
