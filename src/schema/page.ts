import type { ArgBuilder, ObjectRef } from '@pothos/core';
import { GraphQLError, type ValidationRule } from 'graphql';
import type { Page, PageArgs, PageInfo } from '../upstream/models.js';
import { builder, type Types, UPSTREAM_COST } from './builder.js';
import type { Context } from './context.js';
import { atLeast, between, cursorText } from './rules.js';

/**
 * One definition of paging for every paged field: the arguments (`page`, `pageSize`, `cursor`, and
 * Relay's names `first` and `after`), their limits, the page type (`nodes`, `edges`, `pageInfo`)
 * and the opaque cursors (cursors.ts) handed out and taken back.
 */

/** Every paged field's page size: 20 unless asked, at most 100 (upstream-api.md §8). */
export const PAGE_SIZE = { default: 20, max: 100 } as const;

/**
 * How one list pages by cursor: a cursor carries the upstream's key of the last node seen
 * (upstream-api.md 4.3), so the gateway builds it from a node, under the list's name.
 */
export interface CursorRule<T> {
  /** The list's name in its cursors: a cursor of another list is refused. */
  list: string;
  /** The node's key, or null when the upstream did not send it. */
  key(node: T): string | null;
  /** What one node of the list is called, in the cursor arguments' descriptions. */
  item: string;
}

type PageInfoShape = PageInfo & { startCursor: string | null; endCursor: string | null };

export const PageInfoRef = builder.objectRef<PageInfoShape>('PageInfo').implement({
  description:
    'Where a page lies in the whole list. Page by number (`page`) or by cursor: pass `endCursor` as the list’s `cursor` (or `after`) argument for the page after this one.',
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
      description: 'The opaque cursor of the first node on this page; null when the page is empty.',
    }),
    endCursor: t.exposeString('endCursor', {
      nullable: true,
      description:
        'The opaque cursor of the last node on this page: pass it as `cursor` (or `after`) for the next page. Null when the page is empty.',
    }),
  }),
});

/** A node's cursor in its list; null when the upstream sent no key for it. */
const cursorOf = <T>(rule: CursorRule<T>, node: T | undefined, ctx: Context): string | null => {
  const key = node === undefined ? null : rule.key(node);
  return key === null ? null : ctx.cursors.encode(rule.list, key);
};

/**
 * `<Name>Page { nodes, edges { cursor node }, pageInfo }` for a node type whose list pages by
 * `cursor`: `nodes` for a page as it is, `edges` for Relay's and Apollo Client's pagination.
 */
