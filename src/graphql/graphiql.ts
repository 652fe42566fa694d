import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';
import { getOperationAST, parse } from 'graphql';
import type { GraphiQLOptions, Plugin } from 'graphql-yoga';
import { type HttpStagePlugin, withHttpStage } from './routing.js';

/**
 * GraphiQL's options: a welcome tab, then one tab per operation the frontends send (the files of
 * operations/, their only home), each with its variables and the Authorization header.
 * GraphiQL is a development tool (off in production): the files are read on the first GraphiQL
 * page, never at start. The tabs are GraphiQL's `defaultTabs`, which Yoga's GraphiQL passes
 * through; GraphiQL uses them only while the browser has no tabs of its own in localStorage.
 * And the page as it is sent (`graphiqlPage`): rendered once, compressed, tagged, revalidated.
 */

/** operations/, from src/ and from dist/ alike. */
export const OPERATIONS_DIR = new URL('../../operations/', import.meta.url);

export interface GraphiQLExamples {
  title: string;
  /** The first tab's query (it needs no variables). */
  welcomeQuery: string;
  /** The bearer token of every tab's Authorization header; a placeholder when not given. */
  token?: string | undefined;
  /** Variables by operation name (the devnet's); an operation without any gets `{}`. */
  variables?: Readonly<Record<string, unknown>> | undefined;
  /** Where the operation files are read from (tests); OPERATIONS_DIR when not given. */
  dir?: URL;
}

export interface OperationFile {
  /** The operation's name (the file's, when the document does not parse). */
  name: string;
  /** The file's text, as GraphiQL shows it. */
  query: string;
}

