import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { useGatewayOnDevnet } from './helpers.js';

/**
 * Every paged list walked whole three times, by page number, by the cursors PageInfo hands out and
 * by Relay's `first`/`after` over edges, must give the same nodes in the same order; a cursor that
 * is not one of the list's (made up, another list's, or of the right form with a signature the
 * gateway did not make) is refused before any upstream call.
 */

const env = useGatewayOnDevnet();

interface List {
  name: string;
  /** The field with its arguments but the paging ones, e.g. `delegations(delegatorAddress: "…"`. */
  field: () => string;
  /** The node's key, selected as `key`. */
  key: string;
  /** A cursor of the wrong form for this list. */
  malformed: string;
}

const richest = () =>
  [...env.devnet.data.delegations].reduce((best, entry) =>
    entry[1].length > best[1].length ? entry : best,
  )[0];

const LISTS: List[] = [
  {
    name: 'validators',
    field: () => 'validators(',
    key: 'key: operatorAddress',
    malformed: 'not-an-address',
  },
  {
    name: 'delegations',
    field: () => `delegations(delegatorAddress: "${richest()}",`,
    key: 'key: validatorAddress',
    malformed: 'biyavaloper1notbech32',
  },
  {
    name: 'contractsBySymbol',
    field: () => 'contractsBySymbol(symbol: "USDT",',
    key: 'key: address',
    malformed: '0x1234',
  },
  { name: 'failedTransactions', field: () => 'failedTransactions(', key: 'key: txNumber', malformed: '12:x' },
];

interface PageAnswer {
  nodes: { key: unknown }[];
  edges: { cursor: string; node: { key: unknown } }[];
  pageInfo: { hasNextPage: boolean; startCursor: string | null; endCursor: string | null };
}

async function fetchPage(list: List, paging: string): Promise<PageAnswer> {
  const res = await env.gql(
    `{ ${list.field()} ${paging}) { nodes { ${list.key} } edges { cursor node { ${list.key} } } pageInfo { hasNextPage startCursor endCursor } } }`,
    { token: env.devnet.token },
  );
  expect(res.errors).toBeUndefined();
  return res.data?.[list.name] as PageAnswer;
}

