import type { DialectConfig, UpstreamUrls } from '../config.js';
import type { UpstreamName } from '../errors.js';
import type { UpstreamCallEvent } from '../ops/metrics.js';
import { ExplorerClient } from './explorer/client.js';
import { type ResilienceOptions, UpstreamHttp } from './http.js';
import { ScanClient } from './scan/client.js';
import { StakeClient } from './stake/client.js';

export interface UpstreamSettings {
  urls: UpstreamUrls;
  timeoutMs: number;
  connections: number;
  resilience: ResilienceOptions;
  dialects: DialectConfig;
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

/**
 * A base URL as the clients use it: without a trailing slash, and for staking without a trailing
 * `/stake` either, since every staking route starts with `/stake` (Biya's own client does the same,
 * so either spelling of STAKE_URL works). A path prefix of the explorer's is kept.
 */
export function baseUrl(name: UpstreamName, url: string): string {
  const trimmed = url.replace(/\/+$/, '');
  return name === 'stake' ? trimmed.replace(/\/stake$/, '') : trimmed;
}

export function createUpstreams(settings: UpstreamSettings): Upstreams {
  const { dialects } = settings;
  // A cheap request per upstream that any healthy instance answers without credentials.
  const pingPaths: Record<UpstreamName, string> = {
    scan: `/api/v1/search?${encodeURIComponent(dialects.scanQueryParam)}=1`,
    explorer: '/api/v1/transaction/failed-24h?pagination.page_size=1',
    stake: '/stake/validators?pagination.page_size=1',
  };
  const connect = (name: UpstreamName) =>
    new UpstreamHttp({
      name,
      baseUrl: baseUrl(name, settings.urls[name]),
      timeoutMs: settings.timeoutMs,
      connections: settings.connections,
      resilience: settings.resilience,
      ...(settings.observe ? { observe: settings.observe } : {}),
    });
  const http = { scan: connect('scan'), explorer: connect('explorer'), stake: connect('stake') };
  const ping = async (name: UpstreamName) => {
    try {
      await http[name].get(pingPaths[name]);
      return true;
    } catch (error) {
      const status = (error as { status?: number }).status;
      return status !== undefined && status < 500;
    }
  };
  return {
    scan: new ScanClient(http.scan, { queryParam: dialects.scanQueryParam }),
    explorer: new ExplorerClient(http.explorer, { successCodes: dialects.explorerSuccessCodes }),
    stake: new StakeClient(http.stake, {
      successCodes: dialects.explorerSuccessCodes,
      bech32Prefix: dialects.bech32Prefix,
      validatorMaxPages: dialects.validatorMaxPages,
    }),
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
