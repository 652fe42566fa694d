import {
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type FragmentSpreadNode,
  GraphQLError,
  type GraphQLField,
  GraphQLIncludeDirective,
  type GraphQLNamedType,
  type GraphQLSchema,
  GraphQLSkipDirective,
  getArgumentValues,
  getDirectiveValues,
  getNamedType,
  getOperationAST,
  getVariableValues,
  type InlineFragmentNode,
  isInterfaceType,
  isListType,
  isNonNullType,
  isObjectType,
  Kind,
  type SelectionSetNode,
} from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { type ErrorCode, GatewayError } from '../../errors.js';
import type { Context } from '../context.js';
import { clientOf, type RateLimit, rateLimited } from './rate-limit.js';

/**
 * Where a request is priced: every operation's cost, from the costs its fields declare
 * (`complexity:` on the field, schema/builder.ts: a field that calls an upstream 10, others 1, a
 * paged field multiplying its selection by `pageSize` or `first`, a short list by 10), worked out once before
 * it executes. Over MAX_COMPLEXITY it is refused (BAD_USER_INPUT, no upstream call); otherwise,
 * with a rate limit, its cost is charged to the client's budget (429 RATE_LIMITED over it).
 *
 * The arguments a cost reads are the operation's own, coerced but not checked: an argument a field's
 * rule refuses fails that field alone when it runs, and still counts towards the price of the rest.
 * (Pothos' own pricing maps arguments through the fields' rules, so that one refused argument
 * would make the whole operation unpriceable.) A selection `@skip`/`@include` leaves out costs
 * nothing. Pricing fails closed: an operation it cannot price is refused, never run unpriced.
 * Subscriptions are priced when they start; an operation with `@defer`/`@stream` as a whole.
 */

const DEFAULT_COST = 1;
const DEFAULT_LIST_MULTIPLIER = 10;

type FieldCost = number | { field?: number; multiplier?: number };
type DeclaredCost = FieldCost | ((args: Record<string, unknown>, ctx: object, field: unknown) => FieldCost);

interface Pricing {
  schema: GraphQLSchema;
  fragments: Map<string, FragmentDefinitionNode>;
  variables: Record<string, unknown>;
  ctx: object;
  /** Selection sets being priced (a fragment cycle is refused) and those priced, per type. */
  active: Set<SelectionSetNode>;
  done: Map<SelectionSetNode, Map<GraphQLNamedType, number>>;
}

const listOf = (type: GraphQLField<unknown, unknown>['type']) =>
  isListType(isNonNullType(type) ? type.ofType : type);

function priceField(pricing: Pricing, node: FieldNode, type: GraphQLNamedType): number {
  const field = isObjectType(type) || isInterfaceType(type) ? type.getFields()[node.name.value] : undefined;
  // Introspection fields cost one, whatever they select.
  if (!field) return DEFAULT_COST;
  let declared = field.extensions.complexity as DeclaredCost | undefined;
  if (typeof declared === 'function') {
    declared = declared(getArgumentValues(field, node, pricing.variables), pricing.ctx, field);
  }
  const multiplier =
    typeof declared === 'object' && declared.multiplier !== undefined
      ? declared.multiplier
      : listOf(field.type)
        ? DEFAULT_LIST_MULTIPLIER
        : 1;
  const own = typeof declared === 'number' ? declared : (declared?.field ?? DEFAULT_COST);
  const below = node.selectionSet
    ? priceSelectionSet(pricing, node.selectionSet, getNamedType(field.type)) * Math.max(multiplier, 0)
    : 0;
  return own + below;
}

function priceFragment(
  pricing: Pricing,
  fragment: FragmentDefinitionNode | InlineFragmentNode,
  type: GraphQLNamedType,
): number {
  const condition = fragment.typeCondition ? pricing.schema.getType(fragment.typeCondition.name.value) : type;
  if (!condition) throw new Error('unknown type condition');
  return priceSelectionSet(pricing, fragment.selectionSet, condition);
}

function priceSelectionSet(pricing: Pricing, set: SelectionSetNode, type: GraphQLNamedType): number {
  const known = pricing.done.get(set)?.get(type);
  if (known !== undefined) return known;
  if (pricing.active.has(set)) throw new Error('fragment cycle');
  pricing.active.add(set);
  let cost = 0;
  for (const selection of set.selections) {
    if (skipped(pricing, selection)) continue;
    if (selection.kind === Kind.FIELD) cost += priceField(pricing, selection, type);
    else if (selection.kind === Kind.INLINE_FRAGMENT) cost += priceFragment(pricing, selection, type);
    else {
      const fragment = pricing.fragments.get(selection.name.value);
      if (!fragment) throw new Error('unknown fragment');
      cost += priceFragment(pricing, fragment, type);
    }
  }
  pricing.active.delete(set);
  const byType = pricing.done.get(set) ?? new Map<GraphQLNamedType, number>();
  pricing.done.set(set, byType.set(type, cost));
  return cost;
}

