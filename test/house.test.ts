import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * The house rules of `src/`, checked on the source itself: folders by role, production code that
 * reads nothing of the tests, and functions short enough to read (docs/architecture.md).
 */

const SRC = new URL('../src/', import.meta.url).pathname;
const MAX_FUNCTION_LINES = 80;
/** The one function allowed to run longer: the devnet's deterministic chain generator. */
const LONG_FUNCTION_ALLOWED = ['devnet/data.ts generate'];

const sourceFiles = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : [];
  });

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
