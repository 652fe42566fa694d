/**
 * Resolves once `check` holds, looking again every 10 ms: a test waits on state it can observe
 * (records, counts, the gateway's own figures), never on a delay that orders events. A check that
 * never holds fails the test by its timeout.
 */
export async function until(check: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 10));
}