export function pageOf<T>(node: ObjectRef<Types, T>, name: string, what: string, rule: CursorRule<T>) {
  const EdgeRef = builder.objectRef<{ node: T; cursor: string }>(`${name}Edge`).implement({
    description: `One of the ${what} on a page, with its cursor.`,
    fields: (t) => ({
      cursor: t.exposeString('cursor', {
        description: 'The opaque cursor of this node: pass it as `after` for the page after it.',
      }),
      node: t.expose('node', { type: node as ObjectRef<Types, unknown>, description: 'The node itself.' }),
    }),
  });
  return builder.objectRef<Page<T>>(`${name}Page`).implement({
    description: `One page of ${what}.`,
    fields: (t) => ({
      nodes: t.field({
        type: [node],
        cacheScope: 'parent',
        description: `The ${what} on this page.`,
        complexity: { field: 1, multiplier: 1 },
        resolve: (p) => p.nodes,
      }),
      edges: t.field({
        type: [EdgeRef],
        cacheScope: 'parent',
        description: `The ${what} on this page with their cursors (Relay's connection edges). A node whose upstream sent no key has no cursor, and no edge.`,
        complexity: { field: 1, multiplier: 1 },
        resolve: (p, _args, ctx) =>
          p.nodes.flatMap((each) => {
            const cursor = cursorOf(rule, each, ctx);
            return cursor === null ? [] : [{ node: each, cursor }];
          }),
      }),
      pageInfo: t.field({
        type: PageInfoRef,
        cacheScope: 'parent',
        description: 'Where this page lies in the whole list, with the cursors of its ends.',
        resolve: (p, _args, ctx) => ({
          ...p.pageInfo,
          startCursor: cursorOf(rule, p.nodes[0], ctx),
          endCursor: cursorOf(rule, p.nodes[p.nodes.length - 1], ctx),
        }),
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
 * The paging arguments of every paged field, with their rules: `page` from 1, `pageSize` (or
 * Relay's `first`) 1 to 100, and `cursor` (or Relay's `after`), a cursor of this list.
 */
export const pagingArgs = (arg: ArgBuilder<Types>, rule: CursorRule<never>) => ({
  page: arg.int({ defaultValue: 1, description: 'Page number, from 1.', validate: atLeast('page', 1) }),
  pageSize: arg.int({
    defaultValue: PAGE_SIZE.default,
    description: `Items per page, 1 to ${PAGE_SIZE.max}.`,
    validate: between('pageSize', 1, PAGE_SIZE.max),
  }),
  cursor: arg.string({
    description: `Continue after this ${rule.item}: a PageInfo.endCursor or an edge’s cursor. Takes priority over page.`,
    validate: cursorText('cursor'),
  }),
  first: arg.int({
    description: `Relay's name for pageSize (not both): items per page, 1 to ${PAGE_SIZE.max}.`,
    validate: between('first', 1, PAGE_SIZE.max),
  }),
  after: arg.string({
    description: "Relay's name for cursor (not both): continue after this cursor.",
    validate: cursorText('after'),
  }),
});

interface PagingArgs {
  page?: number | null;
  pageSize?: number | null;
  cursor?: string | null;
  first?: number | null;
  after?: string | null;
}

/**
 * The page a paged field's (validated) arguments ask for, its cursor decoded to the upstream's key:
 * BAD_USER_INPUT, before any upstream call, for a cursor this list did not hand out.
 */
export function pageRequest(
  args: PagingArgs,
  ctx: Context,
  rule: CursorRule<never>,
): PageArgs & { cursorArgument: 'after' | 'cursor' } {
  const [given, cursorArgument] =
    args.after != null ? [args.after, 'after' as const] : [args.cursor ?? null, 'cursor' as const];
  return {
    page: args.page ?? 1,
    pageSize: pageSizeOf(args),
    cursor: given === null ? null : ctx.cursors.decode(rule.list, given, cursorArgument),
    cursorArgument,
  };
}

/** Items per page, in either spelling. */
const pageSizeOf = (args: { pageSize?: number | null; first?: number | null }) =>
  args.first ?? args.pageSize ?? PAGE_SIZE.default;

/** The cost of a paged field: one upstream call, then each of up to pageSize (or first) nodes. */
export const pagedCost = (args: { pageSize?: number | null; first?: number | null }) => ({
  field: UPSTREAM_COST,
  multiplier: Math.min(Math.max(pageSizeOf(args), 1), PAGE_SIZE.max),
});

/** Each of Relay's names beside ours: a field may be given one of a pair, never both. */
const SPELLINGS = [
  ['first', 'pageSize'],
  ['after', 'cursor'],
] as const;

/**
 * A document rule: a field given both `first` and `pageSize`, or both `after` and `cursor`, is
 * refused at validation (BAD_USER_INPUT naming the Relay spelling), before anything runs.
 */
export const oneSpellingPerArgument: ValidationRule = (context) => ({
  Field(node) {
    const given = new Set((node.arguments ?? []).map((a) => a.name.value));
    for (const [relay, ours] of SPELLINGS) {
      if (!given.has(relay) || !given.has(ours)) continue;
      context.reportError(
        new GraphQLError(`${node.name.value} takes ${relay} or ${ours}, not both.`, {
          nodes: node,
          extensions: { code: 'BAD_USER_INPUT', argument: relay },
        }),
      );
    }
  },
});
