import type { RequestListener } from 'node:http';
import type { LiveUpdates } from '../../live/index.js';
import type { GatewayMetrics } from '../../ops/metrics.js';
import type { RedisStore } from '../../scale/redis.js';
import type { Upstreams } from '../../upstream/index.js';
import { type HttpStagePlugin, withHttpStage } from '../routing.js';

/** What `/metrics` serves, wherever it is served: the gateway's registry, or `scrape` when given. */
export interface MetricsSource {
  metrics: GatewayMetrics;
  /** Instead of this gateway's registry (a cluster worker: every worker's, from the primary). */
  scrape?: (() => Promise<string>) | undefined;
}

export interface OperationalEndpointsOptions extends MetricsSource {
  upstreams: Upstreams;
  /**
   * METRICS_PORT: set (a port, 0 included), `/metrics` is served there alone (metricsListener) and
   * the public port answers 404 for it; null or absent, the public port serves it.
   */
  metricsPort?: number | null;
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

/** Prometheus text and its media type, as `/metrics` answers it on either port. */
function scraper({ metrics, scrape = () => metrics.registry.metrics() }: MetricsSource) {
  return { text: scrape, contentType: metrics.registry.contentType };
}

/**
 * The listener of METRICS_PORT's server (http/node-server.ts): `GET /metrics` (whatever its query
 * string), the same text the public port would serve, and 404 for anything else. Scrapers reach
 * it inside the cluster; the Service and the ingress that expose the public port never do
 * (operation names, upstream endpoints and cache sizes are no one else's business).
 */
export function metricsListener(source: MetricsSource): RequestListener {
  const { text, contentType } = scraper(source);
  return (req, res) => {
    const path = req.url?.split('?', 1)[0];
    if (req.method !== 'GET' || path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('Not Found');
      return;
    }
    text().then(
      (body) => res.writeHead(200, { 'content-type': contentType }).end(body),
      // A cluster worker whose primary did not answer: the scrape fails, the process does not.
      () => res.writeHead(503, { 'content-type': 'text/plain; charset=utf-8' }).end('Metrics unavailable'),
    );
  };
}

/** How long one check of the upstreams (and Redis, and the live leases) stands for every `/readyz`. */
const READY_REUSE_MS = 1_000;

/**
 * `/readyz`'s body: what this process knows of its upstreams, Redis and live sources, from one
 * check at a time, made at most once a second whatever the number of probes. A probe never waits
 * for it: it gets the last finished check (the state of the upstreams is information, never a
 * reason to pull the pod, contract.md §8), and a check older than a second starts the next. Before
 * the first check has finished, the upstreams read `null` (not known yet).
 */
function readiness({
  upstreams,
  redis,
  live,
}: Pick<OperationalEndpointsOptions, 'upstreams' | 'redis' | 'live'>) {
  const check = async (): Promise<string> => {
    const [upstreamsUp, redisUp, pollers] = await Promise.all([
      upstreams.ping(),
      redis?.ping(),
      live?.hub.holders(),
    ]);
    return JSON.stringify({
      status: 'ready',
      upstreams: upstreamsUp,
      // Redis is reported, never required: without it answers come from the upstreams.
      ...(redis ? { redis: redisUp ? 'up' : 'down' } : {}),
      // Each live source polled for this process's subscribers, and who polls it (an opaque id).
      ...(pollers && Object.keys(pollers).length > 0 ? { live: publicHolders(pollers) } : {}),
    });
  };
  const unknown = JSON.stringify({ status: 'ready', upstreams: { scan: null, explorer: null, stake: null } });
  let last = unknown;
  let checkedAt = Number.NEGATIVE_INFINITY;
  let checking = false;
  return (): string => {
    if (!checking && Date.now() - checkedAt >= READY_REUSE_MS) {
      checking = true;
      check()
        .then((text) => {
          last = text;
        })
        // A check that fails outright (a bug) leaves what the last one said.
        .catch(() => undefined)
        .finally(() => {
          checkedAt = Date.now();
          checking = false;
        });
    }
    return last;
  };
}

/** The paths this plugin answers. */
const ENDPOINTS = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * `/healthz`: the process is up. `/readyz`: 200 while this process serves (it listens and has its
 * schema), with what it last knew of its upstreams, Redis and live sources in the body (see
 * `readiness`), and 503 from the moment it starts shutting down: the one reason to take it out of
 * a load balancer. An upstream that is down fails the queries that need it (coded errors, partial
 * data), and shows in `upstream_circuit_state`, in the body and in alerts; pulling every pod for it
 * would also drop the queries and streams that never call it. `/metrics`: Prometheus text, here
 * unless METRICS_PORT serves it (then this port answers 404 for it, as for any path it lacks).
 */
export function useOperationalEndpoints({
  upstreams,
  metrics,
  scrape,
  metricsPort = null,
  redis = null,
  live,
  draining = () => false,
}: OperationalEndpointsOptions): HttpStagePlugin {
  const ready = readiness({ upstreams, redis, live });
  const { text, contentType } = scraper({ metrics, scrape });
  const servesMetrics = metricsPort === null;
  return withHttpStage(
    {
      async onRequest({ url, endResponse }) {
        if (url.pathname === '/healthz') endResponse(json(200, { status: 'ok' }));
        else if (url.pathname === '/readyz' && draining()) endResponse(json(503, { status: 'draining' }));
        else if (url.pathname === '/readyz') {
          endResponse(
            new Response(ready(), { status: 200, headers: { 'content-type': 'application/json' } }),
          );
        } else if (url.pathname === '/metrics' && servesMetrics) {
          endResponse(new Response(await text(), { headers: { 'content-type': contentType } }));
        }
      },
    },
    { declines: ({ path }) => (ENDPOINTS.has(path) ? 'an operational endpoint' : null) },
  );
}
