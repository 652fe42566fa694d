import type { Plugin } from 'graphql-yoga';
import { LRUCache } from 'lru-cache';
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
  /** Whether the process is shutting down: `/readyz` then answers 503 at once. */
  draining?: () => boolean;
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

/** How long one readiness check answers every `/readyz` that asks. */
const READY_REUSE_MS = 1_000;

/** A readiness check's answer, kept as text: each request gets a response of its own. */
interface Readiness {
  status: number;
  text: string;
}

/**
 * `/readyz`'s answer, checked at most once at a time and reused for a second. A check pings every
 * upstream (and Redis, and reads the live leases there), so requests share one instead of each
 * making its own: however many arrive, the upstreams see at most one ping a second from this
 * process. A check that fails outright answers not ready.
 */
function readiness({
  upstreams,
  redis,
  live,
}: Pick<OperationalEndpointsOptions, 'upstreams' | 'redis' | 'live'>): LRUCache<'check', Readiness> {
  const check = async (): Promise<Readiness> => {
    const [upstreamsUp, redisUp, pollers] = await Promise.all([
      upstreams.ping(),
      redis?.ping(),
      live?.hub.holders(),
    ]);
    const ready = Object.values(upstreamsUp).every(Boolean);
    // Redis is reported, never required: without it answers come from the upstreams.
    const body = {
      status: ready ? 'ready' : 'not ready',
      upstreams: upstreamsUp,
      ...(redis ? { redis: redisUp ? 'up' : 'down' } : {}),
      // Each live source polled for this process's subscribers, and who polls it (an opaque id).
      ...(pollers && Object.keys(pollers).length > 0 ? { live: publicHolders(pollers) } : {}),
    };
    return { status: ready ? 200 : 503, text: JSON.stringify(body) };
  };
  return new LRUCache<'check', Readiness>({
    max: 1,
    ttl: READY_REUSE_MS,
    fetchMethod: () => check().catch(() => ({ status: 503, text: JSON.stringify({ status: 'not ready' }) })),
  });
}

/**
 * `/healthz`: the process is up. `/readyz`: 200 only when every upstream answers (one shared
 * check a second, see `readiness`), and 503 from the moment the process starts shutting down.
 * `/metrics`: Prometheus text.
 */
export function useOperationalEndpoints({
  upstreams,
  metrics,
  scrape = () => metrics.registry.metrics(),
  redis = null,
  live,
  draining = () => false,
}: OperationalEndpointsOptions): Plugin {
  const ready = readiness({ upstreams, redis, live });
  return {
    async onRequest({ url, endResponse }) {
      if (url.pathname === '/healthz') endResponse(json(200, { status: 'ok' }));
      else if (url.pathname === '/readyz' && draining()) endResponse(json(503, { status: 'draining' }));
      else if (url.pathname === '/readyz') {
        const { status, text } = await ready.forceFetch('check');
        endResponse(new Response(text, { status, headers: { 'content-type': 'application/json' } }));
      } else if (url.pathname === '/metrics') {
        const text = await scrape();
        endResponse(new Response(text, { headers: { 'content-type': metrics.registry.contentType } }));
      }
    },
  };
}
