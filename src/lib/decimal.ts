/** Non-negative decimal text such as "0", "12" or "0.050000000000000000" (no sign, no exponent). */
const DECIMAL_PATTERN = /^\d{1,60}(\.\d{1,36})?$/;

export const isDecimal = (text: string): boolean => DECIMAL_PATTERN.test(text);

/** Compares two strings that match DECIMAL_PATTERN, exactly (no float rounding). */
export function compareDecimal(a: string, b: string): number {
  const [ai = '', af = ''] = a.split('.');
  const [bi = '', bf = ''] = b.split('.');
  const scale = Math.max(af.length, bf.length);
  const x = BigInt(ai + af.padEnd(scale, '0'));
  const y = BigInt(bi + bf.padEnd(scale, '0'));
  return x < y ? -1 : x > y ? 1 : 0;
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;

/** Milliseconds since the epoch of an RFC 3339 timestamp, or NaN when the text is not one. */
export const parseTimestamp = (text: string): number => (RFC3339.test(text) ? Date.parse(text) : Number.NaN);

export const INT32_MAX = 2_147_483_647;
