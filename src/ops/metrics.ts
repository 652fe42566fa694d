import { Counter, collectDefaultMetrics, Gauge, Histogram, type LabelValues, Registry } from 'prom-client';
import { type BuildInfo, PACKAGE_VERSION } from '../config.js';
import type { UpstreamName } from '../errors.js';
import type { CircuitName } from '../lib/circuit.js';

/** What an upstream call reports when it ends (see upstream/http.ts). */
export interface UpstreamCallEvent {
  upstream: UpstreamName;
  /** The path without its query: a bounded label. */
  endpoint: string;
  /** HTTP status, or the failure when no answer came. */
  status: string;
  seconds: number;
}

/** The caches shared through Redis (scale/shared-cache.ts). */
export type SharedCacheName = 'validators' | 'responses';

/**
 * A lookup in Redis after a miss in process: hit, found there; waited, found after waiting for
 * another instance's fetch; expired, waited the whole upstream timeout for it in vain (its fetcher
 * died or hangs), then fetched here; miss, fetched here (and stored); unavailable, Redis did not
 * answer, fetched here without it.
 */
export type SharedLookup = 'hit' | 'waited' | 'expired' | 'miss' | 'unavailable';

/**
 * What a value read back from Redis claimed to be, when it did not verify (`redis_rejected_total`);
 * `stale`: a live event, state or lease that verified but was not newer than one already seen (a
 * replay, or a Redis failover to a replica behind).
 */
export type RedisRejectedKind = 'responses' | 'validators' | 'apq' | 'event' | 'state' | 'lease' | 'stale';

/** Why a request was refused at intake (`http_requests_refused_total`). */
export type IntakeRefusal =
  | 'body_budget'
  | 'client_body_budget'
  | 'body_too_large'
  | 'client_connections'
  | 'slow_body'
  | 'unread_body';

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Client names (and name/version pairs) a process labels before any other is `other`. */
export const MAX_CLIENT_LABELS = 50;

/** Whether `value` is, or now becomes, one of `labels`, which holds MAX_CLIENT_LABELS at most. */
function admit(labels: Set<string>, value: string): boolean {
  if (labels.has(value)) return true;
  if (labels.size >= MAX_CLIENT_LABELS) return false;
  labels.add(value);
  return true;
}

/**
 * The gateway's Prometheus metrics, in a registry of its own (one per gateway, so that tests can
 * build several). Served as text on GET /metrics.
 */
