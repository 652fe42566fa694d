import { auditServer, serverAudits } from 'graphql-http';
import { describe, expect, it } from 'vitest';
import { useGatewayOnDevnet } from './helpers.js';

/** graphql-http's GraphQL-over-HTTP audits against the gateway on a real socket. */

const env = useGatewayOnDevnet();
env.serveOverHttp();

describe('GraphQL over HTTP', () => {
  it('passes every server audit with no error and no warning', async () => {
    const results = await auditServer({ url: env.url });
    // Every audit of the suite ran and reported.
    expect(results).toHaveLength(serverAudits({ url: env.url }).length);
    const problems = results
      .filter((r) => r.status === 'error' || r.status === 'warn')
      .map((r) => `${r.id} ${r.name}`);
    expect(problems).toEqual([]);
    // What remains are MAY-level notices: GETs without a CSRF header are refused (403) by design.
    for (const r of results.filter((r) => r.status === 'notice')) expect(r.name).toMatch(/GET/);
  });
});
