import {
  type Context,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { GRAPHQL_PATH, type TracingConfig } from '../config.js';

/**
 * OpenTelemetry for the gateway. The API (`@opentelemetry/api`) carries context and propagation
 * everywhere; the SDK (a Node tracer provider with an OTLP exporter) is loaded only when an OTLP
 * endpoint is configured, by the standard `OTEL_*` variables. Without it no span is built at all,
 * and the caller's `traceparent` still continues into every upstream call (W3C propagation).
 *
 * Spans are made by hand here rather than by the envelop/Yoga OpenTelemetry plugin or the undici
 * instrumentation: the plugin hooks Yoga's HTTP stages, which the fast path does not run, and spans
 * every resolver; the undici instrumentation records `url.full`, query string included (search
 * text, addresses), and cannot see retries or circuit refusals. Two spans per kind of work are
 * few enough to keep by hand: one server span per GraphQL request (telemetry.ts) and one client
 * span per upstream request (upstream/http.ts).
 */

// W3C trace context whether or not the SDK runs: the API's default propagator does nothing.
propagation.setGlobalPropagator(new W3CTraceContextPropagator());

const tracer = trace.getTracer('chain-gateway');
let sdk: { forceFlush(): Promise<void>; shutdown(): Promise<void> } | null = null;

/** Whether spans are built and exported (an OTLP endpoint is configured and the SDK started). */
export const tracingEnabled = (): boolean => sdk !== null;

/**
 * Starts the SDK when the configuration names an OTLP endpoint; otherwise loads nothing. The
 * exporter reads its own standard variables (endpoint, headers, timeout); the sampler comes from
 * `OTEL_TRACES_SAMPLER` and its argument (default: parent-based, always on); the resource, besides
 * the service's name, from `OTEL_RESOURCE_ATTRIBUTES`: the pod, namespace and node the manifests
 * pass through the Downward API, so that a span tells which instance served it.
 */
export async function startTracing(config: TracingConfig): Promise<void> {
  if (!config.enabled || sdk) return;
  const [{ NodeTracerProvider }, { BatchSpanProcessor }, resources, exporters] = await Promise.all([
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/resources'),
    config.protocol === 'http/json'
      ? import('@opentelemetry/exporter-trace-otlp-http')
      : import('@opentelemetry/exporter-trace-otlp-proto'),
  ]);
  // The SDK's own reading of the variables (percent-decoding, and OTEL_SERVICE_NAME over a
  // `service.name` among the attributes), merged over the default name: what it detects wins.
  const resource = resources
    .resourceFromAttributes({ 'service.name': config.serviceName })
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  const provider = new NodeTracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor(new exporters.OTLPTraceExporter())],
  });
  // The global provider, an AsyncLocalStorage context manager, and W3C propagation.
  provider.register();
  sdk = provider;
}

/** Exports what is buffered now (tests read their spans after it; stopTracing flushes as it stops). */
export async function flushTracing(): Promise<void> {
  await sdk?.forceFlush();
}

export async function stopTracing(): Promise<void> {
  await sdk?.shutdown();
  sdk = null;
}

/** Reads one request header (case-insensitive name); null when absent. */
export type HeaderGetter = (name: string) => string | null;

/** The caller's trace context from `traceparent` / `tracestate`, or an empty context. */
export function callerContext(header: HeaderGetter): Context {
  if (!header('traceparent')) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, header, {
    get: (carrier, key) => carrier(key) ?? undefined,
    keys: () => ['traceparent', 'tracestate'],
  });
}

/** The server span of one GraphQL request, child of the caller's span; null when tracing is off. */
export function startServerSpan(parent: Context, requestId: string): Span | null {
  if (!sdk) return null;
  return tracer.startSpan(
    'graphql',
    {
      kind: SpanKind.SERVER,
      attributes: { 'http.request.method': 'POST', 'url.path': GRAPHQL_PATH, 'request.id': requestId },
    },
    parent,
  );
}

/** The span of one live poll (live/poller.ts), a root of its own; null when tracing is off. */
export function startPollSpan(source: string, requestId: string): Span | null {
  if (!sdk) return null;
  return tracer.startSpan('live.poll', {
    kind: SpanKind.INTERNAL,
    attributes: { 'live.source': source, 'request.id': requestId },
  });
}

/** Ends a poll's span, with the contract code of its failure if it failed. */
export function endPollSpan(span: Span, errorCode: string | null): void {
  if (errorCode) {
    span.setAttribute('error.type', errorCode);
    span.setStatus({ code: SpanStatusCode.ERROR, message: errorCode });
  }
  span.end();
}

/** Ends a request's server span with its HTTP status and the contract codes it answered. */
export function endServerSpan(span: Span, status: number, codes: readonly string[]): void {
  span.setAttribute('http.response.status_code', status);
  if (codes.length > 0) {
    span.setAttribute('graphql.error.codes', [...codes]);
    span.setStatus({ code: SpanStatusCode.ERROR, message: codes.join(',') });
  }
  span.end();
}

export interface UpstreamSpan {
  /** Headers that carry the trace to the upstream: the client span's own id, or the caller's; null: none. */
  headers: Record<string, string> | null;
  end(status: number | null, errorCode?: string): void;
}

const NO_SPAN = { end() {} };
/** Tracing off, and no trace from the caller: nothing to carry, nothing to end. */
const UNTRACED: UpstreamSpan = { headers: null, ...NO_SPAN };

/**
 * The client span of one upstream request, child of the request's span, or (tracing off) just
 * the caller's trace context for the upstream. Attributes follow the HTTP client conventions;
 * the path is recorded without its query string.
 */
export function upstreamSpan(
  parent: Context,
  call: { upstream: string; method: string; origin: URL; path: string; resend: number },
): UpstreamSpan {
  if (!sdk) {
    if (!trace.getSpanContext(parent)) return UNTRACED;
    const headers: Record<string, string> = {};
    propagation.inject(parent, headers);
    return { headers, ...NO_SPAN };
  }
  const headers: Record<string, string> = {};
  const span = tracer.startSpan(
    call.method,
    {
      kind: SpanKind.CLIENT,
      attributes: {
        'http.request.method': call.method,
        'server.address': call.origin.hostname,
        'server.port': Number(call.origin.port || (call.origin.protocol === 'https:' ? 443 : 80)),
        'url.path': call.path,
        'upstream.name': call.upstream,
        ...(call.resend > 0 ? { 'http.request.resend_count': call.resend } : {}),
      },
    },
    parent,
  );
  propagation.inject(trace.setSpan(parent, span), headers);
  return {
    headers,
    end(status, errorCode) {
      if (status !== null) span.setAttribute('http.response.status_code', status);
      if (errorCode) {
        span.setAttribute('error.type', errorCode);
        span.setStatus({ code: SpanStatusCode.ERROR, message: errorCode });
      }
      span.end();
    },
  };
}

/** An event on the request's span: a retry, or a call the circuit or the bulkhead refused. */
export function traceEvent(parent: Context, name: string, attributes: Record<string, string>): void {
  trace.getSpan(parent)?.addEvent(name, attributes);
}
