import { badUserInput } from '../errors.js';
import { decodeAddress, splitPrefix } from '../lib/address.js';
import { compareDecimal, isDecimal, parseTimestamp } from '../lib/decimal.js';
import type { BuybackRoundUpdate, PageArgs } from '../upstream/models.js';
import type { CursorRule } from './page.js';

/**
 * Argument checks that run before any upstream call (contract.md §4). Each failure is
 * BAD_USER_INPUT naming the argument and saying what is wrong with it.
 */

export const MAX_SEARCH_BYTES = 256;
export const MAX_PAGE_SIZE = 100;
const MAX_TEXT = 128;
// biome-ignore lint/suspicious/noControlCharactersInRegex: rejecting control characters is the point
const CONTROL = /[\u0000-\u001f\u007f]/;

export function searchText(argument: string, value: string): string {
  if (value.includes('\0')) throw badUserInput(argument, `${argument} must not contain a NUL character.`);
  const bytes = Buffer.byteLength(value, 'utf8');
  if (bytes > MAX_SEARCH_BYTES) {
    throw badUserInput(
      argument,
      `${argument} is ${bytes} bytes of UTF-8; at most ${MAX_SEARCH_BYTES} are allowed.`,
    );
  }
  return value;
}

/** An identifier-like text argument: 1..128 characters, no control characters. */
export function text(argument: string, value: string): string {
  if (value.length === 0) throw badUserInput(argument, `${argument} must not be empty.`);
  if (value.length > MAX_TEXT)
    throw badUserInput(argument, `${argument} is longer than ${MAX_TEXT} characters.`);
  if (CONTROL.test(value)) throw badUserInput(argument, `${argument} must not contain control characters.`);
  return value;
}

export function optionalText(argument: string, value: string | null | undefined): string | null {
  return value === null || value === undefined ? null : text(argument, value);
}

export function pageArgs(
  args: { page?: number | null; pageSize?: number | null; cursor?: string | null },
  /** The list's cursor rule; a cursor of another form is refused before any upstream call. */
  rule?: Pick<CursorRule<unknown>, 'accepts' | 'form'>,
): PageArgs {
  const page = args.page ?? 1;
  const pageSize = args.pageSize ?? 20;
  if (page < 1) throw badUserInput('page', `page must be 1 or more; got ${page}.`);
  if (pageSize < 1 || pageSize > MAX_PAGE_SIZE) {
    throw badUserInput('pageSize', `pageSize must be between 1 and ${MAX_PAGE_SIZE}; got ${pageSize}.`);
  }
  const cursor = optionalText('cursor', args.cursor);
  if (cursor && rule && !rule.accepts(cursor)) {
    throw badUserInput('cursor', `cursor must be ${rule.form}: pass back a PageInfo.endCursor of this list.`);
  }
  return { page, pageSize, cursor };
}

/**
 * An account address in either encoding the chain uses: `0x` + 40 hex digits, or bech32 of 20 bytes
 * with any prefix (`biya1…`, `byb1…`). Staking is then called in its own encoding.
 */
export function accountAddress(argument: string, value: string): string {
  text(argument, value);
  const decoded = decodeAddress(value);
  if (!decoded || (decoded.prefix !== 'hex' && splitPrefix(decoded.prefix).role !== 'account')) {
    throw badUserInput(
      argument,
      `${argument} must be an account address: 0x followed by 40 hexadecimal characters, or bech32 such as "biya1…".`,
    );
  }
  return value;
}

export function blockHeight(height: number): number {
  if (height < 1) throw badUserInput('height', `height must be 1 or more; got ${height}.`);
  return height;
}

export function transactionHash(hash: string): string {
  if (!/^0x[0-9a-fA-F]{64}$/.test(hash)) {
    throw badUserInput('hash', 'hash must be 0x followed by 64 hexadecimal characters.');
  }
  return hash;
}

export function buybackUpdate(input: BuybackRoundUpdate): BuybackRoundUpdate {
  text('input.roundId', input.roundId);
  const { startTime, endTime, totalSlots, minAmount, maxAmount } = input;
  if (totalSlots !== null && totalSlots !== undefined && totalSlots < 1) {
    throw badUserInput('input.totalSlots', `input.totalSlots must be a positive integer; got ${totalSlots}.`);
  }
  for (const [name, value] of [
    ['input.minAmount', minAmount],
    ['input.maxAmount', maxAmount],
  ] as const) {
    if (value !== null && value !== undefined && !isDecimal(value)) {
      throw badUserInput(name, `${name} must be a non-negative decimal string such as "1500000".`);
    }
  }
  if (minAmount && maxAmount && compareDecimal(minAmount, maxAmount) > 0) {
    throw badUserInput(
      'input.minAmount',
      `input.minAmount (${minAmount}) must not exceed input.maxAmount (${maxAmount}).`,
    );
  }
  for (const [name, value] of [
    ['input.startTime', startTime],
    ['input.endTime', endTime],
  ] as const) {
    if (value !== null && value !== undefined && Number.isNaN(parseTimestamp(value))) {
      throw badUserInput(name, `${name} must be an RFC 3339 timestamp such as "2026-11-22T10:00:00Z".`);
    }
  }
  if (startTime && endTime && parseTimestamp(startTime) >= parseTimestamp(endTime)) {
    throw badUserInput('input.startTime', 'input.startTime must be before input.endTime.');
  }
  return input;
}
