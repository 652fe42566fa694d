import { existsSync } from 'node:fs';

/**
 * Whether a test run is CI's: there, every test must run, so a missing tool fails the run instead
 * of skipping the tests that need it (a green CI that proved nothing). CI services set `CI=true`;
 * `.ci/run` sets it too.
 */
export const inCI = !['', '0', 'false'].includes(process.env.CI ?? '');

/**
 * Whether the Debian binary at `path` is there. Outside CI, its absence only skips the tests that
 * need it; in CI it throws, naming the tool and how to install it, so that the test file fails.
 */
export function installed(path: string, tool: string, install: string): boolean {
  if (existsSync(path)) return true;
  if (inCI)
    throw new Error(
      `${tool} is not installed (${path} is missing), and CI runs every test: install it with \`${install}\` (.ci/run does).`,
    );
  return false;
}
