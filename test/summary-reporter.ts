import type { Reporter, SerializedError, TestModule } from 'vitest/node';

/**
 * Ends the run with one plain line, `vitest: N passed, N failed[, N skipped]`, for CI readers. A
 * file that failed outside its tests (it did not load, a hook threw) and an unhandled error are
 * counted too, so that a failed run never reads as `0 failed`.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(
    testModules: ReadonlyArray<TestModule>,
    unhandledErrors: ReadonlyArray<SerializedError>,
  ): void {
    const counts = { passed: 0, failed: 0, skipped: 0 };
    let errors = unhandledErrors.length;
    for (const module of testModules) {
      errors += module.errors().length;
      for (const suite of module.children.allSuites()) errors += suite.errors().length;
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') counts.passed++;
        else if (state === 'failed') counts.failed++;
        else counts.skipped++;
      }
    }
    const skipped = counts.skipped > 0 ? `, ${counts.skipped} skipped` : '';
    const outside = errors > 0 ? `, ${errors} ${errors === 1 ? 'error' : 'errors'} outside tests` : '';
    process.stdout.write(`\nvitest: ${counts.passed} passed, ${counts.failed} failed${skipped}${outside}\n`);
  }
}
