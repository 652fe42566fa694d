import { describe, expect, it } from 'vitest';
import { frontendOperationNames, operationLabeler } from '../../src/graphql/plugins/telemetry.js';
import { graphql, useGatewayOnDevnet } from '../gateway/helpers.js';

/**
 * Operation names come from callers: the first names a caller sends must not take every metric
 * label for ever, leaving the frontends' own operations counted as `other`.
 */

const env = useGatewayOnDevnet();

const series = async (name: string) =>
  (await env.gateway.metrics.registry.getSingleMetric('graphql_requests_total')?.get())?.values.filter(
    (v) => v.labels.operation === name,
  ).length ?? 0;

describe('operation-name labels under a flood of names', () => {
  it('keeps the frontends’ operations labelled after 300 made-up names', async () => {
    for (let i = 0; i < 300; i++) await graphql(env.gateway, `query Flood${i} { __typename }`);
    await graphql(env.gateway, 'query ValidatorTable { __typename }');
    expect(await series('ValidatorTable')).toBe(1);
    expect(await series('Flood299')).toBe(0);
    expect(await series('other')).toBe(1);
    // No upstream was needed for any of it.
    expect(env.devnet.requests).toEqual([]);
  });

  it('reserves every operation of operations/', () => {
    expect(frontendOperationNames()).toEqual(
      expect.arrayContaining(['ValidatorTable', 'SearchBox', 'BlockAdded', 'UpdateBuybackRound']),
    );
  });

  it('gives an idle name’s label to a new name, and tells which series to drop', () => {
    let now = 0;
    const forgotten: string[] = [];
    const label = operationLabeler({
      reserved: ['Mine'],
      max: 2,
      idleMs: 1_000,
      forget: (n) => forgotten.push(n),
      now: () => now,
    });
    expect([label('A'), label('B'), label('C'), label('Mine')]).toEqual(['A', 'B', 'other', 'Mine']);
    now = 500;
    expect(label('A')).toBe('A');
    now = 1_200;
    // B has been idle for 1,200 ms, A only 700: B's label goes to C.
    expect(label('C')).toBe('C');
    expect(forgotten).toEqual(['B']);
    expect(label('D')).toBe('other');
  });
});
