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
  type OperationDefinitionNode,
  type SelectionSetNode,
  specifiedScalarTypes,
  type ValueNode,
  valueFromAST,
} from 'graphql';
import { type ErrorCode, GatewayError } from '../../errors.js';
import { asksForCost } from '../../exchange/headers.js';
import { traceOf } from '../../ops/request-trace.js';
import { type RateLimit, type Refusal, rateLimited } from '../../scale/rate-limit.js';
import type { Context } from '../../schema/context.js';
import { type OperationInfo, type PartPlugin, partPlugin, type RequestPart } from '../pipeline/parts.js';

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
  /** The request's coerced variables; null while the price is worked out for every request at once. */
  variables: Record<string, unknown> | null;
  /**
   * Fields whose declared cost was worked out without the arguments variables give them: their
   * arguments are still coerced on every request (a null fed to a non-null one refuses it).
   */
  unread: { field: GraphQLField<unknown, unknown>; node: FieldNode }[];
  /** Set when a declared cost read an argument a variable gives (even one that caught the refusal). */
  probe: { readUnknown: boolean };
  /** Selection sets being priced (a fragment cycle is refused) and those priced, per type. */
  active: Set<SelectionSetNode>;
  done: Map<SelectionSetNode, Map<GraphQLNamedType, number>>;
}

/** Thrown when a price depends on the request's variables: it is then worked out per request. */
const DEPENDS_ON_VARIABLES = Symbol('depends on variables');

const listOf = (type: GraphQLField<unknown, unknown>['type']) =>
  isListType(isNonNullType(type) ? type.ofType : type);

/**
 * Whether a value of the document holds a variable anywhere (`$x`, `[$x]`, `{ a: $x }`), or one of
 * the variables named in `among`.
 */
function holdsVariable(value: ValueNode, among?: ReadonlySet<string>): boolean {
  if (value.kind === Kind.VARIABLE) return among === undefined || among.has(value.name.value);
  if (value.kind === Kind.LIST) return value.values.some((item) => holdsVariable(item, among));
  if (value.kind === Kind.OBJECT) return value.fields.some((field) => holdsVariable(field.value, among));
  return false;
}

/** The variables a price reads from these arguments: refused when none are at hand yet. */
function variablesFor(pricing: Pricing, nodes: readonly { value: ValueNode }[] | undefined) {
  if (pricing.variables === null && nodes?.some((node) => holdsVariable(node.value)))
    throw DEPENDS_ON_VARIABLES;
  return pricing.variables ?? {};
}

/**
 * A field's arguments as its declared cost reads them. While the price is worked out for every
 * request at once, an argument given by a variable is unknown: reading it (or listing the
 * arguments) means the price depends on the variables. So `delegations(delegatorAddress: $d,
 * pageSize: 20)` has one price, whatever `$d` is.
 */
function argumentsFor(pricing: Pricing, field: GraphQLField<unknown, unknown>, node: FieldNode) {
  if (pricing.variables !== null) return getArgumentValues(field, node, pricing.variables);
  const given = new Map((node.arguments ?? []).map((argument) => [argument.name.value, argument.value]));
  const known: Record<string, unknown> = {};
  const unknown = new Set<string>();
  for (const definition of field.args) {
    const value = given.get(definition.name);
    if (value && holdsVariable(value)) unknown.add(definition.name);
    else if (value) known[definition.name] = valueFromAST(value, definition.type);
    else if (definition.defaultValue !== undefined) known[definition.name] = definition.defaultValue;
  }
  if (unknown.size === 0) return known;
  pricing.unread.push({ field, node });
  const refuse = (name: string | symbol | null) => {
    if (name !== null && (typeof name !== 'string' || !unknown.has(name))) return;
    pricing.probe.readUnknown = true;
    throw DEPENDS_ON_VARIABLES;
  };
  return new Proxy(known, {
    get(target, name) {
      refuse(name);
      return Reflect.get(target, name);
    },
    has(target, name) {
      refuse(name);
      return Reflect.has(target, name);
    },
    ownKeys() {
      refuse(null);
      return [];
    },
    getOwnPropertyDescriptor(target, name) {
      refuse(name);
      return Reflect.getOwnPropertyDescriptor(target, name);
    },
  });
}