/** The operations of `dir` (one per `.graphql` file), in file-name order; none without `dir`. */
async function readOperations(dir: URL): Promise<OperationFile[]> {
  let files: string[];
  try {
    files = (await readdir(dir)).filter((file) => file.endsWith('.graphql')).sort();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  return Promise.all(
    files.map(async (file) => {
      const query = await readFile(new URL(file, dir), 'utf8');
      return { name: operationName(query) ?? file.slice(0, -'.graphql'.length), query };
    }),
  );
}

function operationName(text: string): string | undefined {
  try {
    return getOperationAST(parse(text))?.name?.value;
  } catch {
    return undefined;
  }
}

export async function buildGraphiQLOptions(examples: GraphiQLExamples): Promise<GraphiQLOptions> {
  const headers = JSON.stringify({ Authorization: `Bearer ${examples.token ?? '<your token>'}` }, null, 2);
  const operations = await readOperations(examples.dir ?? OPERATIONS_DIR);
  return {
    title: examples.title,
    // The headers of a tab opened with "+".
    headers,
    defaultTabs: [
      { query: examples.welcomeQuery, variables: null, headers },
      ...operations.map(({ name, query }) => ({
        query,
        variables: JSON.stringify(examples.variables?.[name] ?? {}, null, 2),
        headers,
      })),
    ],
  };
}

/**
 * Yoga's `graphiql` option as a factory: the options are built on the first GraphiQL page and
 * reused (built again after a failure).
 */
export function graphiqlPageOptions(examples: GraphiQLExamples): () => Promise<GraphiQLOptions> {
  let options: Promise<GraphiQLOptions> | undefined;
  return () => {
    options ??= buildGraphiQLOptions(examples).catch((error: unknown) => {
      options = undefined;
      throw error;
    });
    return options;
  };
}

/** GraphiQL's first tab: a query that needs no variables and shows a little of everything. */
export const EXAMPLE_QUERY = `# Welcome to the chain gateway. Press the run button to try this query.
query Overview {
  searchSuggestions(query: "12") {
    selectedCategory
    blocks { height hash transactionCount proposerValidator { moniker } }
  }
  validators(pageSize: 5) {
    pageInfo { total totalPages }
    nodes { moniker operatorAddress tokens jailed commission { rate } }
  }
  validatorStatistics { activeValidators totalStakedAmount annualizedRewardRate }
}

# contractsBySymbol, failedTransactions and updateBuybackRound need the
# Authorization header (see the Headers tab below).
`;

/** The encodings the page is sent in besides identity, in the order preferred at equal weight. */
const ENCODINGS = {
  // Quality 5: 4.6 times smaller than identity in a quarter of a second (11 takes seconds).
  br: promisify(brotliCompress),
  gzip: promisify(gzip),
} as const;
type Encoding = keyof typeof ENCODINGS;
const ENCODING_OPTIONS = {
  br: { params: { [constants.BROTLI_PARAM_QUALITY]: 5 } },
  gzip: {},
} as const;

/** The encoding `accept-encoding` prefers among ENCODINGS (a q of 0 refuses one); null: identity. */
function preferredEncoding(header: string | null): Encoding | null {
  const weights = new Map<string, number>();
  for (const part of (header ?? '').toLowerCase().split(',')) {
    const [name = '', ...params] = part.split(';').map((token) => token.trim());
    const q = params.map((param) => /^q=([0-9.]+)$/.exec(param)?.[1]).find((value) => value !== undefined);
    weights.set(name, q === undefined ? 1 : Number(q));
  }
  let best: Encoding | null = null;
  for (const encoding of Object.keys(ENCODINGS) as Encoding[]) {
    const weight = weights.get(encoding) ?? weights.get('*') ?? 0;
    if (weight > 0 && (best === null || weight > (weights.get(best) ?? weights.get('*') ?? 0)))
      best = encoding;
  }
  return best;
}

/** Whether `if-none-match` names `etag` (weak comparison, as for a GET), or is `*`. */
const unchanged = (header: string | null, etag: string): boolean =>
  (header ?? '').split(',').some((tag) => {
    const trimmed = tag.trim();
    return trimmed === '*' || trimmed.replace(/^W\//, '') === etag.replace(/^W\//, '');
  });

/** One rendered page: its text, its entity tag, and each encoding once it was asked for. */
interface RenderedPage {
  html: string;
  etag: string;
  encoded: Map<Encoding, Promise<Uint8Array<ArrayBuffer>>>;
}

export interface GraphiQLPage {
  /** Yoga's `renderGraphiQL`: the page's text, rendered once for the options it is given. */
  render(options: GraphiQLOptions): Promise<string>;
  /** Sends the page compressed as the browser accepts, tagged, 304 when the browser has it. */
  plugin: HttpStagePlugin;
}

/**
 * The GraphiQL page as it is sent. Its assets are inlined (it works offline and loads nothing from
 * a CDN), which makes it 9 MB: it is rendered once, tagged with the hash of its text, each encoding
 * compressed once when first asked for (off the event loop), and sent `no-cache`, so that a browser
 * revalidates it on each load and gets 304 while the gateway serves the same page. Yoga's own
 * GraphiQL plugin answers the request (GET, `accept: text/html`); this plugin's `onResponse`, after
 * useAnswers wrote the headers of every answer, replaces that answer with the encoded one. The
 * renderer module is loaded on first use only: it weighs about 50 MB of memory, and production
 * never serves GraphiQL.
 */
export function graphiqlPage(): GraphiQLPage {
  let rendered: { key: string; page: Promise<RenderedPage> } | null = null;
  const render = (options: GraphiQLOptions): Promise<RenderedPage> => {
    const key = JSON.stringify(options);
    if (rendered?.key !== key) {
      const page = import('@graphql-yoga/render-graphiql').then(({ renderGraphiQL }) => {
        const html = renderGraphiQL(options);
        const etag = `W/"${createHash('sha256').update(html).digest('base64url')}"`;
        return { html, etag, encoded: new Map<Encoding, Promise<Uint8Array<ArrayBuffer>>>() };
      });
      rendered = { key, page };
    }
    return rendered.page;
  };
  const encoded = (page: RenderedPage, encoding: Encoding): Promise<Uint8Array<ArrayBuffer>> => {
    let body = page.encoded.get(encoding);
    if (!body) {
      body = ENCODINGS[encoding](page.html, ENCODING_OPTIONS[encoding]).then(
        (bytes) => new Uint8Array(bytes),
      );
      page.encoded.set(encoding, body);
    }
    return body;
  };
  const plugin: Plugin = {
    async onResponse({ request, response, setResponse }) {
      // Only GraphiQL answers a page in this gateway, and only once it was rendered.
      if (request.method !== 'GET' || response.status !== 200 || !rendered) return;
      if (!response.headers.get('content-type')?.startsWith('text/html')) return;
      const page = await rendered.page;
      const headers = new Headers(response.headers);
      // The length is the body's own, written by the server for the one sent.
      headers.delete('content-length');
      headers.set('etag', page.etag);
      headers.set('cache-control', 'no-cache');
      headers.set('vary', [headers.get('vary'), 'accept-encoding'].filter(Boolean).join(', '));
      if (unchanged(request.headers.get('if-none-match'), page.etag)) {
        headers.delete('content-type');
        setResponse(new Response(null, { status: 304, headers }));
        return;
      }
      const encoding = preferredEncoding(request.headers.get('accept-encoding'));
      if (encoding) headers.set('content-encoding', encoding);
      setResponse(
        new Response(encoding ? await encoded(page, encoding) : page.html, { status: 200, headers }),
      );
    },
  };
  return {
    render: async (options) => (await render(options)).html,
    plugin: withHttpStage(plugin, {
      // A browser's page load (accept: text/html), which the adapter never takes: Yoga answers it.
      declines: ({ method, headers }) =>
        method === 'GET' && headers.get('accept')?.includes('text/html') ? 'the GraphiQL page' : null,
    }),
  };
}
