/**
 * Runtime checks of upstream JSON at the boundary. A body that breaks them throws ShapeError, which
 * the clients turn into UPSTREAM_ERROR: a malformed upstream never crashes a resolver.
 * Hand-written rather than a schema library: the checks sit on the hot path of every 100-row page.
 *
 * Two dialects reach this layer (real-upstreams.md): upstream-api.md's snake_case and the
 * production services' protojson (lowerCamelCase keys, 64-bit integers as strings, enums by name).
 * This file is the one place that knows both spellings of a key: readers name a key in
 * lowerCamelCase and `field` reads it in whichever spelling the object has (the body is read as it
 * came, never copied), and `camelKeys` renames a free-form object's keys for the explorer's loose
 * reads. The readers accept both encodings of a value.
 */

export class ShapeError extends Error {}

export type Obj = Record<string, unknown>;

const camelCache = new Map<string, string>();
const MAX_CACHED_KEYS = 10_000;

/** `operator_address` → `operatorAddress`, `rewards_24h` → `rewards24h`; camelCase keys stay as they are. */
function camelKey(key: string): string {
  if (key.indexOf('_') === -1) return key;
  let camel = camelCache.get(key);
  if (camel === undefined) {
    camel = key.replace(/_+([a-z0-9])/g, (_, c: string) => c.toUpperCase());
    // Keys come from upstream bodies: bounded, so a hostile upstream cannot grow the cache.
    if (camelCache.size < MAX_CACHED_KEYS) camelCache.set(key, camel);
  }
  return camel;
}

/** Keys the readers name (this code's own, so a bounded set), in snake_case. */
const snakeCache = new Map<string, string>();

/**
 * `operatorAddress` → `operator_address`, `rewards24h` → `rewards_24h`: upstream-api.md's spelling
 * of a key, which `camelKey` turns back into the same name.
 */