function priceField(pricing: Pricing, node: FieldNode, type: GraphQLNamedType): number {
  const field = isObjectType(type) || isInterfaceType(type) ? type.getFields()[node.name.value] : undefined;
  // Introspection fields cost one, whatever they select.
  if (!field) return DEFAULT_COST;
  let declared = field.extensions.complexity as DeclaredCost | undefined;
  if (typeof declared === 'function') {
    // A cost is declared from the field's arguments alone, never from the caller.
    declared = declared(argumentsFor(pricing, field, node), {}, field);
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
  const variables = variablesFor(
    pricing,
    node.directives.flatMap((directive) => directive.arguments ?? []),
  );
  const skip = getDirectiveValues(GraphQLSkipDirective, node, variables);
  if (skip?.if === true) return true;
  const include = getDirectiveValues(GraphQLIncludeDirective, node, variables);
  return include?.if === false;
}

/**
 * An operation's price for given coerced variables (null: the price that holds for any).
 * `readsVariables: false`: the price reads none, so variables that coerce need not be at hand.
 */
type PriceOf = ((variables: Record<string, unknown> | null) => number | GatewayError) & {
  readsVariables?: false;
};

/**
 * How an operation is priced, worked out once per prepared operation: when no priced argument and
 * no `@skip`/`@include` reads a variable, its one price (or its one refusal); otherwise a pricing
 * per request. Anything else than a figure refuses the operation (contract.md §7): a null fed to a
 * non-null argument is BAD_USER_INPUT with graphql-js's own message, any other failure an internal
 * error.
 */
function pricer(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode): PriceOf {
  const root = schema.getRootType(operation.operation);
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions)
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  const unread: Pricing['unread'] = [];
  const probe = { readUnknown: false };
  /** The figure for these variables (null: for any), or why there is none (thrown). */
  const figure = (variables: Record<string, unknown> | null): number => {
    if (!root) throw new Error('no root type');
    const pricing: Pricing = {
      schema,
      fragments,
      variables,
      unread,
      probe,
      active: new Set(),
      done: new Map(),
    };
    const cost = priceSelectionSet(pricing, operation.selectionSet, root);
    if (Number.isFinite(cost) && cost >= 0) return cost;
    throw new Error(`priced at ${cost}`);
  };
  const perRequest: PriceOf = (variables) => {
    try {
      return figure(variables);
    } catch (error) {
      return refusal(error);
    }
  };
  // Worked out once: the figure, or why there is none (each request gets a refusal of its own).
  let once: { cost: number } | { error: unknown };
  try {
    once = { cost: figure(null) };
  } catch (error) {
    if (error === DEPENDS_ON_VARIABLES) return perRequest;
    once = { error };
  }
  // A declared cost that caught the refusal still read a variable's argument.
  if (probe.readUnknown) return perRequest;
  const fixed = (): number | GatewayError => ('cost' in once ? once.cost : refusal(once.error));
  // The arguments the price did not read are coerced all the same, as graphql-js would. Once the
  // variables coerced, only a nullable variable can refuse one (an explicit null where the argument,
  // or a place inside it, is non-null): an argument fed by non-null variables alone coerces.
  const nullable = new Set(
    (operation.variableDefinitions ?? [])
      .filter((definition) => definition.type.kind !== Kind.NON_NULL_TYPE)
      .map((definition) => definition.variable.name.value),
  );
  const checked = unread.filter(({ node }) =>
    node.arguments?.some((argument) => holdsVariable(argument.value, nullable)),
  );
  if (checked.length === 0) return Object.assign(fixed, { readsVariables: false as const });
  return (variables) => {
    try {
      for (const { field, node } of checked) getArgumentValues(field, node, variables ?? {});
    } catch (error) {
      return refusal(error);
    }
    return fixed();
  };
}

/** Whether variables coerce, said without coercing them: false is no refusal, only "ask graphql-js". */
type CoercesAlike = (variables: Record<string, unknown>) => boolean;

/** What each of graphql-js's own scalars accepts as a variable's value (their parseValue). */
const SCALAR_VALUES: Readonly<Record<string, (value: unknown) => boolean>> = {
  String: (value) => typeof value === 'string',
  Boolean: (value) => typeof value === 'boolean',
  ID: (value) => typeof value === 'string' || Number.isInteger(value),
  Int: (value) =>
    Number.isInteger(value) && (value as number) <= 2 ** 31 - 1 && (value as number) >= -(2 ** 31),
  Float: (value) => typeof value === 'number' && Number.isFinite(value),
};

/**
 * For an operation whose variables are all of graphql-js's own scalars (`String!`, `Int`…), a check
 * that a request's values coerce as graphql-js's `getVariableValues` would let them: given or
 * defaulted where non-null, and each one its scalar accepts. Null for any other operation.
 */
function coercesAlike(schema: GraphQLSchema, operation: OperationDefinitionNode): CoercesAlike | null {
  const checks: {
    name: string;
    nonNull: boolean;
    defaulted: boolean;
    accepts: (value: unknown) => boolean;
  }[] = [];
  for (const definition of operation.variableDefinitions ?? []) {
    const nonNull = definition.type.kind === Kind.NON_NULL_TYPE;
    const type = definition.type.kind === Kind.NON_NULL_TYPE ? definition.type.type : definition.type;
    if (type.kind !== Kind.NAMED_TYPE) return null;
    const scalar = specifiedScalarTypes.find((specified) => specified.name === type.name.value);
    const accepts = SCALAR_VALUES[type.name.value];
    // Only when the schema's type of that name is graphql-js's own, which coercion would ask.
    if (!scalar || !accepts || schema.getType(scalar.name) !== scalar) return null;
    const defaulted = definition.defaultValue !== undefined;
    checks.push({ name: definition.variable.name.value, nonNull, defaulted, accepts });
  }
  return (variables) => {
    for (const { name, nonNull, defaulted, accepts } of checks) {
      // Left out: its default, or null; refused where non-null without a default.
      if (!Object.hasOwn(variables, name)) {
        if (nonNull && !defaulted) return false;
        continue;
      }
      // Null: refused where non-null, even with a default.
      const value = variables[name];
      if (value === null ? nonNull : !accepts(value)) return false;
    }
    return true;
  };
}

