import { readdir, readFile } from 'node:fs/promises';
import { getOperationAST, parse } from 'graphql';
import type { GraphiQLOptions } from 'graphql-yoga';

/**
 * GraphiQL's options: a welcome tab, then one tab per operation the frontends send (the files of
 * operations/, their only home), each with its variables and the Authorization header.
 * GraphiQL is a development tool (off in production): the files are read on the first GraphiQL
 * page, never at start. The tabs are GraphiQL's `defaultTabs`, which Yoga's GraphiQL passes
 * through; GraphiQL uses them only while the browser has no tabs of its own in localStorage.
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
