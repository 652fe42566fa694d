import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type Server } from 'node:net';
import { isScalarType, isSpecifiedScalarType } from 'graphql';
import { afterEach, describe, expect, expectTypeOf, it } from 'vitest';
import { gatewayScalars } from '../../codegen.js';
import type {
  BlockPageQuery,
  DelegatorPortfolioQuery,
  ValidatorTableQuery,
} from '../../operations/generated/graphql.js';
import { loadConfig } from '../../src/config.js';
import { startDevnet } from '../../src/devnet/index.js';
import { schema } from '../../src/schema/index.js';
import { subscribe } from '../support/sse.js';
import { serveGateway } from './helpers.js';

/**
 * A newcomer's first hour, from a fresh clone (issue 48): the typed client a frontend copies,
 * a port already taken, a chain that goes on across restarts, a resume ahead of the head.
 */

type Nodes<T> = T extends { nodes: readonly (infer N)[] } ? N : never;

describe('a typed client', () => {
  it('maps every custom scalar of the schema, and types amounts, decimals and times as strings', () => {
    const custom = Object.values(schema.getTypeMap())
      .filter((type) => isScalarType(type) && !isSpecifiedScalarType(type))
      .map((type) => type.name)
      .sort();
    expect(Object.keys(gatewayScalars).sort()).toEqual(custom);
    // Checked by `npm run typecheck`: the generated documents carry the mapping.
    expectTypeOf<NonNullable<BlockPageQuery['block']>['blockTime']>().toEqualTypeOf<string>();
    type Validator = Nodes<ValidatorTableQuery['validators']>;
    expectTypeOf<Validator['tokens']>().toEqualTypeOf<string>();
    type Delegation = Nodes<DelegatorPortfolioQuery['delegations']>;
    expectTypeOf<Delegation['shares']>().toEqualTypeOf<string>();
  });

  it('marks the compatibility fields @deprecated, naming what to read instead', () => {
    const reason = (type: string, field: string) =>
      (
        schema.getType(type) as { getFields(): Record<string, { deprecationReason?: string | null }> }
      ).getFields()[field]?.deprecationReason;
    expect(reason('Validator', 'status')).toBe('Kept for compatibility: read `bondStatus`.');
    expect(reason('BuybackRound', 'status')).toBe('Kept for compatibility: read `state`.');
    expect(reason('Validator', 'bondStatus')).toBeUndefined();
  });
});

/** A port on 127.0.0.1 held by the test (another program's, to the process under test). */
async function heldPort(): Promise<{ port: number; server: Server }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as { port: number }).port, server };
}

/** Runs `script` (the gateway's or the devnet's entry) under tsx until it exits: its code and stderr. */
async function runUntilExit(script: string, env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    env: {
      ...process.env,
      NODE_ENV: 'test',
      HOST: '127.0.0.1',
      PORT: '0',
      DEVNET_BLOCK_MS: '0',
      ...{ SCAN_PORT: '0', EXPLORER_PORT: '0', STAKE_PORT: '0' },
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  child.stdout.resume();
  const [code] = await once(child, 'exit');
  return { code, stderr };
}

describe('a port already taken', () => {
  const held: Server[] = [];
  afterEach(async () => {
    await Promise.all(held.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
  });
  const hold = async () => {
    const { port, server } = await heldPort();
    held.push(server);
    return port;
  };
  const upstreams = {
    SCAN_URL: 'http://127.0.0.1:9',
    EXPLORER_URL: 'http://127.0.0.1:9',
    STAKE_URL: 'http://127.0.0.1:9',
  };

  it.each([
    { variable: 'PORT', script: 'src/main.ts', env: upstreams },
    { variable: 'METRICS_PORT', script: 'src/main.ts', env: upstreams },
    { variable: 'SCAN_PORT', script: 'src/main.ts', env: {} },
    { variable: 'STAKE_PORT', script: 'src/devnet/main.ts', env: {} },
  ])(
    'stops the process with one line naming $variable and the port ($script)',
    async ({ variable, script, env }) => {
      const port = await hold();
      const { code, stderr } = await runUntilExit(script, { ...env, [variable]: String(port) });
      expect(code).toBe(1);
      const lines = stderr.trimEnd().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(`${variable}=${port}`);
      expect(lines[0]).toContain(`127.0.0.1:${port} is already in use`);
    },
  );
});

describe('a subscriber resuming after a block the chain has not made', () => {
  it('resumes at the head: a chain started again (the devnet restarted) is not silent until it passes the id', async () => {
    const devnet = await startDevnet({ seed: 'newcomer' });
    const served = await serveGateway({ live: { ...loadConfig({}).live, pollMs: 20 } }, devnet.urls);
    try {
      const head = devnet.data.blocks.count;
      const stream = await subscribe(served.url, 'subscription { blockAdded { height } }', {
        headers: { 'last-event-id': String(head + 500) },
      });
      expect(stream.status).toBe(200);
      await served.gateway.live.hub.afterPoll('blocks');
      devnet.advance(2);
      expect((await stream.take(2)).map((e) => e.data.blockAdded.height)).toEqual([head + 1, head + 2]);
      stream.close();
    } finally {
      await served.close();
      await devnet.close();
    }
  });
});
