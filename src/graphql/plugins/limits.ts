import { EnvelopArmor } from '@escape.tech/graphql-armor';
import {
  GraphQLError,
  Kind,
  NoSchemaIntrospectionCustomRule,
  type SelectionSetNode,
  type ValidationRule,
} from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Limits } from '../../config.js';
import { oneSpellingPerArgument } from '../../schema/page.js';
import { partPlugin, type RequestPart } from '../pipeline/parts.js';

/**
 * Static limits on a document, checked at validation, before anything executes: depth, aliases,
 * tokens and directives by graphql-armor; root fields by a rule of ours (armor has none), and
 * introspection when it is off. A request's variables are bounded in nesting and count when
 * execution starts, before they are coerced. All of them validation rules of the envelop pipeline, so that both
 * transports (http/fast-path.ts and Yoga's) apply them: nothing here hooks Yoga's HTTP stages. Query
 * cost, which depends on arguments such as pageSize, is priced by the Pothos complexity plugin
 * when execution starts (see schema/builder.ts).
 */

const limitError = (message: string, limit: string) =>
  new GraphQLError(message, { extensions: { code: 'BAD_USER_INPUT', limit } });

/** Counts the fields each operation selects at its root, through fragments. */
function maxRootFields(max: number): ValidationRule {
  return (context) => {
    const count = (set: SelectionSetNode, seen: Set<string>): number =>
      set.selections.reduce((n, selection) => {
        if (selection.kind === Kind.FIELD) return n + 1;
        if (selection.kind === Kind.INLINE_FRAGMENT) return n + count(selection.selectionSet, seen);
        const name = selection.name.value;
        const fragment = context.getFragment(name);
        if (!fragment || seen.has(name)) return n;
        return n + count(fragment.selectionSet, new Set(seen).add(name));
      }, 0);
    return {
      OperationDefinition(node) {
        const fields = count(node.selectionSet, new Set());
        if (fields > max) {
          context.reportError(
            limitError(
              `The operation selects ${fields} root fields; at most ${max} are allowed.`,
              'rootFields',
            ),
          );
        }
      },
    };
  };
}

/**
 * Why a request's variables are refused, or null: nested deeper than `maxDepth` objects and lists,
 * or holding more than `maxValues` values (object fields and list items, through nesting). An
 * iterative walk that stops at the first excess: bounded time and memory whatever was sent.
 */
function variablesExcess(variables: unknown, maxDepth: number, maxValues: number): string | null {
  const pending: [unknown, number][] = [[variables, 0]];
  let values = 0;
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [value, depth] = next;
    if (typeof value !== 'object' || value === null) continue;
    if (depth > maxDepth) return `The variables nest deeper than ${maxDepth} levels.`;
    const items = Array.isArray(value) ? value : Object.values(value);
    values += items.length;
    if (values > maxValues) return `The variables hold more than ${maxValues} values.`;
    for (const item of items) pending.push([item, depth + 1]);
  }
  return null;
}

export interface DocumentPolicy {
  /** Whether `__schema` and `__type` may be queried. */
  introspection: boolean;
  /** Whether validation errors may suggest field names ("did you mean …?"). */
  fieldSuggestions: boolean;
}

export function limitPlugins(limits: Limits, policy: DocumentPolicy): Plugin[] {
  const armor = new EnvelopArmor({
    maxDepth: { n: limits.depth, flattenFragments: true, exposeLimits: true },
    maxAliases: { n: limits.aliases, exposeLimits: true },
    maxTokens: { n: limits.tokens, exposeLimits: true },
    maxDirectives: { n: limits.directives, exposeLimits: true },
    costLimit: { enabled: false },
    blockFieldSuggestion: { enabled: !policy.fieldSuggestions },
  });
  const rootFields = maxRootFields(limits.rootFields);
  // Variables too deep or too many: the request's own, whatever its operation.
  const boundVariables: RequestPart = ({ variableValues }) => {
    const excess = variablesExcess(variableValues, limits.variablesDepth, limits.variableValues);
    return excess ? { answer: { errors: [limitError(excess, 'variables')] } } : undefined;
  };
  return [
    ...(armor.protect().plugins as Plugin[]),
    {
      // Before anything prices, coerces or executes them, for every kind of operation (a
      // subscription starts through onSubscribe, not onExecute).
      ...partPlugin(() => boundVariables, { subscriptions: true }),
      onValidate({ addValidationRule }) {
        addValidationRule(rootFields);
        // Relay's paging names beside ours (`first`/`pageSize`, `after`/`cursor`): one of a pair.
        addValidationRule(oneSpellingPerArgument);
        if (!policy.introspection) addValidationRule(NoSchemaIntrospectionCustomRule);
      },
    },
  ];
}
