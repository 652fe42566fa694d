import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { type Devnet, startDevnet } from '../../src/devnet/index.js';
import { devnetOptions, type ServedGateway, serveGateway } from '../gateway/helpers.js';
import { type Subscription, subscribe } from '../support/sse.js';
import { until } from '../support/until.js';

/**
 * A revoked token still joined (issue 35): subscribers of one token share its group, and before, a
 * subscriber joining an existing group was let in unchecked, so that a token the explorer now
 * refuses got HTTP 200 and the group's events; and a group whose poll the explorer refused kept
 * polling with that token for ever. Now each joiner's token is checked (one explorer read), and a
 * refused poll ends every member's stream with UNAUTHENTICATED.
 */

const FAILED = 'subscription { failedTransactionAdded { hash } }';

describe('private subscriptions and tokens the explorer stops accepting', () => {
  let devnet: Devnet;
  let served: ServedGateway | null = null;
  const open: Subscription[] = [];

  beforeAll(async () => {
    devnet = await startDevnet(devnetOptions({ record: true }));
  });
  afterAll(async () => {
    await devnet?.close();
  });
  afterEach(async () => {
    for (const s of open.splice(0)) s.close();
    await served?.close();
    served = null;
  });

  async function start(pollMs: number) {
    served = await serveGateway(
      { live: { ...loadConfig({}).live, pollMs, leaseMs: 2 * pollMs } },
      devnet.urls,
    );
    return served;
  }
  const follow = async (url: string, token: string) => {
    const s = await subscribe(url, FAILED, { token });
    open.push(s);
    return s;
  };
  const explorerReadsWith = (token: string) =>
    devnet.requests.filter((r) => r.service === 'explorer' && r.headers.authorization === `Bearer ${token}`);

  it('refuses a revoked token that joins the group of its earlier subscribers: 401, no stream', async () => {
    const token = 'joiner-token';
    devnet.grantToken(token);
    // No poll between the two subscriptions: the group's first poll is its only one here.
    const { gateway, url } = await start(600_000);
    const first = await follow(url, token);
    expect(first.status).toBe(200);
    await gateway.live.hub.afterPoll('failed');
    devnet.revokeToken(token);
    const before = explorerReadsWith(token).length;
    const joiner = await follow(url, token);
    expect(joiner.status).toBe(401);
    // The join was checked by one explorer read with the token, which the explorer refused.
    expect(explorerReadsWith(token).length).toBe(before + 1);
    expect((await gateway.metrics.subscriptions.get()).values[0]?.value).toBe(1);
  });

  it('ends every stream of a group whose poll the explorer refuses, with UNAUTHENTICATED, and polls no more', async () => {
    const token = 'revoked-token';
    devnet.grantToken(token);
    const { gateway, url } = await start(30);
    const streams = [await follow(url, token), await follow(url, token)];
    await gateway.live.hub.afterPoll('failed');
    devnet.revokeToken(token);
    for (const s of streams) {
      const last = await s.next();
      expect(last.errors.map((e: any) => e.extensions.code)).toEqual(['UNAUTHENTICATED']);
      expect(await s.ended).toBe('complete');
    }
    await until(() => gateway.live.hub.sources().length === 0, {
      within: 1_000,
      what: 'the source given up',
    });
    expect((await gateway.metrics.subscriptions.get()).values[0]?.value).toBe(0);
    expect((await gateway.metrics.subscriptionGroups.get()).values[0]?.value).toBe(0);
  });
});
