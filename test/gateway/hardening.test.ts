import { afterAll, describe, expect, it, vi } from 'vitest';
import { ValidatorTableDocument } from '../../operations/generated/graphql.js';
import { loadConfig } from '../../src/config.js';
import { createGateway, type Gateway } from '../../src/gateway.js';
import { graphql, listen, readAnswer, testSettings, useGatewayOnDevnet } from './helpers.js';

const env = useGatewayOnDevnet();
const extra: Gateway[] = [];
afterAll(async () => {
  await Promise.all(extra.map((g) => g.close()));
});

/** A gateway on the same devnet with other settings (production mode, other limits). */
const gatewayWith = (settings: ReturnType<typeof testSettings>) => {
  const gateway = createGateway({ ...settings, upstreamUrls: env.devnet.urls });
  extra.push(gateway);
  return gateway;
};

const post = (gateway: Gateway, body: string, headers: Record<string, string>) =>
  gateway.yoga.fetch('http://gateway.test/graphql', { method: 'POST', headers, body });

describe('query limits (each refused before any upstream call)', () => {
  const aliases = (n: number) =>
    `{ ${Array.from({ length: n }, (_, i) => `a${i}: searchSuggestions(query: "${i}") { query }`).join(' ')} }`;

  const refusals = [
    { label: '16 aliases', query: aliases(16), message: /aliases/i },
    {
      label: '11 root fields',
      query: `{ ${Array.from({ length: 11 }, (_, i) => `f${i}: __typename`).join(' ')} }`,
      message: /11 root fields; at most 10/,
    },
    {
      label: '11 directives',
      query: `{ validatorStatistics ${'@include(if: true) '.repeat(11)} { timestamp } }`,
      message: /directives/i,
    },
    {
      label: 'over 1000 tokens',
      query: `{ validatorStatistics { ${'timestamp '.repeat(1_000)} } }`,
      message: /token/i,
    },
    {
      label: 'a fan-out of 10 addresses × 100 delegations',
      query:
        '{ searchSuggestions(query: "0x") { addresses { delegations(pageSize: 100) { nodes { shares validator { moniker } } } } } }',
      message: /costs 4\d{3}; at most 3000/,
    },
  ];
  for (const { label, query, message } of refusals) {
    it(`refuses ${label}`, async () => {
      const res = await env.gql(query);
      expect(res.errors?.[0]?.message).toMatch(message);
      expect(res.errors?.[0]?.extensions.code).toBe('BAD_USER_INPUT');
      expect(env.devnet.requests).toHaveLength(0);
    });
  }

  it('refuses depth over the configured limit', async () => {
    const gateway = gatewayWith(testSettings({ limits: { ...loadConfig({}).limits, depth: 3 } }));
    const res = await graphql(gateway, '{ block(height: 1) { proposerValidator { commission { rate } } } }');
    expect(res.errors?.[0]?.message).toMatch(/depth/i);
    expect(res.errors?.[0]?.extensions.code).toBe('BAD_USER_INPUT');
    expect(env.devnet.requests).toHaveLength(0);
  });

  it('lets the real screens through: the 100-row validator table', async () => {
    const res = await env.gql(ValidatorTableDocument, { variables: { pageSize: 100 } });
    expect(res.errors).toBeUndefined();
    expect(res.data?.validators?.nodes).toHaveLength(100);
  });

  it('answers syntax errors and huge integers as BAD_USER_INPUT', async () => {
    for (const query of [
      '{ validators(pageSize: 5 { nodes { moniker } } }',
      '{ validators(page: 99999999999) { nodes { moniker } } }',
    ]) {
      const res = await env.gql(query);
      expect(res.errors?.[0]?.extensions.code).toBe('BAD_USER_INPUT');
    }
    expect(env.devnet.requests).toHaveLength(0);
  });
});

