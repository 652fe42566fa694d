import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { run } from './podman.js';

/**
 * deploy/compose.yaml, checked without an engine (no image registry is reachable here, so it is
 * never brought up in CI): valid against the Compose Specification's schema, with no finding of
 * dclint, and wired together: three gateways on the one image the devnet runs, on the devnet's
 * ports, one Redis, traces through the collector to Jaeger, and nginx over exactly those three.
 */

const FILE = 'deploy/compose.yaml';

/** Compose's `${NAME:-default}` with nothing set in the environment: the defaults a newcomer gets. */
const interpolate = (value: unknown): unknown =>
  typeof value === 'string' ? value.replace(/\$\{[A-Z_]+:-([^}]*)\}/g, '$1') : value;

const compose = parse(readFileSync(FILE, 'utf8'), { merge: true });
const services = compose.services as Record<string, any>;
const env = (service: string): Record<string, string> =>
  Object.fromEntries(
    Object.entries(services[service].environment ?? {}).map(([k, v]) => [k, interpolate(v) as string]),
  );
const GATEWAYS = ['gateway-1', 'gateway-2', 'gateway-3'];

describe('deploy/compose.yaml', () => {
  it('follows the Compose Specification, with no finding of dclint', async () => {
    // no-build-and-image: the devnet and the gateways build the one image and name it, so that it is
    // built once and reused, which is what that rule warns against for a pulled image.
    const linted = await run('node_modules/.bin/dclint', [
      FILE,
      '--formatter',
      'json',
      '--disable-rule',
      'no-build-and-image',
      '--max-warnings',
      '0',
    ]);
    const [report] = JSON.parse(linted.stdout);
    expect(report.messages).toEqual([]);
    expect(linted.code).toBe(0);
  });

  it('runs three gateways on the image the devnet runs, on the devnet, with one Redis and the collector', () => {
    expect(Object.keys(services).sort()).toEqual([
      'devnet',
      ...GATEWAYS,
      'jaeger',
      'nginx',
      'otel-collector',
      'redis',
    ]);
    const devnet = env('devnet');
    expect(services.devnet.command).toEqual(['node', '--enable-source-maps', 'dist/devnet/main.js']);
    expect(devnet.DEVNET_HOST).toBe('0.0.0.0');
    for (const name of GATEWAYS) {
      const gateway = services[name];
      expect(interpolate(gateway.image)).toBe(interpolate(services.devnet.image));
      expect(gateway.build).toEqual({ context: '..', dockerfile: 'Dockerfile' });
      // The image's own command: `npm start`'s.
      expect(gateway.command).toBeUndefined();
      const vars = env(name);
      expect([vars.SCAN_URL, vars.EXPLORER_URL, vars.STAKE_URL]).toEqual([
        `http://devnet:${devnet.SCAN_PORT}`,
        `http://devnet:${devnet.EXPLORER_PORT}`,
        `http://devnet:${devnet.STAKE_PORT}`,
      ]);
      expect(vars.REDIS_URL).toBe('redis://redis:6379');
      expect(vars.OTEL_EXPORTER_OTLP_ENDPOINT).toBe('http://otel-collector:4318');
      expect(vars.TRUST_PROXY).toBe('1');
      expect(Object.keys(gateway.depends_on).sort()).toEqual(['devnet', 'otel-collector', 'redis']);
      expect(gateway.read_only).toBe(true);
      expect(gateway.cap_drop).toEqual(['ALL']);
      // Past SHUTDOWN_DELAY_MS and the drain deadline (UPSTREAM_TIMEOUT_MS, 5 s by default, + 5 s).
      const grace = Number(/^(\d+)s$/.exec(gateway.stop_grace_period)?.[1]) * 1000;
      expect(grace).toBeGreaterThan(Number(vars.SHUTDOWN_DELAY_MS) + 5_000 + 5_000);
    }
  });

  it('balances over exactly the three gateways, and sends their traces on to Jaeger', () => {
    const nginx = readFileSync('deploy/compose/nginx.conf', 'utf8');
    expect([...nginx.matchAll(/^\s*server (\S+?)(?: |;)/gm)].map((m) => m[1])).toEqual(
      GATEWAYS.map((name) => `${name}:4000`),
    );
    expect(nginx).toMatch(/proxy_buffering off;/);
    expect(services.nginx.volumes).toEqual(['./compose/nginx.conf:/etc/nginx/conf.d/default.conf:ro']);

    const collector = parse(readFileSync('deploy/compose/otel-collector.yaml', 'utf8'));
    expect(collector.receivers.otlp.protocols.http.endpoint).toBe('0.0.0.0:4318');
    expect(collector.exporters['otlp/jaeger'].endpoint).toBe('jaeger:4317');
    expect(collector.service.pipelines.traces).toEqual({
      receivers: ['otlp'],
      processors: ['batch'],
      exporters: ['otlp/jaeger'],
    });
    expect(services['otel-collector'].volumes).toEqual([
      './compose/otel-collector.yaml:/etc/otelcol/config.yaml:ro',
    ]);
  });
});