/** Why an operation cannot be priced: the caller's mistake (graphql-js's own message), else ours. */
const refusal = (error: unknown): GatewayError =>
  error instanceof GraphQLError
    ? new GatewayError(error.message, 'BAD_USER_INPUT')
    : new GatewayError('The operation could not be priced, so it does not run.', 'INTERNAL_SERVER_ERROR');

/**
 * The cost of the operation a request executes, or why it cannot be priced: an operation that
 * cannot be priced does not run (contract.md §7). Variables that do not coerce are BAD_USER_INPUT
 * with graphql-js's own message; a missing operation likewise.
 */
function costFor(
  schema: GraphQLSchema,
  operation: OperationDefinitionNode,
  price: PriceOf,
  variables: Record<string, unknown> | null | undefined,
  coerces: CoercesAlike | null = null,
): number | GatewayError {
  const definitions = operation.variableDefinitions ?? [];
  if (definitions.length === 0) return price({});
  // A price that reads no variable needs only to know that they coerce: said at once for values
  // that do, else graphql-js coerces them, for its own messages.
  if (price.readsVariables === false && coerces?.(variables ?? {})) return price(null);
  const coerced = getVariableValues(schema, definitions, variables ?? {});
  if (coerced.errors)
    return new GatewayError(coerced.errors.map((e) => e.message).join(' '), 'BAD_USER_INPUT');
  return price(coerced.coerced);
}

const unknownOperation = (operationName: string | null | undefined) =>
  new GatewayError(
    operationName ? `Unknown operation named "${operationName}".` : 'Name the operation to run.',
    'BAD_USER_INPUT',
  );

/** The cost of an operation (as the pricing step works it out), or why it cannot be priced. */
export function operationCost(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName: string | null | undefined,
  variables: Record<string, unknown> | null | undefined,
): number | GatewayError {
  const operation = getOperationAST(document, operationName);
  if (!operation) return unknownOperation(operationName);
  return costFor(
    schema,
    operation,
    pricer(schema, document, operation),
    variables,
    coercesAlike(schema, operation),
  );
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

/**
 * Notes an operation's price on its request's trace when the request asks for it
 * (`x-graphql-cost: true`): exchange/exchange.ts puts it in the answer's extensions, with the budget the
 * charge left. Never on the result itself, which the response cache may keep for everyone.
 */
function noteCost(context: Context, cost: number): void {
  const { request } = context as { request?: { headers: { get(name: string): string | null } } };
  if (!request || !asksForCost(request.headers)) return;
  const trace = traceOf(request);
  if (trace) trace.cost = { requested: cost, limit: context.maxComplexity };
}

/**
 * The pricing step of every operation (queries, the mutation, subscriptions) before it runs: its
 * price worked out once per prepared operation, then per request the variables' coercion, the
 * MAX_COMPLEXITY refusal and the charge to the client's budget.
 */
function pricingPart(
  { schema, document, operationName }: OperationInfo,
  rateLimit: RateLimit | null,
): RequestPart {
  const operation = getOperationAST(document, operationName);
  if (!operation) return () => ({ answer: { errors: [unknownOperation(operationName)] } });
  // The mutation never hides whether it happened: refused here, it was not sent.
  const mutation = operation.operation === 'mutation';
  const refuse = (error: GatewayError) => ({ answer: { errors: [mutation ? notApplied(error) : error] } });
  const price = pricer(schema, document, operation);
  const coerces = coercesAlike(schema, operation);
  const refuseOver = (over: Refusal | null) => (over ? refuse(rateLimited(over.retryAfterMs)) : undefined);
  return (args) => {
    const context = args.contextValue as Context;
    const cost = costFor(
      schema,
      operation,
      price,
      args.variableValues as Record<string, unknown> | undefined,
      coerces,
    );
    if (cost instanceof GatewayError) return refuse(cost);
    noteCost(context, cost);
    if (cost > context.maxComplexity) return refuse(tooCostly(cost, context.maxComplexity));
    if (!rateLimit || cost <= 0) return undefined;
    const over = rateLimit.chargeRequest(context, cost);
    return over instanceof Promise ? over.then(refuseOver) : refuseOver(over);
  };
}

/** Prices every operation before it runs, and charges it: one part of every prepared request. */
export function usePricing(rateLimit: RateLimit | null): PartPlugin {
  return partPlugin((operation) => pricingPart(operation, rateLimit), { subscriptions: true });
}
