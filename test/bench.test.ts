import { describe, expect, it } from 'vitest';
import { formatTable, runBenchmark } from './bench/bench.js';
import { compareTargets } from './bench/compare.js';
import { transportsOption } from './bench/live.js';

/** The harness itself, on a tiny run: every figure is produced. Timings are never asserted. */
describe('benchmark harness', () => {
  it('produces every figure for every scenario', { timeout: 120_000 }, async () => {
    const lines: string[] = [];
    const result = await runBenchmark({ durationSec: 0.3, rounds: 1, connections: 2, warmupSec: 0.1 }, (l) =>
      lines.push(l),
    );
    expect(result.scenarios.map((s) => s.id)).toEqual(['S1', 'S2', 'S3', 'S4', 'S5', 'S6']);
    for (const s of result.scenarios) {
      for (const target of [s.gateway, s.baseline]) {
        expect(target.requests).toBeGreaterThan(0);
        expect(target.requestsPerSec).toBeGreaterThan(0);
        expect(Number.isFinite(target.p50Ms)).toBe(true);
        expect(target.p99Ms).toBeGreaterThanOrEqual(target.p50Ms);
        expect(Number.isFinite(target.upstreamPerRequest)).toBe(true);
        expect(target.cpuUsPerRequest).toBeGreaterThanOrEqual(0);
        expect(target.errors).toBe(0);
      }
      expect(s.ratio).toBeGreaterThan(0);
      expect(s.sameJson).toBe(true);
    }
    // At most one upstream call per suggestion: a repeat within a block is the response cache's.
    expect(result.scenarios[0]?.gateway.upstreamPerRequest).toBeGreaterThan(0);
    expect(result.scenarios[0]?.gateway.upstreamPerRequest).toBeLessThanOrEqual(1);
    expect(result.peakRssMb.gateway).toBeGreaterThan(0);
    expect(result.peakRssMb.baseline).toBeGreaterThan(0);
    expect(lines).toHaveLength(6);
    expect(formatTable(result)).toContain('S6 | S3 with 10 ms per upstream call');
  });

  it('reads the live benchmark’s transports: SSE, graphql-ws or both, nothing else', () => {
    expect(transportsOption('sse')).toEqual(['sse']);
    expect(transportsOption('ws')).toEqual(['ws']);
    expect(transportsOption('sse,ws,sse')).toEqual(['sse', 'ws']);
    expect(() => transportsOption('sse,websocket')).toThrow('--transports takes sse, ws or sse,ws');
  });

  it('compares builds round by round, relative to the first target', { timeout: 120_000 }, async () => {
    const lines: string[] = [];
    const result = await compareTargets(
      {
        targets: ['dist', 'dist', 'baseline'],
        only: ['S4'],
        rounds: 2,
        durationSec: 0.3,
        connections: 2,
        warmupSec: 0.1,
      },
      (l) => lines.push(l),
    );
    expect(result.map((s) => s.id)).toEqual(['S4']);
    const targets = result[0]?.targets ?? [];
    expect(targets.map((t) => t.target)).toEqual(['dist', 'dist', 'baseline']);
    for (const t of targets) {
      expect(t.requestsPerSec).toBeGreaterThan(0);
      expect(t.cpuUsPerRequest).toBeGreaterThanOrEqual(0);
      expect(t.errors).toBe(0);
    }
    expect(targets[0]?.relativeCpu).toBe(1);
    expect(lines).toHaveLength(3);
  });
});
