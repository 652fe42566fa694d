import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * The house rules of `src/`, checked on the source itself: folders by concern, imports that run one
 * way and never in a circle, production code that reads nothing of the tests, functions short
 * enough to read, module headers that say what a module is for, and comments and docs that name
 * only paths that exist (docs/architecture.md).
 */

const SRC = new URL('../src/', import.meta.url).pathname;
const ROOT = new URL('../', import.meta.url).pathname;
const TEST = join(ROOT, 'test');
const DOCS = join(ROOT, 'docs');
const MAX_FUNCTION_LINES = 80;
/** What a module is for and its rule; how it got there and what was measured go to docs/decisions/. */
const MAX_HEADER_LINES = 15;
/** The product's contract, which comments of src/ cite: its documents live beside the repository. */
const CONTRACT_DOCUMENTS = ['contract.md', 'upstream-api.md', 'real-upstreams.md'];
/** The one function allowed to run longer: the devnet's deterministic chain generator. */
const LONG_FUNCTION_ALLOWED = ['devnet/data.ts generate'];

const sourceFiles = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : [];
  });

/** Every comment of a TypeScript file, in order (leading and trailing trivia of its nodes). */
function comments(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found = new Map<number, string>();
  const visit = (node: ts.Node) => {
    const ranges = [
      ...(ts.getLeadingCommentRanges(text, node.getFullStart()) ?? []),
      ...(ts.getTrailingCommentRanges(text, node.getEnd()) ?? []),
    ];
    for (const { pos, end } of ranges) found.set(pos, text.slice(pos, end));
    ts.forEachChild(node, visit);
  };
  visit(source);
  return [...found].sort(([a], [b]) => a - b).map(([, comment]) => comment);
}

/**
 * The paths of TypeScript and Markdown files a text names: from the repository's root (`src/…`,
 * `docs/…`), relative to the naming file (a decision's link up to docs/), as the tail of a path
 * (`graphql/routing.ts`, `decisions/0008-….md`) or as a bare file name (`hub.ts`).
 */
const pathsNamed = (text: string): string[] =>
  [...text.matchAll(/(?<![\w@/.:-])((?:\.\.?\/)*[\w.-]+(?:\/[\w.-]+)*\.(?:ts|md))(?![\w/])/g)].map(
    ([, path]) => path as string,
  );

/** The files a path may name by its tail or its bare name, listed once. */
let known: string[] | undefined;

/**
 * Whether a named path exists. Paths under test/ and test files are not judged: the tests move
 * between folders by concern. The contract's documents live beside the repository, not in it.
 */
function pathExists(path: string, namedIn: string): boolean {
  if (path.startsWith('test/') || path.endsWith('.test.ts') || CONTRACT_DOCUMENTS.includes(path)) return true;
  if (/^(src|docs)\//.test(path)) return existsSync(join(ROOT, path));
  if (existsSync(join(dirname(namedIn), path)) || existsSync(join(ROOT, path))) return true;
  if (path.startsWith('.')) return false;
  known ??= [...sourceFiles(SRC), ...sourceFiles(TEST), ...markdownFiles(DOCS)];
  return path.includes('/')
    ? known.some((file) => file.endsWith(`/${path}`))
    : known.some((file) => basename(file) === path);
}

const markdownFiles = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? markdownFiles(path) : path.endsWith('.md') ? [path] : [];
  });

