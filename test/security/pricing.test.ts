import { parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import type { Gateway } from '../../src/gateway.js';
import { operationCost } from '../../src/graphql/plugins/cost.js';
import { schema } from '../../src/schema/index.js';
import { parseAnswer, testSettings, useGatewayOnDevnet } from '../gateway/helpers.js';

/**
 * Attacks on pricing (contract.md §7): an operation that cannot be priced does not run, and the
 * limits on a request's variables hold for every kind of operation.
 */

const env = useGatewayOnDevnet();

const EXPENSIVE = 'validators(pageSize: 30) { nodes { moniker operatorAddress } }';

async function send(
  gateway: Gateway,
  body: Record<string, unknown>,
  accept = 'application/json',
): Promise<{ status: number; text: string }> {
  const res = await gateway.yoga.fetch('http://gateway.test/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept },
    body: JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
}

/** A gateway whose MAX_COMPLEXITY is 60 and whose clients may spend 1,000 points a minute. */
const strict = () => {
  const config = loadConfig({ MAX_COMPLEXITY: '60' });
  return env.coldGateway({
    limits: config.limits,
    scale: { ...testSettings().scale, rateLimitPoints: 1_000 },
  });
};

describe('an operation that cannot be priced does not run', () => {
  it('a null fed to a non-null argument under @skip(if: true) no longer switches pricing off', async () => {
    const query = `query Q($a: String = "x") { skipped: delegations(delegatorAddress: $a) @skip(if: true) { nodes { shares } } ${EXPENSIVE} }`;
    const price = operationCost(schema, parse(query), null, { a: null });
    expect(price).toBeGreaterThan(60);
    const { text } = await send(strict(), { query, variables: { a: null } });
    const answer = parseAnswer(text);
    expect(answer.data).toBeUndefined();
    expect(answer.errors).toEqual([
      expect.objectContaining({
        extensions: expect.objectContaining({ code: 'BAD_USER_INPUT', limit: 'complexity', cost: price }),
      }),
    ]);
    expect(env.devnet.requests).toEqual([]);
  });

  it('a null fed to a non-null argument that runs is refused whole, before any upstream call', async () => {
    const query = `query Q($a: String = "x") { delegations(delegatorAddress: $a) { nodes { shares } } validatorStatistics { totalValidators } }`;
    const answer = parseAnswer((await send(strict(), { query, variables: { a: null } })).text);
    expect(answer.data).toBeUndefined();
    expect(answer.errors).toHaveLength(1);
    expect(answer.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    expect(answer.errors[0].message).toMatch(/delegatorAddress/);
    expect(env.devnet.requests).toEqual([]);
  });

  it('variables that do not coerce are BAD_USER_INPUT, before any upstream call', async () => {
    const query = 'query Q($n: Int) { validators(pageSize: $n) { nodes { moniker } } }';
    const answer = parseAnswer((await send(strict(), { query, variables: { n: 'many' } })).text);
    expect(answer.errors).toHaveLength(1);
    expect(answer.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    expect(env.devnet.requests).toEqual([]);
  });

  it('an operationName the document does not hold is BAD_USER_INPUT', async () => {
    const query = 'query A { validatorStatistics { totalValidators } }';
    const answer = parseAnswer((await send(strict(), { query, operationName: 'B' })).text);
    expect(answer.errors).toHaveLength(1);
    expect(answer.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    expect(env.devnet.requests).toEqual([]);
  });

  it('a selection left out by @include(if: false) costs nothing (the positive control: it runs)', async () => {
    const query = `query Q($all: Boolean!) { validatorStatistics { totalValidators } ... @include(if: $all) { ${EXPENSIVE} } }`;
    const answer = parseAnswer((await send(strict(), { query, variables: { all: false } })).text);
    expect(answer.errors).toBeUndefined();
    expect(answer.data.validatorStatistics.totalValidators).toEqual(expect.any(String));
    expect(answer.data.validators).toBeUndefined();
  });
});

describe('the limits on variables hold for every kind of operation', () => {
  const config = loadConfig({ MAX_VARIABLE_VALUES: '5' });
  const limited = () => env.coldGateway({ limits: config.limits });
  // Values the operation does not even declare still count: they are parsed, held and walked.
  const variables = { extra: [1, 2, 3, 4, 5, 6, 7] };

  it('a subscription with too many variables is refused, and no stream opens', async () => {
    const query = 'subscription S { validatorStatisticsUpdated { totalValidators } }';
    const { text } = await send(limited(), { query, variables }, 'text/event-stream');
    expect(text).toContain('event: next');
    const data = /data: (.*)/.exec(text)?.[1] as string;
    const answer = parseAnswer(data);
    expect(answer.errors[0]).toMatchObject({ extensions: { code: 'BAD_USER_INPUT', limit: 'variables' } });
    expect(text).toContain('event: complete');
    expect(env.devnet.requests).toEqual([]);
  });

  it('a deferred query with too many variables is refused, before any upstream call', async () => {
    const query = `query D { validatorStatistics { totalValidators } ... @defer { ${EXPENSIVE} } }`;
    const { text } = await send(limited(), { query, variables }, 'multipart/mixed');
    const answer = parseAnswer(text.slice(text.indexOf('{'), text.lastIndexOf('}') + 1));
    expect(answer.errors[0]).toMatchObject({ extensions: { code: 'BAD_USER_INPUT', limit: 'variables' } });
    expect(env.devnet.requests).toEqual([]);
  });
});
