import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadPersistedOperations } from '../../src/config.js';
import { createGateway, type Gateway } from '../../src/gateway.js';
import { listen, readAnswer, testSettings, useGatewayOnDevnet } from '../gateway/helpers.js';

/**
 * A persisted-operations manifest is looked up by its own entries only: ids that name members of
 * every JavaScript object (`constructor`, `__proto__`, `toString`) are unknown ids, not a 500.
 */

const MANIFEST = new URL('../generated/persisted-documents.json', import.meta.url).pathname;
const env = useGatewayOnDevnet();
let gateway: Gateway;
let http: Awaited<ReturnType<typeof listen>>;

beforeAll(async () => {
  gateway = createGateway({
    ...testSettings(),
    upstreamUrls: env.devnet.urls,
    persistedOperations: loadPersistedOperations(MANIFEST),
  });
  http = await listen(gateway);
});
afterAll(async () => {
  await http.close();
  await gateway.close();
});

describe('a manifest id that names an object member', () => {
  it.each(['constructor', '__proto__', 'toString', 'hasOwnProperty', 'sha256:constructor'])(
    '%s is an unknown persisted operation, before any upstream call',
    async (documentId) => {
      const res = await fetch(http.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ documentId }),
      });
      expect(res.status).toBe(200);
      expect((await readAnswer(res)).errors).toEqual([
        expect.objectContaining({
          message: 'Unknown persisted operation.',
          extensions: expect.objectContaining({ code: 'BAD_USER_INPUT' }),
        }),
      ]);
      expect(env.devnet.requests).toEqual([]);
    },
  );
});
