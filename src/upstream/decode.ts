/**
 * Runtime checks of upstream JSON at the boundary. A body that breaks them throws ShapeError, which
 * the clients turn into UPSTREAM_ERROR: a malformed upstream never crashes a resolver.
 * Hand-written rather than a schema library: the checks sit on the hot path of every 100-row page.
 */

export class ShapeError extends Error {}

export type Obj = Record<string, unknown>;

export function obj(value: unknown, what: string): Obj {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new ShapeError(`${what} is not an object`);
  return value as Obj;
}

export function list(value: unknown, what: string): unknown[] {
  if (!Array.isArray(value)) throw new ShapeError(`${what} is not an array`);
  return value;
}

export function str(o: Obj, key: string): string {
  const v = o[key];
  if (typeof v !== 'string') throw new ShapeError(`${key} is not a string`);
  return v;
}

export function int(o: Obj, key: string): number {
  const v = o[key];
  if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw new ShapeError(`${key} is not an integer`);
  return v;
}

export function num(o: Obj, key: string): number {
  const v = o[key];
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new ShapeError(`${key} is not a number`);
  return v;
}

export function bool(o: Obj, key: string): boolean {
  const v = o[key];
  if (typeof v !== 'boolean') throw new ShapeError(`${key} is not a boolean`);
  return v;
}

const NUMBER_TEXT = /^-?\d+(\.\d+)?$/;

/** A string holding a decimal number (amounts, shares, rates), kept exactly as sent. */
export function decimal(o: Obj, key: string): string {
  const v = str(o, key);
  if (!NUMBER_TEXT.test(v)) throw new ShapeError(`${key} is not a decimal string`);
  return v;
}

export function strings(o: Obj, key: string): string[] {
  return list(o[key], key).map((item, i) => {
    if (typeof item !== 'string') throw new ShapeError(`${key}[${i}] is not a string`);
    return item;
  });
}

const camel = (key: string) => key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

/**
 * Tolerant reads for free-form upstream data (the explorer's `data`): the snake_case field or its
 * camelCase spelling; null when absent or of another type.
 */
export const loose = {
  value(o: Obj, key: string): unknown {
    return o[key] ?? o[camel(key)] ?? null;
  },
  str(o: Obj, key: string): string | null {
    const v = loose.value(o, key);
    return typeof v === 'string' ? v : typeof v === 'number' ? String(v) : null;
  },
  int(o: Obj, key: string): number | null {
    const v = loose.value(o, key);
    const n = typeof v === 'string' && /^-?\d{1,15}$/.test(v) ? Number(v) : v;
    return typeof n === 'number' && Number.isSafeInteger(n) ? n : null;
  },
  bool(o: Obj, key: string): boolean | null {
    const v = loose.value(o, key);
    return typeof v === 'boolean' ? v : null;
  },
  decimal(o: Obj, key: string): string | null {
    const v = loose.value(o, key);
    const text = typeof v === 'number' && Number.isSafeInteger(v) ? String(v) : v;
    return typeof text === 'string' && NUMBER_TEXT.test(text) ? text : null;
  },
};
