import { isAsyncIterable } from 'graphql-yoga';
import type { LiveConfig } from '../../config.js';
import { GatewayError } from '../../errors.js';
import type { GatewayMetrics } from '../../ops/metrics.js';
import { type ClientIdentity, clientOf } from '../../scale/rate-limit.js';
import type { Context } from '../../schema/context.js';
import { type HttpStagePlugin, withHttpStage } from '../routing.js';

/**
 * How many subscription streams may be open: MAX_SUBSCRIPTIONS in this process, and
 * MAX_SUBSCRIPTIONS_PER_CLIENT per client (the rate limit's identity of a client). A subscription
 * beyond either is refused before it starts: RATE_LIMITED, HTTP 429 with `retry-after`, no stream.
 * A place is taken when a subscription starts and given back when its stream ends, however it ends
 * (completed, the client gone before, during or after subscribe, cut off, refused by its resolver,
 * or a stream nobody reads: a request whose Accept takes no event stream gets Yoga's 406, and its
 * stream is ended here): the stream's one end, live/streams.ts, gives it back.
 */

type Limits = Pick<LiveConfig, 'maxSubscriptions' | 'maxSubscriptionsPerClient' | 'pollMs'>;

function tooMany(scope: string, retryAfterMs: number): GatewayError {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return new GatewayError(
    `Too many subscriptions ${scope}: close one before opening another, or retry in ${seconds} s.`,
    'RATE_LIMITED',
    { retryAfterMs, http: { status: 429, headers: { 'retry-after': String(seconds) } } },
  );
}

export function useSubscriptionLimits(
  limits: Limits,
  identity: ClientIdentity,
  metrics: GatewayMetrics,
): HttpStagePlugin {
  const perClient = new Map<string, number>();
  let open = 0;
  return withHttpStage(
    {
      onSubscribe({ args, setResultAndStopExecution }) {
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
      onResultProcess({ result, resultProcessor }) {
        if (!resultProcessor && isAsyncIterable(result)) void result[Symbol.asyncIterator]().return?.();
      },
    },
    {
      // The adapter writes a subscription's events to a client that asks for an event stream; any
      // other client is answered by Yoga (another format, or 406 with the stream ended above).
      declines: ({ headers, shape }) =>
        shape() === 'subscription' && headers.get('accept')?.trim() !== 'text/event-stream'
          ? 'a subscription asked for in another format than an event stream'
          : null,
    },
  );
}
