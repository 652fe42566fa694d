import { GraphQLError } from 'graphql';
import { type ErrorCode, GatewayError } from '../errors.js';
import type { BuybackRound } from '../upstream/models.js';
import { builder, knownOrUnspecified, UPSTREAM_COST } from './builder.js';
import { type Rule, roundChange, ruleError, text, totalSlots } from './rules.js';

/**
 * Every error of updateBuybackRound says whether the update happened (`extensions.applied`,
 * contract.md §7). Those of its upstream call say it themselves (upstream/stake/outcome.ts); those
 * raised before any call (its argument rules, its token) say `false` here.
 */

/** An error raised before the update was sent: the same error, saying it was not applied. */
function notSent(error: unknown): GatewayError {
  if (!(error instanceof GraphQLError)) {
    return new GatewayError('The update was refused before it was sent.', 'INTERNAL_SERVER_ERROR', {
      applied: false,
    });
  }
  const { code, ...extensions } = error.extensions as { code: ErrorCode };
  return new GatewayError(error.message, code, { ...extensions, applied: false });
}

/** The name of the mutation's argument, where its rules' issues sit. */
const INPUT = 'input';

/**
 * A rule of the update that raises its own refusal, worded as every rule's (`ruleError`), and
 * saying that nothing was sent. The validation plugin words a refusal without knowing whose field
 * it is for, so it could not say so. `at` is where the checked value sits in the arguments.
 */
function beforeSending(at: readonly string[], rule: Rule): Rule {
  const standard = rule['~standard'];
  type Result = Awaited<ReturnType<typeof standard.validate>>;
  const settle = (result: Result): Result => {
    if (!result.issues) return result;
    const issues = result.issues.map((issue) => ({ ...issue, path: [...at, ...(issue.path ?? [])] }));
    throw notSent(ruleError({ issues }));
  };
  return {
    '~standard': {
      ...standard,
      validate: (value) => {
        const result = standard.validate(value);
        return result instanceof Promise ? result.then(settle) : settle(result);
      },
    },
  };
}

const BuybackRoundStateRef = builder.enumType('BuybackRoundState', {
  description: 'Where a buyback round is in its life.',
  values: {
    UNSPECIFIED: {
      value: 'UNSPECIFIED',
      description: 'No state, or one this gateway does not know yet (counted in /metrics).',
    },
    PENDING: { value: 'PENDING', description: 'Scheduled: not open yet, still editable.' },
    IN_PROGRESS: { value: 'IN_PROGRESS', description: 'Open: slots are being booked.' },
    DONE: { value: 'DONE', description: 'Closed: collected, bought back and burned (see burnTxHash).' },
    CANCELLED: { value: 'CANCELLED', description: 'Called off before it completed.' },
  } as const,
});

export const BuybackRoundRef = builder.objectRef<BuybackRound>('BuybackRound').implement({
  description: 'A buyback round: slots booked for a token buyback, and what it collected and burned.',
  fields: (t) => ({
    recordId: t.exposeID('id', {
      description:
        'The staking service’s internal identifier of the round, a UUID (formerly `id`; `id` is now the global object id). To name a round, for example in updateBuybackRound, use roundId.',
    }),
    roundId: t.exposeString('roundId', {
      description:
        'The round’s public name, for example "round-006": the identifier updateBuybackRound takes.',
    }),
    startTime: t.expose('startTime', { type: 'DateTime', description: 'When the round opens.' }),
    endTime: t.expose('endTime', { type: 'DateTime', description: 'When the round closes.' }),
    status: t.exposeInt('status', {
      description:
        'The state as a number (0 unspecified, 1 pending, 2 in progress, 3 done, 4 cancelled), as the staking service sent it.',
      deprecationReason: 'Kept for compatibility: read `state`.',
    }),
    state: t.field({
      type: BuybackRoundStateRef,
      cacheScope: 'parent',
      description: 'The round’s state; UNSPECIFIED for a value the gateway does not know.',
      resolve: (r, _args, ctx) => knownOrUnspecified(ctx, 'BuybackRoundState', r.state),
    }),
    totalSlots: t.exposeInt('totalSlots', { description: 'Slots offered.' }),
    bookedSlots: t.exposeInt('bookedSlots', { description: 'Slots booked so far.' }),
    minAmount: t.expose('minAmount', {
      type: 'Amount',
      description: 'Smallest amount one slot takes, in base units (18 decimals).',
    }),
    maxAmount: t.expose('maxAmount', {
      type: 'Amount',
      description: 'Largest amount one slot takes, in base units (18 decimals).',
    }),
    totalCollected: t.expose('totalCollected', {
      type: 'Amount',
      description: 'Amount collected so far, in base units (18 decimals).',
    }),
    revenuePool: t.expose('revenuePool', {
      type: 'Amount',
      description: 'Revenue set aside for the buyback, in base units (18 decimals).',
    }),
    burnTxHash: t.exposeString('burnTxHash', {
      description: 'The burn transaction; empty until the round is burned.',
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When the round was created.' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime', description: 'When the round last changed.' }),
  }),
});

const UpdateBuybackRoundInput = builder.inputType('UpdateBuybackRoundInput', {
  description: 'Changes to a buyback round. Fields left out keep their values.',
  validate: beforeSending([INPUT], roundChange),
  fields: (t) => ({
    roundId: t.string({
      required: true,
      description: 'The round to change, for example "round-006".',
      validate: beforeSending([INPUT, 'roundId'], text('input.roundId')),
    }),
    startTime: t.field({
      type: 'DateTime',
      description: 'New opening time; must be before the closing time.',
    }),
    endTime: t.field({ type: 'DateTime', description: 'New closing time; must be after the opening time.' }),
    totalSlots: t.int({
      description: 'New number of slots: a positive 32-bit integer, not below the slots booked.',
      validate: beforeSending([INPUT, 'totalSlots'], totalSlots),
    }),
    minAmount: t.field({ type: 'Amount', description: 'New smallest amount per slot; not above maxAmount.' }),
    maxAmount: t.field({ type: 'Amount', description: 'New largest amount per slot; not below minAmount.' }),
  }),
});

const UpdateBuybackRoundPayload = builder
  .objectRef<{ round: BuybackRound }>('UpdateBuybackRoundPayload')
  .implement({
    description: 'The result of updateBuybackRound.',
    fields: (t) => ({
      round: t.field({
        cacheScope: 'parent',
        type: BuybackRoundRef,
        nullable: true,
        description: 'The round as stored after the update.',
        resolve: (p) => p.round,
      }),
    }),
  });

builder.mutationField('updateBuybackRound', (t) =>
  t.field({
    type: UpdateBuybackRoundPayload,
    complexity: UPSTREAM_COST,
    cacheScope: 'private',
    // The caller's own token: EXPLORER_TOKEN never writes.
    authScopes: { callerToken: true },
    unauthorizedResolver: (_root, _args, _ctx, _info, error) => {
      throw notSent(error);
    },
    description:
      'Changes a buyback round. Needs the caller’s bearer token; sent exactly once, never retried.',
    args: { input: t.arg({ type: UpdateBuybackRoundInput, required: true, description: 'What to change.' }) },
    resolve: async (_root, { input }, ctx) => {
      const round = await ctx.loaders.updateBuybackRound(input, ctx.callerToken as string);
      // The height after which the change is visible: answers of the head's height may have been
      // read (and kept, until the next block) before the write, so the next block's (docs/graph.md).
      const trace = ctx.loaders.scope.trace;
      const head = ctx.live.head.height();
      if (trace) trace.chainHeight = head === null ? null : head + 1;
      return { round };
    },
  }),
);
