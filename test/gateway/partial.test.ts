import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Devnet, startDevnet } from '../../src/devnet/index.js';
import { createGateway, type Gateway } from '../../src/gateway.js';
import { until } from '../support/until.js';
import { fetchGateway, graphql, readAnswer, testSettings } from './helpers.js';

/**
 * One upstream broken while the others answer: the broken fields come back null with a coded
 * error, the healthy ones with data, in one HTTP 200 response that leaks nothing of the failure.
 */

const LEAK = 'SELECT * FROM delegations WHERE secret=1 /home/app/src/db.ts:42';

let devnet: Devnet;
let broken: Server;
let brokenUrl: string;
let closedUrl: string;
const gateways: Gateway[] = [];

beforeAll(async () => {
  devnet = await startDevnet({ seed: 'partial' });
  broken = createServer(async (req, res) => {
    if (req.url?.startsWith('/stake/delegator/')) {
      // Delegations still work: only the validator list is broken on this staking service.
      const upstream = await fetch(devnet.urls.stake + req.url);
      res.writeHead(upstream.status, { 'content-type': 'application/json' });
      res.end(await upstream.text());
    } else if (req.url?.startsWith('/api/v1/transaction')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ code: 5003, message: LEAK, data: null }));
    } else if (req.url?.startsWith('/stake/validators')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"validators": [ {"id": 1, "moniker": "x" ');
    } else {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(`Error: ${LEAK}\n    at query (/home/app/src/db.ts:42:7)`);
    }
  });
  await new Promise<void>((resolve) => broken.listen(0, '127.0.0.1', resolve));
  brokenUrl = `http://127.0.0.1:${(broken.address() as AddressInfo).port}`;
  // A port that was open a moment ago and is now closed: connections are refused.
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  closedUrl = `http://127.0.0.1:${(probe.address() as AddressInfo).port}`;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
});

afterAll(async () => {
  await Promise.all(gateways.map((g) => g.close()));
  await new Promise<void>((resolve) => broken.close(() => resolve()));
  await devnet.close();
});

const gatewayWith = (urls: Partial<Devnet['urls']>) => {
  const gateway = createGateway({
    ...testSettings({ explorerToken: 'devnet-token' }),
    upstreamUrls: { ...devnet.urls, ...urls },
  });
  gateways.push(gateway);
  return gateway;
};

describe('partial results', () => {
  it('keeps search data when staking refuses connections', async () => {
    const gateway = gatewayWith({ stake: closedUrl });
    const res = await graphql(
      gateway,
      '{ searchSuggestions(query: "42") { query } validators { nodes { moniker } } }',
    );
    expect(res.status).toBe(200);
    expect(res.data).toEqual({ searchSuggestions: { query: '42' }, validators: null });
    expect(res.errors).toEqual([
      expect.objectContaining({
        path: ['validators'],
        message: 'The staking service is unavailable.',
        extensions: { code: 'UPSTREAM_UNAVAILABLE', upstream: 'stake' },
      }),
    ]);
    expect(JSON.stringify(res)).not.toContain('127.0.0.1');
  });

  it('maps a 500, a non-zero envelope code and a truncated body to UPSTREAM_ERROR without leaking them', async () => {
    const gateway = gatewayWith({ scan: brokenUrl, explorer: brokenUrl, stake: brokenUrl });
    const res = await graphql(
      gateway,
      '{ search(query: "1") { query } failedTransactions { nodes { hash } } validatorStatistics { totalValidators } }',
    );
    expect(res.status).toBe(200);
    expect(res.data).toEqual({ search: null, failedTransactions: null, validatorStatistics: null });
    const byPath = Object.fromEntries((res.errors ?? []).map((e) => [e.path?.[0], e.extensions]));
    expect(byPath).toEqual({
      search: { code: 'UPSTREAM_ERROR', upstream: 'scan' },
      failedTransactions: { code: 'UPSTREAM_ERROR', upstream: 'explorer' },
      validatorStatistics: { code: 'UPSTREAM_ERROR', upstream: 'stake' },
    });
    const text = JSON.stringify(res);
    for (const secret of ['SELECT', 'db.ts', 'devnet-token', brokenUrl, 'stack'])
      expect(text).not.toContain(secret);
  });

  it('keeps a delegation page when only the validator join fails', async () => {
    const gateway = gatewayWith({ stake: brokenUrl });
    const [address, list] = [...devnet.data.delegations].find(([, l]) => l.length >= 2) ?? [];
    const res = await graphql(
      gateway,
      `{ delegations(delegatorAddress: "${address}") { nodes { shares validator { moniker } } } }`,
    );
    expect(res.data.delegations.nodes).toEqual(
      list?.slice(0, 20).map((d) => ({ shares: d.delegation.shares, validator: null })),
    );
    expect(res.errors?.length).toBe(res.data.delegations.nodes.length);
    expect(res.errors?.[0]).toMatchObject({
      path: ['delegations', 'nodes', 0, 'validator'],
      extensions: { code: 'UPSTREAM_ERROR', upstream: 'stake' },
    });
  });

  it('stays ready with an upstream down, reporting each upstream in its readiness', async () => {
    const gateway = gatewayWith({ stake: closedUrl });
    let down: Response | undefined;
    let body: any;
    await until(
      async () => {
        down = await fetchGateway(gateway, '/readyz');
        body = await readAnswer(down);
        return body.upstreams.stake !== null;
      },
      { what: 'a /readyz check that reached the staking service' },
    );
    // The queries that need staking fail with coded errors; the pod stays in the Service for the rest.
    expect(down?.status).toBe(200);
    expect(body).toEqual({ status: 'ready', upstreams: { scan: true, explorer: true, stake: false } });
    const up = await fetchGateway(gatewayWith({}), '/readyz');
    expect(up.status).toBe(200);
    const live = await fetchGateway(gatewayWith({ stake: closedUrl }), '/healthz');
    expect(live.status).toBe(200);
  });
});