/** Whether `@skip`/`@include` leave a selection out (it then costs nothing: it never runs). */
function skipped(pricing: Pricing, node: FieldNode | InlineFragmentNode | FragmentSpreadNode): boolean {
  if (!node.directives?.length) return false;
  const skip = getDirectiveValues(GraphQLSkipDirective, node, pricing.variables);
  if (skip?.if === true) return true;
  const include = getDirectiveValues(GraphQLIncludeDirective, node, pricing.variables);
  return include?.if === false;
}

/**
 * The cost of the operation a request executes, or why it cannot be priced: an operation that
 * cannot be priced does not run (contract.md §7). Variables that do not coerce, and arguments that
 * do not (a null fed to a non-null argument), are BAD_USER_INPUT with graphql-js's own message; a
 * missing operation likewise; anything else refuses the operation as an internal error.
 */
export function operationCost(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName: string | null | undefined,
  variables: Record<string, unknown> | null | undefined,
  ctx: object = {},
): number | GatewayError {
  const operation = getOperationAST(document, operationName);
  const root = operation && schema.getRootType(operation.operation);
  if (!operation || !root) {
    return new GatewayError(
      operationName ? `Unknown operation named "${operationName}".` : 'Name the operation to run.',
      'BAD_USER_INPUT',
    );
  }
  const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], variables ?? {});
  if (coerced.errors)
    return new GatewayError(coerced.errors.map((e) => e.message).join(' '), 'BAD_USER_INPUT');
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions)
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  try {
    const cost = priceSelectionSet(
      { schema, fragments, variables: coerced.coerced, ctx, active: new Set(), done: new Map() },
      operation.selectionSet,
      root,
    );
    if (Number.isFinite(cost) && cost >= 0) return cost;
    throw new Error(`priced at ${cost}`);
  } catch (error) {
    if (error instanceof GraphQLError) return new GatewayError(error.message, 'BAD_USER_INPUT');
    return new GatewayError(
      'The operation could not be priced, so it does not run.',
      'INTERNAL_SERVER_ERROR',
    );
  }
}

/** The refusal of an operation over MAX_COMPLEXITY, with the figure it was priced at. */
const tooCostly = (cost: number, max: number): GatewayError =>
  new GatewayError(
    `The query costs ${cost}; at most ${max} is allowed. Ask for smaller pages or fewer fields.`,
    'BAD_USER_INPUT',
    { limit: 'complexity', cost },
  );

/** A refusal of the mutation before it was sent: `applied: false` (contract.md §7). */
const notApplied = (error: GatewayError): GatewayError =>
  new GatewayError(error.message, error.extensions.code as ErrorCode, {
    ...error.extensions,
    applied: false,
  });

type Args = Parameters<NonNullable<Plugin['onExecute']>>[0]['args'];

/** Prices every operation (queries, the mutation, subscriptions) before it runs, and charges it. */
export function usePricing(rateLimit: RateLimit | null): Plugin {
  const price = async (args: Args, stop: (result: { errors: GatewayError[] }) => void): Promise<void> => {
    const context = args.contextValue as unknown as Context;
    // The mutation never hides whether it happened: refused here, it was not sent.
    const mutation = getOperationAST(args.document, args.operationName)?.operation === 'mutation';
    const refuse = ({ errors }: { errors: GatewayError[] }) =>
      stop({ errors: mutation ? errors.map(notApplied) : errors });
    const cost = operationCost(
      args.schema,
      args.document,
      args.operationName,
      args.variableValues as Record<string, unknown> | undefined,
      context,
    );
    if (cost instanceof GatewayError) return refuse({ errors: [cost] });
    if (cost > context.maxComplexity) return refuse({ errors: [tooCostly(cost, context.maxComplexity)] });
    const over =
      rateLimit && cost > 0 ? await rateLimit.charge(clientOf(context, rateLimit.client), cost) : null;
    if (over) refuse({ errors: [rateLimited(over.retryAfterMs)] });
  };
  return {
    onExecute: ({ args, setResultAndStopExecution }) => price(args, setResultAndStopExecution),
    onSubscribe: ({ args, setResultAndStopExecution }) => price(args, setResultAndStopExecution),
  };
}
