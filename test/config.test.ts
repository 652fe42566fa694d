import { readFileSync } from 'node:fs';
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';

/** A production process on real upstreams, as a deployment runs it. */
const PRODUCTION = {
  NODE_ENV: 'production',
  SCAN_URL: 'http://scan.internal',
  EXPLORER_URL: 'http://explorer.internal',
  STAKE_URL: 'http://stake.internal',
  CURSOR_SECRET: 'a-cursor-secret-of-32-bytes-0123',
};

describe('loadConfig', () => {
  it('runs on the devnet with development defaults when no upstream is set', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      host: '127.0.0.1',
      port: 4000,
      upstreams: null,
      upstreamTimeoutMs: 5000,
      production: false,
      introspection: true,
      graphiql: true,
      fieldSuggestions: true,
      explorerToken: null,
    });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('refuses to start with some upstreams set, naming the missing ones', () => {
    expect(() => loadConfig({ SCAN_URL: 'http://a' })).toThrow(
      new ConfigError(
        'SCAN_URL set but EXPLORER_URL and STAKE_URL missing: set all three upstream URLs, or none to run on the devnet',
      ),
    );
  });

  it('turns introspection, GraphiQL and suggestions off in production on real upstreams, each switchable back on', () => {
    expect(loadConfig(PRODUCTION)).toMatchObject({
      introspection: false,
      graphiql: false,
      fieldSuggestions: false,
    });
    expect(loadConfig({ ...PRODUCTION, GRAPHQL_INTROSPECTION: 'true' })).toMatchObject({
      introspection: true,
      graphiql: false,
    });
    // Outside production, real upstreams keep them (a developer's gateway on a staging upstream).
    expect(loadConfig({ ...PRODUCTION, NODE_ENV: 'development' })).toMatchObject({
      introspection: true,
      graphiql: true,
      fieldSuggestions: true,
    });
  });

  it('refuses the devnet in production unless DEVNET=true asks for it, naming both', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(ConfigError);
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(
      /^NODE_ENV=production and no upstream URL: set SCAN_URL, EXPLORER_URL and STAKE_URL, or DEVNET=true to run on the embedded devnet/,
    );
    expect(() => loadConfig({ NODE_ENV: 'production', DEVNET: 'false' })).toThrow(/DEVNET=true/);
    // Asked for by name: the try-out runs, with GraphiQL and introspection, as the devnet is public.
    expect(loadConfig({ NODE_ENV: 'production', DEVNET: 'true' })).toMatchObject({
      production: true,
      upstreams: null,
      introspection: true,
      graphiql: true,
      fieldSuggestions: true,
    });
    expect(loadConfig({ NODE_ENV: 'production', DEVNET: 'true', GRAPHIQL: 'false' }).graphiql).toBe(false);
    // `npm start` outside production: the devnet without asking.
    expect(loadConfig({}).upstreams).toBeNull();
  });

  it('refuses DEVNET=true beside upstream URLs, and DEVNET=false without them', () => {
    expect(() => loadConfig({ ...PRODUCTION, DEVNET: 'true' })).toThrow(
      'DEVNET=true runs the embedded devnet, but SCAN_URL, EXPLORER_URL and STAKE_URL are set: unset one or the other',
    );
    expect(() => loadConfig({ DEVNET: 'false' })).toThrow(
      /^no upstream URL and DEVNET=false: set SCAN_URL, EXPLORER_URL and STAKE_URL, or DEVNET=true/,
    );
    expect(loadConfig({ ...PRODUCTION, DEVNET: 'false' }).upstreams).toEqual({
      scan: 'http://scan.internal',
      explorer: 'http://explorer.internal',
      stake: 'http://stake.internal',
    });
  });

  it('refuses a REDIS_URL naming a user with an empty password (a blanked Secret), naming REDIS_URL', () => {
    // What `redis://gateway:$(REDIS_PASSWORD)@redis:6379` becomes when REDIS_PASSWORD is blanked.
    for (const url of [
      'redis://gateway:@redis:6379',
      'rediss://gateway:@redis.internal:6380/0',
      'redis://:@redis:6379',
      'redis://gateway@redis:6379',
      'redis://@redis:6379',
    ]) {
      expect(() => loadConfig({ REDIS_URL: url }), url).toThrow(ConfigError);
      expect(() => loadConfig({ REDIS_URL: url }), url).toThrow(
        /^REDIS_URL names a user but its password is empty/,
      );
    }
    // With a password, or with no user info at all (a Redis without one), it starts.
    for (const url of [
      'redis://gateway:s3cret@redis:6379',
      'redis://:s3cret@redis:6379',
      'rediss://gateway:p%40ss@redis.internal:6380/0',
      'redis://redis:6379',
    ])
      expect(loadConfig({ REDIS_URL: url }).scale.redisUrl, url).toBe(url);
  });

  it("reads the build: package.json's version, BUILD_REVISION or unknown", () => {
    const { version } = JSON.parse(readFileSync('package.json', 'utf8'));
    expect(loadConfig({}).build).toEqual({ version, revision: 'unknown' });
    expect(loadConfig({ BUILD_REVISION: '5f3a9c1e' }).build).toEqual({ version, revision: '5f3a9c1e' });
    expect(() => loadConfig({ BUILD_REVISION: 'a"b' })).toThrow(/^BUILD_REVISION must be/);
  });

  it('serves /metrics on METRICS_PORT: 9464 in production, the public port otherwise', () => {
    expect(loadConfig(PRODUCTION).metricsPort).toBe(9464);
    expect(loadConfig({ NODE_ENV: 'production', DEVNET: 'true' }).metricsPort).toBe(9464);
    expect(loadConfig({}).metricsPort).toBeNull();
    expect(loadConfig({ METRICS_PORT: '9100' }).metricsPort).toBe(9100);
    // 0: any free port (tests).
    expect(loadConfig({ METRICS_PORT: '0' }).metricsPort).toBe(0);
    expect(loadConfig({ ...PRODUCTION, METRICS_PORT: '9100' }).metricsPort).toBe(9100);
  });

  it('ends streams at MAX_STREAM_AGE_MS for their clients to reconnect: 30 min by default, 0 never', () => {
    expect(loadConfig({}).live.maxStreamAgeMs).toBe(1_800_000);
    expect(loadConfig(PRODUCTION).live.maxStreamAgeMs).toBe(1_800_000);
    expect(loadConfig({ MAX_STREAM_AGE_MS: '0' }).live.maxStreamAgeMs).toBe(0);
    expect(loadConfig({ MAX_STREAM_AGE_MS: '600000' }).live.maxStreamAgeMs).toBe(600_000);
    // Within a reconnection's own spread (a retry: of up to 10 s), an age would only churn streams.
    expect(() => loadConfig({ MAX_STREAM_AGE_MS: '5000' })).toThrow(
      'MAX_STREAM_AGE_MS must be 0 (streams never aged) or at least 60000',
    );
    expect(() => loadConfig({ MAX_STREAM_AGE_MS: '30m' })).toThrow(/^MAX_STREAM_AGE_MS must be an integer/);
  });

  it('serves on for SHUTDOWN_DELAY_MS after SIGTERM: 5 s in production, none by default otherwise', () => {
    expect(loadConfig(PRODUCTION).server.shutdownDelayMs).toBe(5_000);
    expect(loadConfig({}).server.shutdownDelayMs).toBe(0);
    expect(loadConfig({ ...PRODUCTION, SHUTDOWN_DELAY_MS: '0' }).server.shutdownDelayMs).toBe(0);
  });

  it('reads the server limits and document caches, with the defaults a reverse proxy would set', () => {
    const config = loadConfig({ HEADERS_TIMEOUT_MS: '2000', MAX_CONNECTIONS: '10', COMPILE_AFTER: '0' });
    expect(config.server).toEqual({
      headersTimeoutMs: 2_000,
      requestTimeoutMs: 30_000,
      keepAliveTimeoutMs: 5_000,
      maxConnections: 10,
      maxInflightBodyBytes: 8_000_000,
      maxInflightBodyBytesPerClient: 400_000,
      maxConnectionsPerClient: 128,
      minBodyRate: 1_000,
      bodyTimeoutMs: 10_000,
      bodyFirstByteMs: 2_000,
      shutdownDelayMs: 0,
    });
    expect(config.documents).toEqual({
      maxEntries: 1_000,
      maxBytes: 32_000_000,
      keepAfter: 2,
      compileAfter: 0,
      compileWindowMs: 60_000,
    });
  });

  it('holds the head CHAIN_HEAD_HOLD_MS for a latest answer: 60 s unless set, 0 never', () => {
    expect(loadConfig({}).live.headHoldMs).toBe(60_000);
    expect(loadConfig({ CHAIN_HEAD_HOLD_MS: '0' }).live.headHoldMs).toBe(0);
    expect(() => loadConfig({ CHAIN_HEAD_HOLD_MS: 'long' })).toThrow(/CHAIN_HEAD_HOLD_MS/);
  });

  it('waits MIN_CHAIN_HEIGHT_WAIT_MS for a Min-Chain-Height: 10 s unless set, 0 never waits', () => {
    expect(loadConfig({}).live.minChainHeightWaitMs).toBe(10_000);
    expect(loadConfig({ MIN_CHAIN_HEIGHT_WAIT_MS: '0' }).live.minChainHeightWaitMs).toBe(0);
    expect(() => loadConfig({ MIN_CHAIN_HEIGHT_WAIT_MS: 'soon' })).toThrow(/MIN_CHAIN_HEIGHT_WAIT_MS/);
  });

  it('bounds intake: a body cap a valid request never nears, and room for a client beside its streams', () => {
    const config = loadConfig({});
    expect(config.limits.requestBytes).toBe(100_000);
    // Every stream holds a connection: more streams per client raise the connection cap to fit.
    expect(loadConfig({ MAX_SUBSCRIPTIONS_PER_CLIENT: '500' }).server.maxConnectionsPerClient).toBe(564);
    expect(
      loadConfig({ MAX_INFLIGHT_BODY_BYTES: '2000', MAX_REQUEST_BYTES: '2000', MIN_BODY_RATE: '50' }).server,
    ).toMatchObject({ maxInflightBodyBytes: 2_000, minBodyRate: 50 });
  });

  const refusals = [
    { env: { PORT: 'eighty' }, message: /PORT must be an integer/ },
    { env: { UPSTREAM_TIMEOUT_MS: '0' }, message: /UPSTREAM_TIMEOUT_MS/ },
    { env: { GRAPHIQL: 'maybe' }, message: /GRAPHIQL must be true or false/ },
    {
      env: { SCAN_URL: 'ftp://x', EXPLORER_URL: 'http://e', STAKE_URL: 'http://s' },
      message: /SCAN_URL must be an http/,
    },
    {
      env: { HEADERS_TIMEOUT_MS: '20000', REQUEST_TIMEOUT_MS: '10000' },
      message: /at least HEADERS_TIMEOUT_MS/,
    },
    { env: { MAX_CONNECTIONS: '0' }, message: /MAX_CONNECTIONS/ },
    {
      env: { MAX_INFLIGHT_BODY_BYTES: '50000' },
      message: /MAX_INFLIGHT_BODY_BYTES must be at least MAX_REQUEST_BYTES/,
    },
    {
      env: { MAX_CONNECTIONS_PER_CLIENT: '20' },
      message: /MAX_CONNECTIONS_PER_CLIENT must be more than MAX_SUBSCRIPTIONS_PER_CLIENT/,
    },
    { env: { MIN_BODY_RATE: '0' }, message: /MIN_BODY_RATE must be an integer from 1/ },
    { env: { BODY_TIMEOUT_MS: '10' }, message: /BODY_TIMEOUT_MS must be an integer from 100/ },
    { env: { METRICS_PORT: 'metrics' }, message: /METRICS_PORT must be an integer from 0 to 65535/ },
    { env: { PORT: '9464', METRICS_PORT: '9464' }, message: /METRICS_PORT must differ from PORT \(9464\)/ },
    { env: { DEVNET: 'maybe' }, message: /DEVNET must be true or false/ },
  ];
  for (const { env, message } of refusals) {
    it(`rejects ${inspect(env, { breakLength: Number.POSITIVE_INFINITY })}`, () => {
      expect(() => loadConfig(env)).toThrow(message);
    });
  }
});
