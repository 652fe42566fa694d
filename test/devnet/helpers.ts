import { afterAll, beforeAll, expect } from 'vitest';
import { type Devnet, type DevnetOptions, startDevnet } from '../../src/devnet/index.js';

/** Starts a devnet on free ports for the enclosing test file or block and closes it afterwards. */
export function useDevnet(options: DevnetOptions = {}): () => Devnet {
  let devnet: Devnet | undefined;
  beforeAll(async () => {
    devnet = await startDevnet({ seed: 'test-seed', ...options });
  });
  afterAll(async () => {
    await devnet?.close();
  });
  return () => {
    if (!devnet) throw new Error('devnet not started');
    return devnet;
  };
}

export interface JsonResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

export async function call<T = any>(url: string, init: RequestInit = {}): Promise<JsonResponse<T>> {
  const res = await fetch(url, init);
  return { status: res.status, headers: res.headers, body: (await res.json()) as T };
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/**
 * The wire variants the shared staking and explorer suites run against: the spec dialect, the
 * kratos dialect, and kratos with every option away from its default.
 */
export const VARIANTS: { label: string; options: DevnetOptions }[] = [
  { label: 'spec', options: { dialect: 'spec' } },
  { label: 'kratos', options: { dialect: 'kratos' } },
  {
    label: 'kratos, staking enveloped, explorer code 200, prefix inj',
    options: { dialect: 'kratos', stakeEnvelope: true, explorerSuccessCode: 200, bech32Prefix: 'inj' },
  },
];

/** `delegator_address` → `delegatorAddress`, `rewards_24h` → `rewards24h` (protojson's names). */
export const camel = (name: string) => name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
/** The inverse of `camel` for the devnet's keys: `rewards24h` → `rewards_24h`. */
const snake = (name: string) =>
  name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`).replace(/([a-z])(\d)/g, '$1_$2');

function mapKeys(value: unknown, rename: (key: string) => string): unknown {
  if (Array.isArray(value)) return value.map((item) => mapKeys(item, rename));
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [rename(k), mapKeys(v, rename)]));
}
export const camelKeys = (value: unknown) => mapKeys(value, camel);

/** Every key of a JSON value, at any depth. */
export function allKeys(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(allKeys);
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([k, v]) => [k, ...allKeys(v)]);
}

/**
 * A successful staking answer in the spec's terms, whatever the dialect: the envelope checked and
 * removed, kratos' camelCase keys turned back into snake_case. The dialect suites prove the wire
 * format itself; the shared suites compare meaning with this.
 */
export function stakeAnswer(devnet: Devnet, res: JsonResponse): any {
  expect(res.status).toBe(200);
  let body = res.body;
  if (devnet.dialect.stakeEnvelope) {
    expect(Object.keys(body)).toEqual(['code', 'message', 'data']);
    expect(body).toMatchObject({ code: 0, message: 'success' });
    body = body.data;
  }
  return devnet.dialect.name === 'kratos' ? mapKeys(body, snake) : body;
}

const KRATOS_REASONS: Record<number, string> = {
  400: 'BAD_REQUEST',
  401: 'UNAUTHORIZED',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  409: 'CONFLICT',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
};

/** The error body the staking or explorer service sends in the devnet's dialect. */
export function errorBody(
  devnet: Devnet,
  service: 'stake' | 'explorer',
  status: number,
  message: unknown = expect.any(String),
  reason = KRATOS_REASONS[status],
) {
  if (devnet.dialect.name === 'kratos') return { code: status, reason, message, metadata: {} };
  return service === 'explorer' ? { code: status, message, data: null } : { code: status, message };
}
