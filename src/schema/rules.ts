import type { StandardSchemaV1 } from '@pothos/plugin-validation';
import * as v from 'valibot';
import { badUserInput, type GatewayError } from '../errors.js';
import { decodeAddress, splitPrefix } from '../lib/address.js';
import { compareDecimal, INT32_MAX, parseTimestamp } from '../lib/decimal.js';
import { MAX_CURSOR } from './cursors.js';
import { idProblem } from './ids.js';

/**
 * The argument rules of contract.md §4, as Standard Schemas (valibot) that fields declare beside
 * their arguments (`validate:`), run by @pothos/plugin-validation before the resolver and before
 * any upstream call. A broken rule is BAD_USER_INPUT naming the argument (`extensions.argument`,
 * the issue's path: `input.totalSlots`) with the rule's own message.
 */

const MAX_SEARCH_BYTES = 256;
const MAX_TEXT = 128;
// biome-ignore lint/suspicious/noControlCharactersInRegex: rejecting control characters is the point
const CONTROL = /[\u0000-\u001f\u007f]/;

/** An argument's rule: checks its value (null or absent values pass: the graph's types say what is required). */
export type Rule = StandardSchemaV1;

const optional = <S extends v.GenericSchema>(schema: S) => v.nullish(schema);

/** Search text: at most 256 bytes of UTF-8, no NUL. */
export const searchText = (argument: string): Rule =>
  optional(
    v.pipe(
      v.string(),
      v.check((s) => !s.includes('\0'), `${argument} must not contain a NUL character.`),
      v.check(
        (s) => Buffer.byteLength(s, 'utf8') <= MAX_SEARCH_BYTES,
        (issue) =>
          `${argument} is ${Buffer.byteLength(issue.input as string, 'utf8')} bytes of UTF-8; at most ${MAX_SEARCH_BYTES} are allowed.`,
      ),
    ),
  );

const notEmpty = (argument: string) => v.check((s: string) => s.length > 0, `${argument} must not be empty.`);
const noControl = (argument: string) =>
  v.check((s: string) => !CONTROL.test(s), `${argument} must not contain control characters.`);

/** The checks of an identifier-like text: 1..128 characters, no control characters. */
const textChecks = (argument: string) =>
  [
    notEmpty(argument),
    v.check((s: string) => s.length <= MAX_TEXT, `${argument} is longer than ${MAX_TEXT} characters.`),
    noControl(argument),
  ] as const;

/** An identifier-like text argument: 1..128 characters, no control characters. */
export const text = (argument: string): Rule => optional(v.pipe(v.string(), ...textChecks(argument)));

/**
 * A key an upstream names an object by, as a global id carries it back (nodes.ts): the checks of an
 * identifier-like text but its length, which is the id's own bound (ids.ts). Upstreams name objects
 * by keys longer than any argument takes, and their ids still fetch them back (contract.md §6).
 */
export const upstreamKey = (argument: string): Rule =>
  optional(v.pipe(v.string(), notEmpty(argument), noControl(argument)));

/** A page cursor: what the list handed out (cursors.ts checks the rest), 1..MAX_CURSOR characters. */
export const cursorText = (argument: string): Rule =>
  optional(
    v.pipe(
      v.string(),
      v.check((s) => s.length > 0 && s.length <= MAX_CURSOR, `${argument} is not a cursor of this list.`),
    ),
  );

/**
 * An account address in either encoding the chain uses: `0x` + 40 hex digits, or bech32 of 20 bytes
 * with any prefix (`biya1…`, `byb1…`). Staking is then called in its own encoding.
 */
export const accountAddress = (argument: string): Rule =>
  optional(
    v.pipe(
      v.string(),
      ...textChecks(argument),
      v.check((s) => {
        const decoded = decodeAddress(s);
        return (
          decoded !== null && (decoded.prefix === 'hex' || splitPrefix(decoded.prefix).role === 'account')
        );
      }, `${argument} must be an account address: 0x followed by 40 hexadecimal characters, or bech32 such as "biya1…".`),
    ),
  );

/** An address of any role (account, operator, consensus), `0x…` or bech32 of 20 bytes. */
export const address = (argument: string): Rule =>
  optional(
    v.pipe(
      v.string(),
      ...textChecks(argument),
      v.check(
        (s) => decodeAddress(s) !== null,
        `${argument} must be an address: 0x followed by 40 hexadecimal characters, or bech32 such as "biyavaloper1…".`,
      ),
    ),
  );

/** An integer of at least `min`: `height must be 1 or more; got 0.` */
export const atLeast = (argument: string, min: number): Rule =>
  optional(
    v.pipe(
      v.number(),
      v.check(
        (n) => n >= min,
        (issue) => `${argument} must be ${min} or more; got ${issue.input}.`,
      ),
    ),
  );

