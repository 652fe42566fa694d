/**
 * How long `until` looks by default: safely below vitest's testTimeout (20 s, vitest.config.ts), so
 * that a check that never holds fails with what was awaited, not with "Test timed out".
 */
export const UNTIL_WITHIN_MS = 15_000;

/**
 * Resolves once `check` holds, looking again every 10 ms: a test waits on state it can observe
 * (records, counts, the gateway's own figures), never on a delay that orders events. A check that
 * still does not hold once `within` ms have passed (15 s unless told) fails the test with an error
 * naming `what` was awaited and the bound. A test given a longer timeout than vitest's own passes a
 * `within` below it; a rule that promises a bound ("a stream's slot comes back within a second")
 * passes that bound.
 */
export async function until(
  check: () => boolean | Promise<boolean>,
  { what, within = UNTIL_WITHIN_MS }: { what: string; within?: number },
): Promise<void> {
  const deadline = Date.now() + within;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${within} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
