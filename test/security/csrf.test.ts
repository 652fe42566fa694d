import { describe, expect, it } from 'vitest';
import { registering, useGatewayOnDevnet } from '../gateway/helpers.js';

/**
 * The CSRF exemption (contract.md §7): a GET without the CSRF header runs only when it is a
 * subscription asked for as `text/event-stream`, which is what a browser's EventSource sends. A
 * cross-site `<img src>` or link that asks for an event stream must not run a query with the
 * visitor's cookies or network position.
 */

const env = useGatewayOnDevnet();
env.serveOverHttp();

const get = (query: string, extra = '') =>
  fetch(`${env.url}?query=${encodeURIComponent(query)}${extra}`, {
    headers: { accept: 'text/event-stream' },
  });

describe('a GET without the CSRF header', () => {
  const queries = [
    { label: 'a query', query: '{ validators(pageSize: 5) { nodes { moniker } } }', extra: '' },
    {
      label: 'a query named among a subscription',
      query: 'query Q { validatorStatistics { totalValidators } } subscription S { blockAdded { height } }',
      extra: '&operationName=Q',
    },
    { label: 'a document that does not parse', query: '{ validators(', extra: '' },
  ];
  for (const { label, query, extra } of queries) {
    it(`is refused for ${label} asking for an event stream, before any upstream call`, async () => {
      const res = await get(query, extra);
      expect(res.status).toBe(403);
      expect(await res.text()).toContain('CSRF');
      expect(env.devnet.requests).toEqual([]);
    });
  }

  it('runs a subscription asked for as text/event-stream (the positive control: EventSource)', async () => {
    const controller = new AbortController();
    const res = await fetch(
      `${env.url}?query=${encodeURIComponent('subscription { validatorStatisticsUpdated { totalValidators } }')}`,
      {
        headers: { accept: 'text/event-stream' },
        signal: controller.signal,
      },
    );
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    controller.abort();
  });

  it("runs it on Yoga's path too: an EventSource's subscription sent with its APQ hash, which the adapter leaves to Yoga", async () => {
    const query = 'subscription { validatorStatisticsUpdated { totalValidators } }';
    const res = await get(query, `&extensions=${encodeURIComponent(JSON.stringify(registering(query)))}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    await res.body?.cancel();
  });
});