/** An integer within bounds: `pageSize must be between 1 and 100; got 500.` */
export const between = (argument: string, min: number, max: number): Rule =>
  optional(
    v.pipe(
      v.number(),
      v.check(
        (n) => n >= min && n <= max,
        (issue) => `${argument} must be between ${min} and ${max}; got ${issue.input}.`,
      ),
    ),
  );

/** Text of a fixed form: `hash must be 0x followed by 64 hexadecimal characters.` */
export const matching = (argument: string, pattern: RegExp, form: string): Rule =>
  optional(
    v.pipe(
      v.string(),
      v.check((s) => pattern.test(s), `${argument} must be ${form}.`),
    ),
  );

/**
 * A global object id of this graph (node(id:)), under the rules of the field it stands for: the
 * kind of id says which (ids.ts, nodes.ts).
 */
export const globalId = (argument: string): Rule =>
  optional(
    v.pipe(
      v.string(),
      v.rawCheck(({ dataset, addIssue }) => {
        const problem = dataset.typed ? idProblem(dataset.value) : null;
        if (problem) addIssue({ message: `${argument} ${problem}` });
      }),
    ),
  );

/**
 * Global object ids, at most `max` of them (nodes(ids:)). One id that breaks its rules refuses the
 * whole list, before any of it is read: no partial upstream work, and one error that names the id.
 */
export const globalIds = (argument: string, max: number): Rule =>
  optional(
    v.pipe(
      v.array(v.string()),
      v.check(
        (ids) => ids.length <= max,
        (issue) => `${argument} holds ${(issue.input as unknown[]).length} ids; at most ${max} are allowed.`,
      ),
      v.rawCheck(({ dataset, addIssue }) => {
        if (!dataset.typed || dataset.value.length > max) return;
        for (const [index, id] of dataset.value.entries()) {
          const problem = idProblem(id);
          if (!problem) continue;
          const message = `${argument}[${index}] ${problem} The whole list is refused: none of the ids was read.`;
          return addIssue({ message });
        }
      }),
    ),
  );

/** A transaction hash: `hash must be 0x followed by 64 hexadecimal characters.` */
export const transactionHash = (argument: string): Rule =>
  matching(argument, /^0x[0-9a-fA-F]{64}$/, '0x followed by 64 hexadecimal characters');

/**
 * What `rule` says of `value`: the message of its first issue, or null when the value keeps it
 * (how an id's parts are held to the rules of the arguments they stand for). The rules are
 * synchronous; one that is not cannot decide here, and refuses.
 */
export function ruleMessage(rule: Rule, value: unknown): string | null {
  const result = rule['~standard'].validate(value);
  if (result instanceof Promise) return 'The rule cannot be checked here.';
  return result.issues?.[0]?.message ?? null;
}

/** A buyback round's slots: a positive 32-bit integer. */
export const totalSlots: Rule = optional(
  v.pipe(
    v.number(),
    v.check(
      (n) => n >= 1 && n <= INT32_MAX,
      (issue) => `input.totalSlots must be a positive integer; got ${issue.input}.`,
    ),
  ),
);

/**
 * What relates the fields of a buyback round update: minAmount ≤ maxAmount, startTime before
 * endTime (each field's own form is its scalar's: Amount, DateTime).
 */
const roundFields = v.looseObject({
  minAmount: v.nullish(v.string()),
  maxAmount: v.nullish(v.string()),
  startTime: v.nullish(v.string()),
  endTime: v.nullish(v.string()),
});

export const roundChange: Rule = v.pipe(
  roundFields,
  v.forward(
    v.check(
      (input) => {
        const { minAmount, maxAmount } = input;
        return !minAmount || !maxAmount || compareDecimal(minAmount, maxAmount) <= 0;
      },
      ({ input: { minAmount, maxAmount } }) => {
        return `input.minAmount (${minAmount}) must not exceed input.maxAmount (${maxAmount}).`;
      },
    ),
    ['minAmount'],
  ),
  v.forward(
    v.check((input) => {
      const { startTime, endTime } = input;
      return !startTime || !endTime || parseTimestamp(startTime) < parseTimestamp(endTime);
    }, 'input.startTime must be before input.endTime.'),
    ['startTime'],
  ),
);

/** The first issue of a failed validation, as the contract's error: BAD_USER_INPUT naming the argument. */
export function ruleError(failure: { issues: readonly StandardSchemaV1.Issue[] }): GatewayError {
  const issue = failure.issues[0];
  const argument = (issue?.path ?? [])
    .map((segment) => (typeof segment === 'object' ? String(segment.key) : String(segment)))
    .join('.');
  return badUserInput(argument, issue?.message ?? 'Invalid argument.');
}