export class GatewayMetrics {
  readonly registry = new Registry();
  private readonly requests = new Counter({
    name: 'graphql_requests_total',
    help: 'GraphQL requests by operation name and outcome: ok; invalid (the caller’s mistake: BAD_USER_INPUT, UNAUTHENTICATED, PERSISTED_QUERY_NOT_FOUND); rate_limited (429); partial or error (an upstream’s or the gateway’s fault, with some data or none).',
    labelNames: ['operation', 'outcome'] as const,
    collect: () => this.flushTallies(),
    registers: [this.registry],
  });
  private readonly duration = new Histogram({
    name: 'graphql_request_duration_seconds',
    help: 'Time to answer a GraphQL request, by operation name.',
    labelNames: ['operation'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  private readonly errors = new Counter({
    name: 'graphql_errors_total',
    help: 'GraphQL responses carrying an error, by extensions.code.',
    labelNames: ['code'] as const,
    collect: () => this.flushTallies(),
    registers: [this.registry],
  });
  /**
   * By client, as Apollo and Hive report operations: a counter of its own, not labels of
   * graphql_requests_total, whose operations times clients would multiply the series.
   */
  private readonly clientRequests = new Counter({
    name: 'graphql_client_requests_total',
    help: 'GraphQL requests by the client’s name and version (apollographql-client-name/-version or graphql-client-name/-version; unknown when not sent; other beyond the first 50 of a process) and outcome.',
    labelNames: ['client_name', 'client_version', 'outcome'] as const,
    collect: () => this.flushTallies(),
    registers: [this.registry],
  });
  /** Client names, and name/version pairs, that are labels (clientLabels). */
  private readonly clientNames = new Set<string>();
  private readonly clientVersions = new Set<string>();
  private readonly upstreamRequests = new Counter({
    name: 'upstream_requests_total',
    help: 'HTTP requests to the upstreams, by upstream, endpoint and status (or failure).',
    labelNames: ['upstream', 'endpoint', 'status'] as const,
    collect: () => this.flushTallies(),
    registers: [this.registry],
  });
  private readonly upstreamDuration = new Histogram({
    name: 'upstream_request_duration_seconds',
    help: 'Time of one HTTP request to an upstream, by upstream and endpoint.',
    labelNames: ['upstream', 'endpoint'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  private readonly cache = new Counter({
    name: 'cache_requests_total',
    help: 'Lookups in the shared caches (validator list, public responses), by result.',
    labelNames: ['cache', 'result'] as const,
    collect: () => this.flushTallies(),
    registers: [this.registry],
  });
  private readonly sharedCache = new Counter({
    name: 'shared_cache_requests_total',
    help: 'Lookups in Redis (REDIS_URL) after a miss in process, by cache and result (hit, waited for another instance, expired waiting for it, miss, unavailable).',
    labelNames: ['cache', 'result'] as const,
    collect: () => this.flushTallies(),
    registers: [this.registry],
  });
  private readonly redisErrors = new Counter({
    name: 'redis_errors_total',
    help: 'Redis commands of the shared caches that failed (error, timeout) or were skipped while its breaker was open (circuit_open).',
    labelNames: ['kind'] as const,
    collect: () => this.flushTallies(),
    registers: [this.registry],
  });
  private readonly redisRejected = new Counter({
    name: 'redis_rejected_total',
    help: 'Values read back from Redis that did not prove the deployment’s key (forged, altered, or written by another deployment), by kind: dropped as a miss, never served; stale: a live event, state or lease not newer than one already seen (a replay).',
    labelNames: ['kind'] as const,
    collect: () => this.flushTallies(),
    registers: [this.registry],
  });
  private readonly intakeRefused = new Counter({
    name: 'http_requests_refused_total',
    help: 'Requests refused at intake, before any GraphQL work, by reason: body_budget (MAX_INFLIGHT_BODY_BYTES of request bodies and WebSocket operations already in flight: 503, or RATE_LIMITED on the operation), client_body_budget (the client already holds MAX_INFLIGHT_BODY_BYTES_PER_CLIENT of them: 429), unread_body (a GET or HEAD with a body: 400), body_too_large (a body declaring or bringing more than MAX_REQUEST_BYTES: 413), client_connections (MAX_CONNECTIONS_PER_CLIENT: 429), slow_body (a body arriving slower than its minimum rate, or nothing of it within BODY_FIRST_BYTE_MS: 408).',
    labelNames: ['reason'] as const,
    collect: () => this.flushTallies(),
    registers: [this.registry],
  });
  /** Bytes of request bodies admitted and still arriving (MAX_INFLIGHT_BODY_BYTES at most). */
  readonly bodyBytesInFlight = new Gauge({
    name: 'http_request_body_bytes_in_flight',
    help: 'Bytes of request bodies admitted and not yet fully received, and of WebSocket operations not yet answered (MAX_INFLIGHT_BODY_BYTES at most per process).',
    registers: [this.registry],
  });
  private readonly unknownEnums = new Counter({
    name: 'upstream_enum_unknown_values_total',
    help: 'Upstream enum values outside the graph’s enum, answered as UNSPECIFIED, by GraphQL enum.',
    labelNames: ['enum'] as const,
    collect: () => this.flushTallies(),
    registers: [this.registry],
  });
  private readonly rateLimited = new Counter({
    name: 'rate_limited_requests_total',
    help: 'GraphQL operations refused because their client was over its rate-limit budget (HTTP 429).',
    registers: [this.registry],
  });
  private readonly compilations = new Counter({
    name: 'graphql_compilations_total',
    help: 'Queries compiled by graphql-jit once hot (COMPILE_AFTER executions within COMPILE_WINDOW_MS).',
    registers: [this.registry],
  });
  /** Requests a hot operation's prepared request answered (graphql/pipeline/). */
  readonly preparedRequests = new Counter({
    name: 'graphql_prepared_requests_total',
    help: 'GraphQL requests answered by their hot operation’s prepared request, without parse, validation or envelop’s hooks.',
    registers: [this.registry],
  });
  private readonly refusedConnections = new Counter({
    name: 'http_connections_refused_total',
    help: 'Connections closed on arrival because MAX_CONNECTIONS sockets were open.',
    registers: [this.registry],
  });
  private readonly polls = new Counter({
    name: 'live_polls_total',
    help: 'Live-update polls of each source (blocks, validators, failed), by result: ok, error (the upstream failed: no event, the gap filled by the next good poll), elsewhere (another instance holds the source), undecided (Redis did not say who holds it, so no poll).',
    labelNames: ['source', 'result'] as const,
    collect: () => this.flushTallies(),
    registers: [this.registry],
  });
  private readonly liveEvents = new Counter({
    name: 'live_events_total',
    help: 'Live-update events found by this process’s polls, by source.',
    labelNames: ['source'] as const,
    collect: () => this.flushTallies(),
    registers: [this.registry],
  });
  private readonly liveExecutions = new Counter({
    name: 'live_executions_total',
    help: 'Live events executed and serialized, by source: once per group of alike subscribers an event reaches, whatever the group’s size.',
    labelNames: ['source'] as const,
    collect: () => this.flushTallies(),
    registers: [this.registry],
  });
  /** Groups of alike subscribers (same operation, variables and credential) open in this process. */
  readonly subscriptionGroups = new Gauge({
    name: 'graphql_subscription_groups',
    help: 'Groups of alike subscription streams (same document, operation, variables and credential scope): each event is executed once per group.',
    registers: [this.registry],
  });
  private readonly delivery = new Histogram({
    name: 'live_delivery_seconds',
    help: 'Delay from a poll’s answer to the write of an event to one subscriber’s socket (or, on Yoga’s path, its hand-over to the stream).',
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });
  private readonly cut = new Counter({
    name: 'live_subscribers_cut_total',
    help: 'Subscription streams cut off because their client stopped reading (LIVE_BACKLOG events waiting).',
    registers: [this.registry],
  });
  private readonly aged = new Counter({
    name: 'graphql_streams_aged_total',
    help: 'Streams ended at their age (MAX_STREAM_AGE_MS) for their clients to reconnect, by transport: an SSE stream, or a WebSocket (closed 1001 with its subscriptions).',
    labelNames: ['transport'] as const,
    registers: [this.registry],
  });
  /** Subscription streams open in this process. */
  readonly subscriptions = new Gauge({
    name: 'graphql_subscriptions_active',
    help: 'GraphQL subscription streams open (MAX_SUBSCRIPTIONS at most per process).',
    registers: [this.registry],
  });
  /** MAX_SUBSCRIPTIONS, as capped at start: the alerts' and the autoscaler's measure of a full pod. */
  private readonly subscriptionsLimit = new Gauge({
    name: 'graphql_subscriptions_limit',
    help: 'MAX_SUBSCRIPTIONS: the subscription streams this process accepts (after the open-file limit’s cap); beyond it new streams are refused with 429.',
    registers: [this.registry],
  });
  /** What this process runs (describe()): 1 with its version and revision as labels. */
  private readonly buildInfo = new Gauge({
    name: 'build_info',
    help: 'Always 1: the gateway’s version (package.json) and revision (BUILD_REVISION, set when the image is built) as labels.',
    labelNames: ['version', 'revision'] as const,
    registers: [this.registry],
    // One build per process: across cluster workers, not a sum.
    aggregator: 'max',
  });
  readonly inFlight = new Gauge({
    name: 'http_requests_in_flight',
    help: 'HTTP requests being answered.',
    registers: [this.registry],
  });

  constructor(circuits: () => Record<UpstreamName, CircuitName>) {
    const state = { closed: 0, 'half-open': 1, open: 2 } as const;
    new Gauge({
      name: 'upstream_circuit_state',
      help: 'Circuit breaker of each upstream: 0 closed, 1 half-open, 2 open.',
      labelNames: ['upstream'] as const,
      registers: [this.registry],
      // Across workers (cluster.ts): the worst state, where other metrics sum.
      aggregator: 'max',
      collect() {
        for (const [upstream, s] of Object.entries(circuits())) this.set({ upstream }, state[s]);
      },
    });
    collectDefaultMetrics({ register: this.registry });
    this.describe({ build: { version: PACKAGE_VERSION, revision: 'unknown' } });
  }

  /** What the process runs (config.build) and the streams it accepts (config.live.maxSubscriptions). */
  describe({ build, maxSubscriptions }: { build: BuildInfo; maxSubscriptions?: number }): void {
    this.buildInfo.reset();
    this.buildInfo.set({ version: build.version, revision: build.revision }, 1);
    if (maxSubscriptions !== undefined) this.subscriptionsLimit.set(maxSubscriptions);
  }

  /**
   * Labelled counters' increments as plain additions per label set, handed to prom-client when it
   * is scraped (each counter's `collect`): prom-client hashes and checks the labels on every
   * increment, and a request makes several.
   */
  private readonly tallies = new Map<
    string,
    { counter: Counter<string>; labels: LabelValues<string>; n: number }
  >();
  private tally(key: string, counter: Counter<string>, labels: () => LabelValues<string>, n = 1): void {
    let tally = this.tallies.get(key);
    if (tally === undefined) {
      tally = { counter, labels: labels(), n: 0 };
      this.tallies.set(key, tally);
    }
    tally.n += n;
  }
  private flushTallies(): void {
    for (const tally of this.tallies.values()) {
      if (tally.n === 0) continue;
      tally.counter.inc(tally.labels, tally.n);
      tally.n = 0;
    }
  }

  // Labelled children looked up once per label set: prom-client hashes the labels on every call otherwise.
  private readonly children = new Map<string, unknown>();
  private child<T>(key: string, make: () => T): T {
    let child = this.children.get(key) as T | undefined;
    if (child === undefined) {
      child = make();
      this.children.set(key, child);
    }
    return child;
  }

  observeRequest(operation: string, outcome: string, codes: readonly string[], seconds: number): void {
    this.tally(`r\0${operation}\0${outcome}`, this.requests, () => ({ operation, outcome }));
    this.child(`d\0${operation}`, () => this.duration.labels(operation)).observe(seconds);
    for (const code of codes) this.tally(`e\0${code}`, this.errors, () => ({ code }));
  }

  /**
   * Counts a request by its client (request-trace.ts reads and cleans its name and version; null:
   * none sent). Callers choose the names, so only the first MAX_CLIENT_LABELS names, and name/version
   * pairs, a process sees become labels, kept for its life (a fleet's clients are few and stable;
   * a flood must not push them out); any later one is `other`.
   */
  observeClientRequest(name: string | null, version: string | null, outcome: string): void {
    let nameLabel = name ?? 'unknown';
    let versionLabel = version ?? 'unknown';
    if (name !== null && !admit(this.clientNames, name)) nameLabel = 'other';
    if (version !== null && !admit(this.clientVersions, `${nameLabel}\0${version}`)) versionLabel = 'other';
    this.tally(`c\0${nameLabel}\0${versionLabel}\0${outcome}`, this.clientRequests, () => ({
      client_name: nameLabel,
      client_version: versionLabel,
      outcome,
    }));
  }

  /** Drops an operation's series (its label was given to another name: telemetry.ts). */
  forgetOperation(operation: string): void {
    const duration = `d\0${operation}`;
    if (this.children.delete(duration)) this.duration.remove(operation);
    for (const key of this.tallies.keys()) {
      const [kind, name, outcome] = key.split('\0');
      if (kind !== 'r' || name !== operation) continue;
      this.requests.remove(operation, outcome as string);
      this.tallies.delete(key);
    }
  }

  observeUpstream({ upstream, endpoint, status, seconds }: UpstreamCallEvent): void {
    this.tally(`u\0${upstream}\0${endpoint}\0${status}`, this.upstreamRequests, () => ({
      upstream,
      endpoint,
      status,
    }));
    this.child(`t\0${upstream}\0${endpoint}`, () => this.upstreamDuration.labels(upstream, endpoint)).observe(
      seconds,
    );
  }

  observeUnknownEnum(enumName: string): void {
    this.tally(`n\0${enumName}`, this.unknownEnums, () => ({ enum: enumName }));
  }

  observeCompilation(): void {
    this.compilations.inc();
  }

  observeRefusedConnection(): void {
    this.refusedConnections.inc();
  }

  /**
   * The sizes of the caches keyed by document, read at each scrape: the prepared documents
   * (entries, estimated bytes, compiled plans, texts not yet kept) and the public response cache (entries).
   */
  watchDocumentCaches(
    sizes: () => { entries: number; bytes: number; compiled: number; doorkeeper: number; responses: number },
  ): void {
    const gauge = (name: string, help: string, read: (s: ReturnType<typeof sizes>) => number) =>
      new Gauge({
        name,
        help,
        registers: [this.registry],
        collect() {
          this.set(read(sizes()));
        },
      });
    gauge(
      'graphql_document_cache_entries',
      'Prepared documents held (DOCUMENT_CACHE_ENTRIES at most).',
      (s) => s.entries,
    );
    gauge(
      'graphql_document_cache_bytes',
      'Estimated bytes of the prepared documents, their compiled plans and the doorkeeper’s texts (DOCUMENT_CACHE_BYTES at most).',
      (s) => s.bytes,
    );
    gauge(
      'graphql_compiled_operations',
      'Compiled query plans held by the prepared documents.',
      (s) => s.compiled,
    );
    gauge(
      'graphql_document_doorkeeper_entries',
      'Document texts seen fewer than DOCUMENT_KEEP_AFTER times, remembered until a further use keeps the document.',
      (s) => s.doorkeeper,
    );
    gauge('graphql_response_cache_entries', 'Public answers held by the response cache.', (s) => s.responses);
  }

  observePoll(source: string, result: 'ok' | 'error' | 'elsewhere' | 'undecided'): void {
    this.tally(`p\0${source}\0${result}`, this.polls, () => ({ source, result }));
  }

  observeLiveEvents(source: string, count: number): void {
    if (count > 0) this.tally(`l\0${source}`, this.liveEvents, () => ({ source }), count);
  }

  observeLiveExecution(source: string): void {
    this.tally(`g\0${source}`, this.liveExecutions, () => ({ source }));
  }

  observeDelivery(seconds: number): void {
    this.delivery.observe(seconds);
  }

  observeCut(): void {
    this.cut.inc();
  }

  observeAged(transport: 'sse' | 'websocket'): void {
    this.aged.inc({ transport });
  }

  observeRateLimited(): void {
    this.rateLimited.inc();
  }

  observeCache(cache: 'validators' | 'responses', hit: boolean): void {
    const result = hit ? 'hit' : 'miss';
    this.tally(`c\0${cache}\0${result}`, this.cache, () => ({ cache, result }));
  }

  observeSharedCache(cache: SharedCacheName, result: SharedLookup): void {
    this.tally(`s\0${cache}\0${result}`, this.sharedCache, () => ({ cache, result }));
  }

  observeRedisError(kind: 'timeout' | 'error' | 'circuit_open'): void {
    this.tally(`x\0${kind}`, this.redisErrors, () => ({ kind }));
  }

  /** A value read back from Redis that did not verify: `kind` names what it claimed to be. */
  observeRedisRejected(kind: RedisRejectedKind): void {
    this.tally(`j\0${kind}`, this.redisRejected, () => ({ kind }));
  }

  observeIntakeRefused(reason: IntakeRefusal): void {
    this.tally(`i\0${reason}`, this.intakeRefused, () => ({ reason }));
  }

  /** `redis_up` (1 or 0), for a gateway with REDIS_URL only. */
  watchRedis(up: () => boolean): void {
    new Gauge({
      name: 'redis_up',
      help: 'Whether the shared caches use Redis (0 from its breaker opening until it answers again).',
      registers: [this.registry],
      // Summed across cluster workers it would count workers; any worker without Redis shows 0.
      aggregator: 'min',
      collect() {
        this.set(up() ? 1 : 0);
      },
    });
  }
}
