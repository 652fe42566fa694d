import { readdirSync, readFileSync } from 'node:fs';
import { parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import { exampleVariables } from '../../src/devnet/examples.js';
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
    return { name: operation?.name?.value as string, text, keys };
  });

const env = useGatewayOnDevnet();

describe('operations/', () => {
  it('has example variables for every operation, and only for those', () => {
    expect(Object.keys(exampleVariables(env.devnet.data)).sort()).toEqual(
      operations.map((o) => o.name).sort(),
    );
  });

  it.each(operations.map((o) => [o.name, o.text, o.keys] as const))(
    '%s answers with data and no error',
    async (name, text, keys) => {
      const res = await env.gql(text, {
        variables: exampleVariables(env.devnet.data)[name],
        token: env.devnet.token,
      });
      expect(res.errors).toBeUndefined();
      for (const [field, value] of Object.entries(res.data ?? {})) {
        expect(value, field).not.toBeNull();
      }
      expect(Object.keys(res.data ?? {})).toEqual(keys);
    },
  );
});
