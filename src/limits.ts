import { EnvelopArmor } from '@escape.tech/graphql-armor';
import {
  GraphQLError,
  Kind,
  NoSchemaIntrospectionCustomRule,
  type SelectionSetNode,
  type ValidationRule,
} from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Limits } from './config.js';

/**
 * Static limits on a document, checked at validation, before anything executes: depth, aliases,
 * tokens and directives by graphql-armor; root fields by a rule of ours (armor has none), and
 * introspection when it is off. All of them validation rules of the envelop pipeline, so that both
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
  return [
    ...(armor.protect().plugins as Plugin[]),
    {
      onValidate({ addValidationRule }) {
        addValidationRule(rootFields);
        if (!policy.introspection) addValidationRule(NoSchemaIntrospectionCustomRule);
      },
    },
  ];
}
