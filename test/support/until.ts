/**
 * Resolves once `check` holds, looking again every 10 ms: a test waits on state it can observe
 * (records, counts, the gateway's own figures), never on a delay that orders events. A check that
 * never holds fails the test by its timeout, or, given `within`, once that many ms have passed,
 * with an error naming `what` was awaited: for what a rule promises within a bound ("a stream's
 * slot comes back within a second").
 */
export async function until(
  check: () => boolean | Promise<boolean>,
  bound: { within: number; what: string } | null = null,
): Promise<void> {
  const deadline = bound ? Date.now() + bound.within : Number.POSITIVE_INFINITY;
  while (!(await check())) {
    if (bound && Date.now() > deadline) throw new Error(`${bound.what}: not within ${bound.within} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
