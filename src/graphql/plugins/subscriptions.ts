import type { ExecutionResult } from 'graphql';
import { isAsyncIterable, type Plugin } from 'graphql-yoga';
import type { LiveConfig } from '../../config.js';
import { GatewayError } from '../../errors.js';
import type { GatewayMetrics } from '../../ops/metrics.js';
import { type ClientIdentity, clientOf } from '../../scale/rate-limit.js';
import type { Context } from '../../schema/context.js';
import { SSE, wholeResponse } from '../pipeline/framing.js';
import { processMultipartSubscription } from '../pipeline/multipart.js';
import { streamTransport } from '../pipeline/shape.js';
import { type HttpStagePlugin, withHttpStage } from '../routing.js';

/**
 * How many subscription streams may be open: MAX_SUBSCRIPTIONS in this process, and
 * MAX_SUBSCRIPTIONS_PER_CLIENT per client (the rate limit's identity of a client). A subscription
 * beyond either is refused before it starts: RATE_LIMITED with `retry-after`, no stream; as JSON,
 * HTTP 429; to a stream's client, in its stream's framing so that it comes back by itself (an
 * EventSource treats a 429 as fatal), which `refusedForCapacity` tells the writers. A place is
 * taken when a subscription starts and given back when its stream ends, however it ends (completed,
 * the client gone before, during or after subscribe, cut off, refused by its resolver, or a stream
 * nobody reads: a request whose Accept takes no stream gets Yoga's 406, and its stream is ended
 * here): the stream's one end, live/streams.ts, gives it back. On Yoga's path this plugin also sets
 * the stream writers Yoga lacks (`framedOnYogasPath`), so that both paths write the same framing.
 */

type Limits = Pick<LiveConfig, 'maxSubscriptions' | 'maxSubscriptionsPerClient' | 'pollMs'>;

/** A subscription refused for want of room (not for what it asked): its client may come back later. */
class CapacityRefusal extends GatewayError {}

/** The refusal for capacity among a result's errors, if it is one: its `extensions.retryAfterMs` says when to come back. */
export const refusedForCapacity = (errors: readonly unknown[] | undefined): GatewayError | null =>
  (errors?.find((error) => error instanceof CapacityRefusal) as GatewayError | undefined) ?? null;

function tooMany(scope: string, retryAfterMs: number): GatewayError {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return new CapacityRefusal(
    `Too many subscriptions ${scope}: close one before opening another, or retry in ${seconds} s.`,
    'RATE_LIMITED',
    { retryAfterMs, http: { status: 429, headers: { 'retry-after': String(seconds) } } },
  );
}

type ResultProcess = Parameters<NonNullable<Plugin['onResultProcess']>>[0];

/**
 * On Yoga's path, what Yoga's writers do not do, written as the adapter writes it: Apollo's
 * multipart subscriptions (a stream, or a subscription's refusal: pipeline/multipart.ts), and for an
 * event-stream client a refusal for capacity it survives and a `retry:` of its own. Whether it chose
 * the writer.
 */
function framedOnYogasPath(
  { request, result, resultProcessor, setResultProcessor }: ResultProcess,
  subscribed: boolean,
): boolean {
  const stream = isAsyncIterable(result);
  const transport = streamTransport(request.headers.get('accept'));
  if (transport === 'multipart' && (stream || subscribed)) {
    setResultProcessor(processMultipartSubscription, 'multipart/mixed');
    return true;
  }
  if (transport !== 'sse') return false;
  const capacity = stream ? null : refusedForCapacity((result as ExecutionResult).errors);
  const whole = capacity && SSE.single(result as ExecutionResult, capacity);
  if (whole) {
    setResultProcessor((_result, fetchAPI) => wholeResponse(whole, fetchAPI), 'text/event-stream');
    return true;
  }
  if (!stream || !resultProcessor) return false;
  setResultProcessor(
    async (streamed, fetchAPI, type) =>
      SSE.withOwnRetry(await resultProcessor(streamed, fetchAPI, type), fetchAPI),
    'text/event-stream',
  );
  return true;
}

export function useSubscriptionLimits(
  limits: Limits,
  identity: ClientIdentity,
  metrics: GatewayMetrics,
): HttpStagePlugin {
  const perClient = new Map<string, number>();
  let open = 0;
  /** Yoga's path: the requests that subscribed (refused or not), whose answer the stream's framing writes. */
  const subscribing = new WeakSet<object>();
  return withHttpStage(
    {
      onSubscribe({ args, setResultAndStopExecution }) {
        const { request } = args.contextValue as { request?: object };
        if (request) subscribing.add(request);
        const client = clientOf(args.contextValue, identity);
        const mine = perClient.get(client) ?? 0;
        const refused =
          open >= limits.maxSubscriptions
            ? 'on this server'
            : mine >= limits.maxSubscriptionsPerClient
              ? 'for this client'
              : null;
        if (refused) {
          setResultAndStopExecution({ errors: [tooMany(refused, Math.max(limits.pollMs, 1_000))] });
          return;
        }
        open++;
        perClient.set(client, mine + 1);
        metrics.subscriptions.inc();
        const release = () => {
          open--;
          const left = (perClient.get(client) ?? 1) - 1;
          if (left > 0) perClient.set(client, left);
          else perClient.delete(client);
          metrics.subscriptions.dec();
        };
        // The place is the stream's until the stream ends, however it ends (live/streams.ts); at
        // once when its client has left already. A subscription that answered no stream (a refusal)
        // and a stream Yoga's pipeline ended end it too.
        const stream = (args.contextValue as unknown as Context).stream;
        stream.onEnd(release);
        return {
          onSubscribeResult: ({ result }) => {
            if (!(Symbol.asyncIterator in (result as object))) {
              stream.end();
              return;
            }
            return { onEnd: () => stream.end() };
          },
          onSubscribeError: () => stream.end(),
        };
      },
      // After Yoga's result processors (and the defer-stream plugin's) chose, or found none: a
      // subscription's stream that no format can carry is answered 406 and never read, so it ends
      // now, giving its place back and leaving its source, instead of waiting in the hub for ever.
      onResultProcess(payload) {
        if (framedOnYogasPath(payload, subscribing.has(payload.request))) return;
        const { result, resultProcessor } = payload;
        if (!resultProcessor && isAsyncIterable(result)) void result[Symbol.asyncIterator]().return?.();
      },
    },
    {
      // The adapter writes a subscription's events to a client that asks for a stream it writes
      // (SSE, Apollo's multipart); any other client is answered by Yoga (another format, or 406
      // with the stream ended above).
      declines: ({ headers, shape }) =>
        shape() === 'subscription' && streamTransport(headers.get('accept')) === null
          ? 'a subscription asked for in another format than an event stream or multipart subscription'
          : null,
    },
  );
}
