import type { ArgBuilder, ObjectRef } from '@pothos/core';
import type { Page, PageInfo } from '../upstream/models.js';
import { builder, type Types } from './builder.js';

export const PageInfoRef = builder.objectRef<PageInfo>('PageInfo').implement({
  description: 'Where a page lies in the whole list.',
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
  }),
});

/** `<Name>Page { nodes: [Name!]!, pageInfo: PageInfo! }` for a node type. */
export function pageOf<T>(node: ObjectRef<Types, T>, name: string, what: string) {
  return builder.objectRef<Page<T>>(`${name}Page`).implement({
    description: `One page of ${what}.`,
    fields: (t) => ({
      nodes: t.field({
        type: [node],
        description: `The ${what} on this page.`,
        complexity: { field: 1, multiplier: 1 },
        resolve: (p) => p.nodes,
      }),
      pageInfo: t.field({
        type: PageInfoRef,
        description: 'Where this page lies in the whole list.',
        resolve: (p) => p.pageInfo,
      }),
    }),
  });
}

/** Slices a list the gateway holds whole (the validator list) into a page shaped like the upstreams’. */
export function slicePage<T>(items: readonly T[], page: number, pageSize: number): Page<T> {
  const start = (page - 1) * pageSize;
  const totalPages = Math.ceil(items.length / pageSize);
  return {
    nodes: items.slice(start, start + pageSize),
    pageInfo: {
      page,
      pageSize,
      total: String(items.length),
      totalPages,
      hasPreviousPage: page > 1,
      hasNextPage: page < totalPages,
    },
  };
}

/** The page arguments shared by every paged root field. */
export const pageArgFields = (arg: ArgBuilder<Types>) => ({
  page: arg.int({ defaultValue: 1, description: 'Page number, from 1.' }),
  pageSize: arg.int({ defaultValue: 20, description: 'Items per page, 1 to 100.' }),
});