describe('HTTP rules', () => {
  const json = { 'content-type': 'application/json' };

  it('caps the request body at MAX_REQUEST_BYTES (100 KB) with 413, over a real socket', async () => {
    const http = await listen(env.gateway);
    try {
      const body = (pad: number) =>
        JSON.stringify({ query: '{ __typename }', variables: { pad: 'x'.repeat(pad) } });
      const big = await fetch(http.url, { method: 'POST', headers: json, body: body(105_000) });
      expect(big.status).toBe(413);
      expect(await readAnswer(big)).toEqual({
        errors: [expect.objectContaining({ message: 'Request body too large' })],
      });
      const fits = await fetch(http.url, { method: 'POST', headers: json, body: body(90_000) });
      expect(fits.status).toBe(200);
    } finally {
      await http.close();
    }
  });

  it('counts a body of unknown length (chunked) as it arrives: 413 past the cap', async () => {
    const http = await listen(env.gateway);
    const chunked = (bytes: number) => {
      const text = JSON.stringify({ query: '{ __typename }', variables: { pad: 'x'.repeat(bytes) } });
      const chunks = [text.slice(0, 1000), text.slice(1000)].map((part) => new TextEncoder().encode(part));
      const body = new ReadableStream({
        pull: (controller) => {
          const next = chunks.shift();
          if (next) controller.enqueue(next);
          else controller.close();
        },
      });
      return fetch(http.url, { method: 'POST', headers: json, body, duplex: 'half' } as RequestInit);
    };
    try {
      const big = await chunked(105_000);
      expect(big.status).toBe(413);
      expect(await readAnswer(big)).toEqual({
        errors: [expect.objectContaining({ message: 'Request body too large' })],
      });
      const fits = await chunked(90_000);
      expect(fits.status).toBe(200);
      expect(await readAnswer(fits)).toEqual({ data: { __typename: 'Query' } });
    } finally {
      await http.close();
    }
  });

  it('refuses batched arrays unless configured', async () => {
    const batch = JSON.stringify([{ query: '{ __typename }' }, { query: '{ __typename }' }]);
    const refused = await post(env.gateway, batch, json);
    expect(refused.status).toBe(400);
    expect(await readAnswer(refused)).toEqual({
      errors: [expect.objectContaining({ message: 'Batching is not supported.' })],
    });
    const batching = gatewayWith(testSettings({ limits: { ...loadConfig({}).limits, batch: 2 } }));
    const res = await post(batching, batch, json);
    expect(res.status).toBe(200);
    expect(await readAnswer(res)).toEqual([
      { data: { __typename: 'Query' } },
      { data: { __typename: 'Query' } },
    ]);
  });

  it('refuses a simple form POST (CSRF) and multipart uploads', async () => {
    const form = await post(env.gateway, 'query=%7B__typename%7D', {
      'content-type': 'application/x-www-form-urlencoded',
    });
    expect(form.status).toBe(403);
    const boundary = 'x';
    const multipart = await post(
      env.gateway,
      `--${boundary}\r\nContent-Disposition: form-data; name="operations"\r\n\r\n{"query":"{ __typename }"}\r\n--${boundary}--\r\n`,
      { 'content-type': `multipart/form-data; boundary=${boundary}`, 'x-graphql-csrf': '1' },
    );
    // Uploads are off: multipart is a media type the gateway does not take.
    expect(multipart.status).toBe(415);
  });
});