function snakeKey(key: string): string {
  let snake = snakeCache.get(key);
  if (snake === undefined) {
    snake = key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`).replace(/([a-z])(\d)/g, '$1_$2');
    if (camelKey(snake) !== key) throw new Error(`no snake_case spelling of ${key}`);
    snakeCache.set(key, snake);
  }
  return snake;
}

/**
 * A member of an upstream object by its lowerCamelCase name, in whichever spelling the object has:
 * protojson's (the name itself) or upstream-api.md's snake_case. When both are there, lowerCamelCase
 * wins.
 */
export function field(o: Obj, key: string): unknown {
  const value = o[key];
  return value !== undefined ? value : o[snakeKey(key)];
}

/**
 * The same JSON with every object key in lowerCamelCase, at every depth, for free-form data read by
 * `loose` below. Objects whose keys are all camelCase already are returned as they are (no copy).
 * The input is never modified: callers may keep it as the untouched `raw`.
 */
export function camelKeys(value: unknown): unknown {
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const item = value[i];
      const next = camelKeys(item);
      if (next !== item) {
        copy ??= value.slice();
        copy[i] = next;
      }
    }
    return copy ?? value;
  }
  if (typeof value !== 'object' || value === null) return value;
  const source = value as Obj;
  let copy: Obj | undefined;
  for (const key in source) {
    const item = source[key];
    const next = camelKeys(item);
    const name = camelKey(key);
    if (copy === undefined && (name !== key || next !== item)) {
      // From here on the object is rebuilt; the keys before this one are copied as they were.
      copy = {};
      for (const earlier in source) {
        if (earlier === key) break;
        copy[earlier] = source[earlier];
      }
    }
    if (copy !== undefined && !(name in copy && name !== key)) copy[name] = next;
  }
  return copy ?? value;
}

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
  const v = field(o, key);
  if (typeof v !== 'string') throw new ShapeError(`${key} is not a string`);
  return v;
}

const INTEGER_TEXT = /^-?\d{1,30}$/;

/**
 * An integer sent as a JSON number or, as protojson sends 64-bit integers, as a string. The result
 * is a JS number, so it must be exact: a string beyond 2^53 is refused rather than rounded.
 */
export function int(o: Obj, key: string): number {
  const n = intOrNull(field(o, key));
  if (n === null) throw new ShapeError(`${key} is not an integer`);
  return n;
}

function intOrNull(v: unknown): number | null {
  if (typeof v === 'number') return Number.isSafeInteger(v) ? v : null;
  if (typeof v === 'string' && INTEGER_TEXT.test(v)) {
    const n = Number(v);
    return Number.isSafeInteger(n) ? n : null;
  }
  return null;
}

/**
 * A 64-bit count kept as decimal text (never through a float): a string of digits as sent, or a
 * JSON number that is an exact integer.
 */
export function int64(o: Obj, key: string): string {
  const v = field(o, key);
  if (typeof v === 'string' && INTEGER_TEXT.test(v)) return v;
  if (typeof v === 'number' && Number.isSafeInteger(v)) return String(v);
  throw new ShapeError(`${key} is not a 64-bit integer`);
}

export function num(o: Obj, key: string): number {
  const v = field(o, key);
  const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isFinite(n)) throw new ShapeError(`${key} is not a number`);
  return n;
}

export function bool(o: Obj, key: string): boolean {
  const v = field(o, key);
  if (typeof v !== 'boolean') throw new ShapeError(`${key} is not a boolean`);
  return v;
}

/**
 * A proto enum, sent as its number or as its name (protojson sends names). `names` maps each name
 * this gateway knows to its number, `values` each known number to its value in the graph. A value
 * outside them is no shape error (a service may add values before the gateway learns them): its
 * `value` is null and its `code` the number sent, or 0 for an unknown name, as protojson reads one
 * when it discards unknown values.
 */
export function enumValue<T extends string>(
  o: Obj,
  key: string,
  names: Readonly<Record<string, number>>,
  values: readonly T[],
): { code: number; value: T | null } {
  const v = field(o, key);
  if (typeof v === 'string' && !/^-?\d+$/.test(v)) {
    const code = Object.hasOwn(names, v) ? (names[v] as number) : null;
    return code === null ? { code: 0, value: null } : { code, value: values[code] ?? null };
  }
  const code = int(o, key);
  return { code, value: values[code] ?? null };
}

const NUMBER_TEXT = /^-?\d+(\.\d+)?$/;

/** A decimal number (amounts, shares, rates) kept exactly as sent: a string, or an exact integer. */
export function decimal(o: Obj, key: string): string {
  const v = field(o, key);
  if (typeof v === 'number' && Number.isSafeInteger(v)) return String(v);
  if (typeof v !== 'string' || !NUMBER_TEXT.test(v)) throw new ShapeError(`${key} is not a decimal string`);
  return v;
}

export function strings(o: Obj, key: string): string[] {
  return list(field(o, key), key).map((item, i) => {
    if (typeof item !== 'string') throw new ShapeError(`${key}[${i}] is not a string`);
    return item;
  });
}

/**
 * Tolerant reads for free-form upstream data (the explorer's `data`, a protobuf Struct): the first
 * of the given names that holds a value of the right kind; null when none does. A name may be a
 * dotted path into a nested object (`metadata.decimals`).
 */
export const loose = {
  value(o: Obj, names: readonly string[]): unknown {
    for (const name of names) {
      const v = name.includes('.') ? path(o, name) : o[name];
      if (v !== undefined && v !== null && v !== '') return v;
    }
    return null;
  },
  str(o: Obj, ...names: string[]): string | null {
    const v = loose.value(o, names);
    return typeof v === 'string' ? v : typeof v === 'number' ? String(v) : null;
  },
  int(o: Obj, ...names: string[]): number | null {
    return intOrNull(loose.value(o, names));
  },
  bool(o: Obj, ...names: string[]): boolean | null {
    const v = loose.value(o, names);
    return typeof v === 'boolean' ? v : null;
  },
  decimal(o: Obj, ...names: string[]): string | null {
    const v = loose.value(o, names);
    const text = typeof v === 'number' && Number.isSafeInteger(v) ? String(v) : v;
    return typeof text === 'string' && NUMBER_TEXT.test(text) ? text : null;
  },
  strings(o: Obj, ...names: string[]): string[] | null {
    const v = loose.value(o, names);
    return Array.isArray(v) && v.every((item) => typeof item === 'string') ? (v as string[]) : null;
  },
};

function path(o: Obj, dotted: string): unknown {
  let at: unknown = o;
  for (const part of dotted.split('.')) {
    if (typeof at !== 'object' || at === null || Array.isArray(at)) return undefined;
    at = (at as Obj)[part];
  }
  return at;
}
