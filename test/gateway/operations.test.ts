import { readdirSync, readFileSync } from 'node:fs';
import { parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { exampleVariables } from '../../src/devnet/examples.js';
import type { Advance } from '../../src/devnet/index.js';
import { subscribe } from '../support/sse.js';
import { useGatewayOnDevnet } from './helpers.js';

/** Every operation the frontends send (operations/) answers from the devnet with no error. */

const DIR = new URL('../../operations/', import.meta.url);
const operations = readdirSync(DIR)
  .filter((f) => f.endsWith('.graphql'))
  .map((file) => {
    const text = readFileSync(new URL(file, DIR), 'utf8');
    const [definition] = parse(text).definitions;
    const operation = definition?.kind === 'OperationDefinition' ? definition : undefined;
    // The response keys of its root fields: what `data` answers.
    const keys = (operation?.selectionSet.selections ?? []).map((s) =>
      s.kind === 'Field' ? (s.alias ?? s.name).value : s.kind,
    );
    return { name: operation?.name?.value as string, kind: operation?.operation, text, keys };
  });

const env = useGatewayOnDevnet({ gateway: { live: { ...loadConfig({}).live, pollMs: 20 } } });
env.serveOverHttp();

/** For each subscription: the source it polls, and whether an advance of the chain is an event for it. */
const LIVE: Record<string, { source: string; moved(advance: Advance): boolean }> = {
  blockAdded: { source: 'blocks', moved: (a) => a.heights.length > 0 },
  failedTransactionAdded: { source: 'failed', moved: (a) => a.failedTxs.length > 0 },
  validatorUpdated: { source: 'validators', moved: (a) => a.validators.length > 0 },
  validatorStatisticsUpdated: { source: 'validators', moved: (a) => a.validators.length > 0 },
};

describe('operations/', () => {
  it('has example variables for every operation, and only for those', () => {
    expect(Object.keys(exampleVariables(env.devnet.data)).sort()).toEqual(
      operations.map((o) => o.name).sort(),
    );
  });

  for (const { name, text, keys } of operations.filter((o) => o.kind !== 'subscription')) {
    it(`${name} answers with data and no error`, async () => {
      const res = await env.gql(text, {
        variables: exampleVariables(env.devnet.data)[name],
        token: env.devnet.token,
      });
      expect(res.errors).toBeUndefined();
      for (const [field, value] of Object.entries(res.data ?? {})) {
        expect(value, field).not.toBeNull();
      }
      expect(Object.keys(res.data ?? {})).toEqual(keys);
    });
  }

  for (const { name, text, keys } of operations.filter((o) => o.kind === 'subscription')) {
    it(`${name} delivers an event with data and no error when the chain moves`, async () => {
      const [field] = keys as [string];
      const live = LIVE[field] as (typeof LIVE)[string];
      const sub = await subscribe(env.url, text, {
        variables: exampleVariables(env.devnet.data)[name] as Record<string, unknown>,
        token: env.devnet.token,
      });
      expect(sub.status).toBe(200);
      await env.gateway.live.hub.afterPoll(live.source);
      while (!live.moved(env.devnet.advance(1)));
      const event = await sub.next();
      expect(event.errors).toBeUndefined();
      expect(Object.keys(event.data)).toEqual(keys);
      expect(event.data[field]).not.toBeNull();
      sub.close();
    });
  }
});
