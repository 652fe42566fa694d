import type { UpstreamName } from '../errors.js';
import type { UpstreamCallEvent } from '../metrics.js';
import { ExplorerClient } from './explorer/client.js';
import { type ResilienceOptions, UpstreamHttp } from './http.js';
import { ScanClient } from './scan/client.js';
import { StakeClient } from './stake/client.js';

export interface UpstreamSettings {
  urls: Record<UpstreamName, string>;
  timeoutMs: number;
  connections: number;
  resilience: ResilienceOptions;
  observe?: (event: UpstreamCallEvent) => void;
}

export interface Upstreams {
  scan: ScanClient;
  explorer: ExplorerClient;
  stake: StakeClient;
  /** Each upstream's circuit: closed, open or half-open. */
  circuits(): Record<UpstreamName, UpstreamHttp['circuit']>;
  /** Whether each upstream answers HTTP at all (any status below 500), for readiness. */
  ping(): Promise<Record<UpstreamName, boolean>>;
  close(): Promise<void>;
}

/** A cheap request per upstream that any healthy instance answers without credentials. */
const PING_PATHS: Record<UpstreamName, string> = {
  scan: '/api/v1/search?q=1',
  explorer: '/api/v1/transaction/failed-24h?pagination.page_size=1',
  stake: '/stake/validators?pagination.page_size=1',
};

export function createUpstreams(settings: UpstreamSettings): Upstreams {
  const connect = (name: UpstreamName) =>
    new UpstreamHttp({
      name,
      baseUrl: settings.urls[name],
      timeoutMs: settings.timeoutMs,
      connections: settings.connections,
      resilience: settings.resilience,
      ...(settings.observe ? { observe: settings.observe } : {}),
    });
  const http = { scan: connect('scan'), explorer: connect('explorer'), stake: connect('stake') };
  const ping = async (name: UpstreamName) => {
    try {
      await http[name].get(PING_PATHS[name]);
      return true;
    } catch (error) {
      const status = (error as { status?: number }).status;
      return status !== undefined && status < 500;
    }
  };
  return {
    scan: new ScanClient(http.scan),
    explorer: new ExplorerClient(http.explorer),
    stake: new StakeClient(http.stake),
    circuits: () => ({ scan: http.scan.circuit, explorer: http.explorer.circuit, stake: http.stake.circuit }),
    async ping() {
      const [scan, explorer, stake] = await Promise.all([ping('scan'), ping('explorer'), ping('stake')]);
      return { scan, explorer, stake };
    },
    async close() {
      await Promise.all(Object.values(http).map((h) => h.close()));
    },
  };
}
