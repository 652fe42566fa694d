import { builder, UPSTREAM_COST } from './builder.js';
import { BlockRef } from './chain.js';
import type { Context } from './context.js';
import { explorerToken, FailedTransactionRef } from './explorer.js';
import { address } from './rules.js';
import { ValidatorRef, ValidatorStatisticsRef } from './validators.js';

/**
 * Live updates (contract.md §6), served as GraphQL over Server-Sent Events. The upstreams push
 * nothing: the gateway polls each source once per deployment (live/) and pushes what changed.
 * Each event is resolved as a request of its own: the request's loaders start afresh for it.
 */

builder.subscriptionType({
  description:
    'Live updates over Server-Sent Events (`Accept: text/event-stream`, GET or POST on /graphql). The gateway polls its upstreams every LIVE_POLL_MS and pushes what changed; an upstream that fails for a while delays events, the stream stays open and the gap is filled from the next good poll.',
});

/** The event itself, after the request's loaders were renewed for it. */
const fresh = <T>(event: T, _args: unknown, ctx: Context): T => {
  ctx.loaders.renew();
  return event;
};

builder.subscriptionFields((t) => ({
  blockAdded: t.field({
    type: BlockRef,
    complexity: UPSTREAM_COST,
    cacheScope: 'public',
    description:
      'Every new block, in height order, none skipped. Over SSE each event carries its height as `id:`; a client that reconnects with `Last-Event-ID` (EventSource does) first gets the blocks it missed.',
    subscribe: (_root, _args, ctx) => ctx.live.blockAdded(ctx.stream),
    resolve: fresh,
  }),
  failedTransactionAdded: t.field({
    type: FailedTransactionRef,
    complexity: UPSTREAM_COST,
    cacheScope: 'private',
    authScopes: { explorerToken: true },
    description:
      'Each new failed transaction, oldest first. Needs a bearer token (or the server’s EXPLORER_TOKEN), checked by one explorer read when the subscription starts: UNAUTHENTICATED (HTTP 401) and no stream when the explorer refuses it. A token the explorer stops accepting ends its streams with an UNAUTHENTICATED error. Events read with one token reach only the subscribers that presented it.',
    subscribe: (_root, _args, ctx) =>
      ctx.live.failedTransactionAdded(ctx.stream, explorerToken(ctx), ctx.loaders.scope),
    resolve: fresh,
  }),
  validatorUpdated: t.field({
    type: ValidatorRef,
    complexity: UPSTREAM_COST,
    cacheScope: 'public',
    description:
      'A validator whose data changed (tokens, status, jailing, commission, moniker, description, any field but the counters a live chain moves with every block: blocks proposed, signed and missed, uptime, outstanding rewards, timestamp; the event carries their current values): every one, or only the one named by `operatorAddress`.',
    args: {
      operatorAddress: t.arg.string({
        description:
          'Only this validator, by its operator, consensus or wallet address in either encoding (0x… or bech32). Every validator when left out.',
        validate: address('operatorAddress'),
      }),
    },
    subscribe: (_root, args, ctx) => ctx.live.validatorUpdated(ctx.stream, args.operatorAddress ?? null),
    resolve: fresh,
  }),
  validatorStatisticsUpdated: t.field({
    type: ValidatorStatisticsRef,
    complexity: UPSTREAM_COST,
    cacheScope: 'public',
    description: 'The statistics over the whole validator set, whenever they change.',
    subscribe: (_root, _args, ctx) => ctx.live.validatorStatisticsUpdated(ctx.stream),
    resolve: fresh,
  }),
}));