describe('production mode', () => {
  // Production on real upstreams: the devnet in production is only ever asked for by name (DEVNET).
  const PRODUCTION = {
    NODE_ENV: 'production',
    SCAN_URL: 'http://scan.internal',
    EXPLORER_URL: 'http://explorer.internal',
    STAKE_URL: 'http://stake.internal',
    CURSOR_SECRET: 'hardening-cursor-secret-0123456789',
  };
  const production = () => gatewayWith(testSettings(loadConfig(PRODUCTION)));

  it('turns off introspection, GraphiQL and field suggestions', async () => {
    const gateway = production();
    const introspection = await graphql(gateway, '{ __schema { types { name } } }');
    expect(introspection.data).toBeUndefined();
    expect(introspection.errors?.[0]?.message).toMatch(/introspection/i);
    const typo = await graphql(gateway, '{ validatorz { moniker } }');
    expect(JSON.stringify(typo.errors)).not.toMatch(/did you mean/i);
    const page = await gateway.yoga.fetch('http://gateway.test/graphql', {
      headers: { accept: 'text/html' },
    });
    expect(await page.text()).not.toMatch(/graphiql/i);
  });

  it('keeps them in development, and lets each be switched back on', async () => {
    const typo = await env.gql('{ validatorz { moniker } }');
    expect(JSON.stringify(typo.errors)).toMatch(/did you mean/i);
    const gateway = gatewayWith(testSettings(loadConfig({ ...PRODUCTION, GRAPHQL_INTROSPECTION: 'true' })));
    const res = await graphql(gateway, '{ __schema { queryType { name } } }');
    expect(res.data).toEqual({ __schema: { queryType: { name: 'Query' } } });
  });
});

describe('error masking', () => {
  it('masks an unexpected failure whatever NODE_ENV says', async () => {
    vi.stubEnv('NODE_ENV', 'development');
    const bug = new Error('TypeError at /srv/app/src/secret.ts:12 password=hunter2');
    const spy = vi.spyOn(env.gateway.upstreams.scan, 'suggestions').mockRejectedValueOnce(bug);
    try {
      const res = await env.gql('{ searchSuggestions(query: "1") { query } }');
      expect(res.errors).toEqual([
        expect.objectContaining({
          message: 'Unexpected error.',
          extensions: { code: 'INTERNAL_SERVER_ERROR' },
        }),
      ]);
      expect(JSON.stringify(res)).not.toMatch(/secret|hunter2|stack|TypeError/);
    } finally {
      spy.mockRestore();
      vi.unstubAllEnvs();
    }
  });
});

describe('arguments that try to escape', () => {
  it.each(['../../admin', 'a?b=c', 'a#frag', 'a%2Fb', 'é€😀', '0x1/../../stake/buyback/rounds'])(
    'keeps the upstream path and query exactly as meant for %j',
    async (value) => {
      const res = await env.gql('query($a: String!) { search(query: $a) { query } }', {
        variables: { a: value },
      });
      expect(res.errors).toBeUndefined();
      const [req] = env.devnet.requests;
      expect(req?.path).toBe('/api/v1/search');
      expect([...new URLSearchParams(req?.query)]).toEqual([['q', value]]);
    },
  );

  it.each(['../../admin', '0x1/../../stake/buyback/rounds', 'biya1notanaddress'])(
    'refuses %j as a delegator address before any upstream call',
    async (value) => {
      const res = await env.gql(
        'query($a: String!) { delegations(delegatorAddress: $a) { pageInfo { total } } }',
        {
          variables: { a: value },
        },
      );
      expect(res.errors?.[0]?.extensions).toEqual({ code: 'BAD_USER_INPUT', argument: 'delegatorAddress' });
      expect(env.devnet.requests).toHaveLength(0);
    },
  );

  const identifiers = [
    { label: 'CR/LF', value: 'a\r\nx-evil: 1' },
    { label: 'NUL', value: 'a\u0000b' },
    { label: '10 KB', value: 'x'.repeat(10_000) },
  ];
  for (const { label, value } of identifiers) {
    it(`refuses ${label} in an identifier before any upstream call`, async () => {
      const res = await env.gql(
        'query($a: String!) { delegations(delegatorAddress: $a) { pageInfo { total } } }',
        {
          variables: { a: value },
        },
      );
      expect(res.errors?.[0]?.extensions).toEqual({ code: 'BAD_USER_INPUT', argument: 'delegatorAddress' });
      expect(env.devnet.requests).toHaveLength(0);
    });
  }

  it('refuses negative pages', async () => {
    const res = await env.gql('{ failedTransactions(page: -1) { nodes { hash } } }', {
      token: env.devnet.token,
    });
    expect(res.errors?.[0]?.extensions).toEqual({ code: 'BAD_USER_INPUT', argument: 'page' });
    expect(env.devnet.requests).toHaveLength(0);
  });
});
