import type { UpstreamName } from '../errors.js';
import { ExplorerClient } from './explorer/client.js';
import { UpstreamHttp } from './http.js';
import { ScanClient } from './scan/client.js';
import { StakeClient } from './stake/client.js';

export interface UpstreamSettings {
  urls: Record<UpstreamName, string>;
  timeoutMs: number;
  connections: number;
}

export interface Upstreams {
  scan: ScanClient;
  explorer: ExplorerClient;
  stake: StakeClient;
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
  const http = {
    scan: new UpstreamHttp({
      name: 'scan',
      baseUrl: settings.urls.scan,
      timeoutMs: settings.timeoutMs,
      connections: settings.connections,
    }),
    explorer: new UpstreamHttp({
      name: 'explorer',
      baseUrl: settings.urls.explorer,
      timeoutMs: settings.timeoutMs,
      connections: settings.connections,
    }),
    stake: new UpstreamHttp({
      name: 'stake',
      baseUrl: settings.urls.stake,
      timeoutMs: settings.timeoutMs,
      connections: settings.connections,
    }),
  };
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
    async ping() {
      const [scan, explorer, stake] = await Promise.all([ping('scan'), ping('explorer'), ping('stake')]);
      return { scan, explorer, stake };
    },
    async close() {
      await Promise.all(Object.values(http).map((h) => h.close()));
    },
  };
}