/** The anchors of a Markdown file's headings, as GitHub makes them. */
const headingSlugs = (file: string): Set<string> =>
  new Set(
    existsSync(file)
      ? [...readFileSync(file, 'utf8').matchAll(/^#{1,6} (.+)$/gm)].map(([, heading]) =>
          (heading as string)
            .toLowerCase()
            .replace(/[^\p{L}\p{N} _-]/gu, '')
            .replace(/ /g, '-'),
        )
      : [],
  );

/** Every function of a file with its name and length in lines. */
function functions(file: string): { name: string; lines: number }[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const found: { name: string; lines: number }[] = [];
  const line = (position: number) => source.getLineAndCharacterOfPosition(position).line;
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const named = node as ts.Node & { name?: ts.Node };
      const parent = node.parent;
      const name =
        named.name?.getText(source) ??
        (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)
          ? parent.name.getText(source)
          : '<anonymous>');
      found.push({ name, lines: line(node.end) - line(node.getStart(source)) + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/**
 * Each folder's (or top-level file's) layer: a file imports only from its own layer or those below
 * (`main → gateway → http → graphql → exchange / schema / live / upstream → ops / scale / lib`, and under them
 * the configuration and the coded errors every layer reads). The devnet stands apart: only main.ts
 * loads it, and it reads nothing of the gateway but the small pure helpers of lib/.
 */
const LAYERS: Record<string, number> = {
  'main.ts': 0,
  'gateway.ts': 1,
  http: 2,
  graphql: 3,
  exchange: 4,
  schema: 4,
  live: 4,
  upstream: 4,
  ops: 5,
  scale: 5,
  lib: 5,
  'config.ts': 6,
  'errors.ts': 6,
};
const layerOf = (file: string) => LAYERS[file.split('/')[0] as string];

/** Every relative import (type-only ones included, and dynamic imports) of each file of src/, resolved. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(SRC)) {
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const targets: string[] = [];
    const visit = (node: ts.Node) => {
      const specifier =
        (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier
          ? node.moduleSpecifier
          : ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword
            ? node.arguments[0]
            : undefined;
      if (specifier && ts.isStringLiteral(specifier) && specifier.text.startsWith('.')) {
        targets.push(relative(SRC, join(file, '..', specifier.text.replace(/\.js$/, '.ts'))));
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
    graph.set(relative(SRC, file), targets);
  }
  return graph;
}

/** The import circles of a graph, each as the path around it. */
function circles(graph: Map<string, string[]>): string[] {
  const found = new Set<string>();
  const done = new Set<string>();
  const path: string[] = [];
  const walk = (file: string) => {
    path.push(file);
    for (const target of graph.get(file) ?? []) {
      const at = path.indexOf(target);
      if (at !== -1) found.add([...path.slice(at), target].join(' → '));
      else if (!done.has(target)) walk(target);
    }
    path.pop();
    done.add(file);
  };
  for (const file of graph.keys()) if (!done.has(file)) walk(file);
  return [...found];
}

describe('the house by concern', () => {
  const graph = importGraph();

  it('has no import circle, type-only imports included', () => {
    expect(circles(graph)).toEqual([]);
  });

  it('imports one way: main → gateway → http → graphql → exchange / schema / live / upstream → ops / scale / lib', () => {
    const allowed = (file: string, target: string) =>
      file.startsWith('devnet/')
        ? target.startsWith('devnet/') || target.startsWith('lib/') || layerOf(target) === 6
        : target.startsWith('devnet/')
          ? file === 'main.ts'
          : (layerOf(target) ?? -1) >= (layerOf(file) ?? 0);
    const against = [...graph].flatMap(([file, targets]) =>
      targets.filter((target) => !allowed(file, target)).map((target) => `${file} → ${target}`),
    );
    expect(against).toEqual([]);
  });

  it('admits requests with nothing of graphql/: intake and the server reach none of it, even through another file', () => {
    const reached = new Set<string>();
    const reach = (file: string) => {
      for (const target of graph.get(file) ?? []) {
        if (reached.has(target)) continue;
        reached.add(target);
        reach(target);
      }
    };
    reach('http/intake.ts');
    reach('http/node-server.ts');
    const graphqlReached = [...reached].filter((file) => file.startsWith('graphql/'));
    expect(graphqlReached).toEqual([]);
  });

  it('has nothing import gateway.ts but main.ts', () => {
    const importers = [...graph]
      .filter(([, targets]) => targets.includes('gateway.ts'))
      .map(([file]) => file);
    expect(importers).toEqual(['main.ts']);
  });
});

describe('the house by role', () => {
  it('keeps at most five files directly in src/: the rest live in folders named for their role', () => {
    const top = readdirSync(SRC).filter((name) => statSync(join(SRC, name)).isFile());
    expect(top.length).toBeLessThanOrEqual(5);
    expect(top.sort()).toEqual(['config.ts', 'errors.ts', 'gateway.ts', 'main.ts']);
  });

  it('never reads the tests from production code', () => {
    const readers = sourceFiles(SRC).filter((file) =>
      /['"`][^'"`]*\btest\//.test(readFileSync(file, 'utf8')),
    );
    expect(readers.map((file) => relative(SRC, file))).toEqual([]);
  });

  it(`has no function over ${MAX_FUNCTION_LINES} lines outside the devnet's data generator`, () => {
    const long = sourceFiles(SRC).flatMap((file) =>
      functions(file)
        .filter(({ lines }) => lines > MAX_FUNCTION_LINES)
        .map(({ name, lines }) => `${relative(SRC, file)} ${name} (${lines} lines)`),
    );
    expect(long.map((entry) => entry.replace(/ \(\d+ lines\)$/, ''))).toEqual(LONG_FUNCTION_ALLOWED);
  });
});

describe('the house in words', () => {
  it(`keeps every module's header (its first doc comment) within ${MAX_HEADER_LINES} lines`, () => {
    const long = sourceFiles(SRC).flatMap((file) => {
      const header = comments(file).find((comment) => comment.startsWith('/**'));
      const lines = header?.split('\n').length ?? 0;
      return lines > MAX_HEADER_LINES ? [`${relative(SRC, file)} (${lines} lines)`] : [];
    });
    expect(long).toEqual([]);
  });

  it('names only paths that exist, in the comments of src/ and test/ and in the docs', () => {
    const named = [
      ...[...sourceFiles(SRC), ...sourceFiles(TEST)].map((file) => ({
        file,
        text: comments(file).join('\n'),
      })),
      ...[...markdownFiles(DOCS), join(ROOT, 'README.md')].map((file) => ({
        file,
        text: readFileSync(file, 'utf8'),
      })),
    ];
    const stale = named.flatMap(({ file, text }) =>
      pathsNamed(text)
        .filter((path) => !pathExists(path, file))
        .map((path) => `${relative(ROOT, file)}: ${path}`),
    );
    expect([...new Set(stale)]).toEqual([]);
  });

  it('links the docs to headings that exist', () => {
    const broken = [...markdownFiles(DOCS), join(ROOT, 'README.md')].flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(/\]\(([\w./-]*\.md)?#([\w-]+)\)/g)]
        .filter(
          ([, target, anchor]) =>
            !headingSlugs(target ? join(dirname(file), target) : file).has(anchor as string),
        )
        .map(([link]) => `${relative(ROOT, file)}: ${link}`),
    );
    expect(broken).toEqual([]);
  });
});
