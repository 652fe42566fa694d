import { GraphQLError, Kind, type ValueNode } from 'graphql';
import { isDecimal, parseTimestamp } from '../lib/decimal.js';
import { builder } from './builder.js';

/**
 * Numbers that must not lose precision travel as strings, exactly as the upstream sent them:
 * amounts and counts can exceed 2^53, and rates must not pick up float rounding.
 */

const stringLiteral = (name: string, check: (text: string) => boolean, expected: string) => {
  const parse = (value: unknown): string => {
    if (typeof value !== 'string' || !check(value)) {
      throw new GraphQLError(`${name} must be ${expected}.`, { extensions: { code: 'BAD_USER_INPUT' } });
    }
    return value;
  };
  return {
    serialize: (value: unknown) => String(value),
    parseValue: parse,
    parseLiteral: (ast: ValueNode) => parse(ast.kind === Kind.STRING ? ast.value : undefined),
  };
};

builder.scalarType('Amount', {
  description:
    'An amount of a token in its base units, as a non-negative decimal string such as "1500000": divide by 10^decimals of its denomination to show tokens (the staking token has 18 decimals; a contract says its own). Never a float.',
  ...stringLiteral('Amount', isDecimal, 'a non-negative decimal string such as "1500000" or "0.25"'),
});

builder.scalarType('Decimal', {
  description:
    'An exact decimal number as a string, such as a commission rate "0.050000000000000000" or delegator shares.',
  ...stringLiteral('Decimal', isDecimal, 'a non-negative decimal string'),
});

builder.scalarType('BigInt', {
  description: 'A non-negative integer of any size, as a decimal string (counts that may exceed 2^53).',
  ...stringLiteral('BigInt', (text) => /^\d{1,78}$/.test(text), 'a non-negative integer string'),
});

builder.scalarType('DateTime', {
  description: 'A point in time as an RFC 3339 string, for example "2026-11-22T10:00:00Z".',
  ...stringLiteral(
    'DateTime',
    (text) => !Number.isNaN(parseTimestamp(text)),
    'an RFC 3339 timestamp such as "2026-11-22T10:00:00Z"',
  ),
});

/** Unix seconds as a DateTime: RFC 3339 in UTC, with milliseconds only when there are some. */
export const unixDateTime = (seconds: number): string =>
  new Date(seconds * 1000).toISOString().replace('.000Z', 'Z');

/** A time the upstream sent as text, as a DateTime when it is RFC 3339; null otherwise. */
export const textDateTime = (text: string | null): string | null =>
  text !== null && !Number.isNaN(parseTimestamp(text)) ? text : null;

builder.scalarType('JSON', {
  description: 'Any JSON value, passed through untouched.',
  serialize: (value) => value,
  parseValue: (value) => value,
});