describe.each(LISTS)('$name', (list) => {
  it('gives the same nodes paged by number and by cursor', async () => {
    const pageSize = 7;
    const byPage: unknown[] = [];
    for (let page = 1; ; page++) {
      const answer = await fetchPage(list, `page: ${page}, pageSize: ${pageSize}`);
      byPage.push(...answer.nodes.map((n) => n.key));
      if (!answer.pageInfo.hasNextPage) break;
    }
    const byCursor: unknown[] = [];
    let cursor: string | null = null;
    for (;;) {
      const answer = await fetchPage(
        list,
        `pageSize: ${pageSize}${cursor === null ? '' : `, cursor: ${JSON.stringify(cursor)}`}`,
      );
      byCursor.push(...answer.nodes.map((n) => n.key));
      // The page's ends are its first and last edges; each edge is its node's.
      expect(answer.edges.map((e) => e.node.key)).toEqual(answer.nodes.map((n) => n.key));
      expect(answer.pageInfo.startCursor).toBe(answer.edges[0]?.cursor);
      expect(answer.pageInfo.endCursor).toBe(answer.edges.at(-1)?.cursor);
      // Opaque: not the upstream's key itself.
      expect(answer.pageInfo.endCursor).not.toBe(String(answer.nodes.at(-1)?.key));
      if (!answer.pageInfo.hasNextPage) break;
      cursor = answer.pageInfo.endCursor;
    }
    const byRelay: unknown[] = [];
    let after: string | null = null;
    for (;;) {
      const answer = await fetchPage(
        list,
        `first: ${pageSize}${after === null ? '' : `, after: ${JSON.stringify(after)}`}`,
      );
      byRelay.push(...answer.edges.map((e) => e.node.key));
      if (!answer.pageInfo.hasNextPage) break;
      after = answer.edges.at(-1)?.cursor ?? null;
    }
    expect(byPage.length).toBeGreaterThan(pageSize);
    expect(byCursor).toEqual(byPage);
    expect(byRelay).toEqual(byPage);
    expect(new Set(byPage).size).toBe(byPage.length);
  });

  it('refuses another list’s cursor, and Relay’s names beside ours, before any upstream call', async () => {
    const other = LISTS.find((l) => l.name !== list.name) as List;
    const foreign = (await fetchPage(other, 'pageSize: 1')).pageInfo.endCursor;
    env.devnet.resetRecords();
    const res = await env.gql(
      `{ ${list.field()} after: ${JSON.stringify(foreign)}) { nodes { ${list.key} } } }`,
      {
        token: env.devnet.token,
      },
    );
    expect(res.errors?.[0]?.extensions).toEqual({ code: 'BAD_USER_INPUT', argument: 'after' });
    const both = await env.gql(`{ ${list.field()} first: 2, pageSize: 2) { nodes { ${list.key} } } }`, {
      token: env.devnet.token,
    });
    expect(both.errors?.[0]?.extensions).toEqual({ code: 'BAD_USER_INPUT', argument: 'first' });
    expect(env.devnet.requests).toHaveLength(0);
  });

  it('refuses a cursor of the right form whose signature the gateway did not make, before any upstream call', async () => {
    const page = await fetchPage(list, 'pageSize: 3');
    const genuine = page.pageInfo.endCursor as string;
    const [version, body, signature] = genuine.split('.') as [string, string, string];
    const firstBody = String(page.edges[0]?.cursor).split('.')[1];
    const payload = Buffer.from(body, 'base64url').toString('utf8');
    const forgeries = [
      // The list's own payload, signed with a secret other than the gateway's.
      `${version}.${body}.${createHmac('sha256', 'not-the-gateway-secret').update(payload).digest('base64url').slice(0, 16)}`,
      // Another node's payload (the page's first) under this cursor's genuine signature.
      `${version}.${firstBody}.${signature}`,
    ];
    for (const forged of forgeries) {
      // Only the signature is wrong: the form is a cursor's.
      expect(forged).not.toBe(genuine);
      expect(forged).toMatch(/^c1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{16}$/);
      env.devnet.resetRecords();
      const res = await env.gql(
        `{ ${list.field()} pageSize: 3, cursor: ${JSON.stringify(forged)}) { nodes { ${list.key} } } }`,
        { token: env.devnet.token },
      );
      expect(res.data?.[list.name]).toBeNull();
      expect(res.errors?.[0]?.extensions).toEqual({ code: 'BAD_USER_INPUT', argument: 'cursor' });
      expect(env.devnet.requests).toHaveLength(0);
    }
    // The re-signed one differs from the genuine cursor in its signature's 16 characters alone.
    expect(forgeries[0]).toHaveLength(genuine.length);
    expect(forgeries[0]?.slice(0, -16)).toBe(genuine.slice(0, -16));
    // The genuine cursor, sent back, continues after the page's last node: the forgeries differed in
    // their signatures alone.
    const six = await fetchPage(list, 'pageSize: 6');
    const next = await fetchPage(list, `pageSize: 3, cursor: ${JSON.stringify(genuine)}`);
    expect(next.nodes.map((n) => n.key)).toEqual(six.nodes.slice(3).map((n) => n.key));
  });

  it('refuses a cursor of the wrong form before any upstream call', async () => {
    const res = await env.gql(
      `{ ${list.field()} cursor: ${JSON.stringify(list.malformed)}) { nodes { ${list.key} } } }`,
      { token: env.devnet.token },
    );
    expect(res.data?.[list.name]).toBeNull();
    expect(res.errors?.[0]?.extensions).toEqual({ code: 'BAD_USER_INPUT', argument: 'cursor' });
    expect(env.devnet.requests).toHaveLength(0);
  });
});
