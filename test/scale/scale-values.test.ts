import { describe, expect, it } from 'vitest';
import type { RedisRejectedKind } from '../../src/ops/metrics.js';
import { RedisValues } from '../../src/scale/redis-values.js';

/**
 * The values the gateway keeps in Redis (src/scale/redis-values.ts): what one deployment signs or
 * seals under a key is proven under that key alone, by that deployment alone; anything else is
 * null, counted once by its kind, and never throws.
 */

const SECRET = 'scale-values-test-secret-0123456789';
const KEY = 'gw:v2:schema:upstreams:responses:abc';
const OTHER_KEY = 'gw:v2:schema:upstreams:responses:abd';
const TEXT = '1795641812000|{"data":{"block":{"height":5,"hash":"0xabc.def"}}}';

function values(secret = SECRET) {
  const rejected: RedisRejectedKind[] = [];
  return { values: new RedisValues(secret, (kind) => rejected.push(kind)), rejected };
}

describe('signed values', () => {
  it('verify under their own key, readable as they are', () => {
    const { values: v, rejected } = values();
    const stored = v.sign(KEY, TEXT);
    expect(stored.endsWith(`.${TEXT}`)).toBe(true);
    expect(v.verify(KEY, stored, 'responses')).toBe(TEXT);
    // Another instance of the same deployment (same secret) proves it too.
    expect(values().values.verify(KEY, stored, 'responses')).toBe(TEXT);
    expect(rejected).toEqual([]);
  });

  it('do not verify under another key, altered, unsigned, or signed by another deployment', () => {
    const { values: v, rejected } = values();
    const stored = v.sign(KEY, TEXT);
    const forgeries = [
      v.sign(OTHER_KEY, TEXT),
      stored.replace('"height":5', '"height":6'),
      TEXT,
      '',
      '.',
      `${'A'.repeat(43)}.${TEXT}`,
      `${stored.slice(0, 42)}é.${TEXT}`,
      values('another-deployment-secret').values.sign(KEY, TEXT),
    ];
    for (const forged of forgeries) expect(v.verify(KEY, forged, 'validators')).toBeNull();
    expect(rejected).toEqual(forgeries.map(() => 'validators'));
  });
});

describe('sealed values', () => {
  it('open under their own key, and hold nothing of the text in clear', () => {
    const { values: v, rejected } = values();
    const sealed = v.seal(KEY, TEXT);
    expect(sealed).not.toContain('height');
    expect(sealed).not.toContain('0xabc');
    expect(v.open(KEY, sealed, 'event')).toBe(TEXT);
    // A random IV each time: the same text sealed twice is not the same value.
    expect(v.seal(KEY, TEXT)).not.toBe(sealed);
    expect(rejected).toEqual([]);
  });

  it('do not open under another key, altered, signed instead, or sealed by another deployment', () => {
    const { values: v, rejected } = values();
    const sealed = v.seal(KEY, TEXT);
    const [iv, tag, body] = sealed.split('.') as [string, string, string];
    const flipped = `${body.slice(0, 5)}${body[5] === 'A' ? 'B' : 'A'}${body.slice(6)}`;
    const forgeries = [
      v.seal(OTHER_KEY, TEXT),
      `${iv}.${tag}.${flipped}`,
      `${iv}.${tag.slice(0, 10)}.${body}`,
      `${iv}.${tag}.${body}.extra`,
      v.sign(KEY, TEXT),
      TEXT,
      '',
      values('another-deployment-secret').values.seal(KEY, TEXT),
    ];
    for (const forged of forgeries) expect(v.open(KEY, forged, 'state')).toBeNull();
    expect(rejected).toEqual(forgeries.map(() => 'state'));
  });
});
