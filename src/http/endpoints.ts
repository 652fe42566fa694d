import type { Plugin } from 'graphql-yoga';
import type { LiveUpdates } from '../live/index.js';
import type { GatewayMetrics } from '../ops/metrics.js';
import type { RedisStore } from '../scale/redis.js';
import type { Upstreams } from '../upstream/index.js';

export interface OperationalEndpointsOptions {
  upstreams: Upstreams;
  metrics: GatewayMetrics;
  /** What `/metrics` serves; this gateway's registry unless given (a cluster worker: every worker's). */
  scrape?: (() => Promise<string>) | undefined;
  /** Reported on `/readyz` when the gateway has one, never required. */
  redis?: RedisStore | null;
  /** Who polls each live source this process has subscribers for (on `/readyz`). */
  live?: LiveUpdates;
}

/** Sources by their public names: a credential's hash stays out of the answer. */
const publicHolders = (pollers: Record<string, string>) =>
  Object.fromEntries(
    Object.entries(pollers).map(([source, holder]) => [
      source.startsWith('failed:') ? 'failed' : source,
      holder,
    ]),
  );

const json = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });

/**
 * `/healthz`: the process is up. `/readyz`: 200 only when every upstream answers.
 * `/metrics`: Prometheus text.
 */
export function useOperationalEndpoints({
  upstreams,
  metrics,
  scrape = () => metrics.registry.metrics(),
  redis = null,
  live,
}: OperationalEndpointsOptions): Plugin {
  return {
    async onRequest({ url, endResponse }) {
      if (url.pathname === '/healthz') endResponse(json(200, { status: 'ok' }));
      else if (url.pathname === '/readyz') {
        const [upstreamsUp, redisUp, pollers] = await Promise.all([
          upstreams.ping(),
          redis?.ping(),
          live?.hub.holders(),
        ]);
        const ready = Object.values(upstreamsUp).every(Boolean);
        // Redis is reported, never required: without it answers come from the upstreams.
        endResponse(
          json(ready ? 200 : 503, {
            status: ready ? 'ready' : 'not ready',
            upstreams: upstreamsUp,
            ...(redis ? { redis: redisUp ? 'up' : 'down' } : {}),
            // Each live source polled for this process's subscribers, and who polls it.
            ...(pollers && Object.keys(pollers).length > 0 ? { live: publicHolders(pollers) } : {}),
          }),
        );
      } else if (url.pathname === '/metrics') {
        const text = await scrape();
        endResponse(new Response(text, { headers: { 'content-type': metrics.registry.contentType } }));
      }
    },
  };
}
