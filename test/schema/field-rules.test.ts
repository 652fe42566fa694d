import {
  type GraphQLArgument,
  type GraphQLField,
  type GraphQLInputObjectType,
  getNamedType,
  isInputObjectType,
  isObjectType,
} from 'graphql';
import { describe, expect, it } from 'vitest';
import { schema } from '../../src/schema/index.js';
import { PAGE_SIZE } from '../../src/schema/page.js';

/**
 * The rules a field declares beside its type (schema/builder.ts): argument rules (`validate:`),
 * what it needs of the caller (`authScopes:`) and the one definition of paging. A walk over the
 * built schema, so that no field can forget one.
 */

const fields = (): { coordinate: string; field: GraphQLField<unknown, unknown> }[] =>
  Object.values(schema.getTypeMap()).flatMap((type) =>
    isObjectType(type) && !type.name.startsWith('__')
      ? Object.values(type.getFields()).map((field) => ({ coordinate: `${type.name}.${field.name}`, field }))
      : [],
  );

const hasRule = (extensions: { '@pothos/plugin-validation'?: { schemas?: unknown[] } }) =>
  (extensions['@pothos/plugin-validation']?.schemas?.length ?? 0) > 0;

/** An argument is checked by a rule of its own, or (an input object) by rules on every field of it. */
function checked(arg: GraphQLArgument): boolean {
  if (hasRule(arg.extensions)) return true;
  const type = getNamedType(arg.type);
  if (!isInputObjectType(type)) return false;
  const input = type as GraphQLInputObjectType;
  return (
    hasRule(input.extensions) ||
    Object.values(input.getFields()).every(
      (field) => hasRule(field.extensions) || isInputObjectType(getNamedType(field.type)),
    )
  );
}

describe('rules declared on the fields', () => {
  it('gives every argument of every field a rule, checked before any resolver runs', () => {
    const args = fields().flatMap(({ coordinate, field }) =>
      field.args.map((arg) => ({ name: `${coordinate}(${arg.name})`, arg })),
    );
    // The walk reaches the arguments of queries, nested fields, the mutation and subscriptions.
    expect(args.map(({ name }) => name)).toEqual(
      expect.arrayContaining([
        'Query.validators(first)',
        'Address.delegations(after)',
        'Mutation.updateBuybackRound(input)',
        'Subscription.validatorUpdated(operatorAddress)',
      ]),
    );
    expect(args.filter(({ arg }) => !checked(arg)).map(({ name }) => name)).toEqual([]);
  });

  it('checks the fields of the buyback update one by one and together', () => {
    const input = schema.getType('UpdateBuybackRoundInput') as GraphQLInputObjectType;
    // minAmount ≤ maxAmount and startTime < endTime relate two fields: a rule on the whole input.
    expect(hasRule(input.extensions)).toBe(true);
    expect(hasRule(input.getFields().roundId?.extensions ?? {})).toBe(true);
    expect(hasRule(input.getFields().totalSlots?.extensions ?? {})).toBe(true);
  });

  it('pages every list with one definition: page from 1, pageSize 1 to 100 (20 by default), a cursor', () => {
    const paged = fields().filter(({ field }) => getNamedType(field.type).name.endsWith('Page'));
    expect(paged.map(({ coordinate }) => coordinate).sort()).toEqual([
      'Address.delegations',
      'Query.contractsBySymbol',
      'Query.delegations',
      'Query.failedTransactions',
      'Query.validators',
    ]);
    for (const { coordinate, field } of paged) {
      const byName = Object.fromEntries(field.args.map((arg) => [arg.name, arg]));
      expect(byName.page?.defaultValue, coordinate).toBe(1);
      expect(byName.pageSize?.defaultValue, coordinate).toBe(PAGE_SIZE.default);
      expect(byName.pageSize?.description, coordinate).toBe(`Items per page, 1 to ${PAGE_SIZE.max}.`);
      expect(byName.cursor, coordinate).toBeDefined();
    }
  });

  it('declares what each field needs of the caller: the explorer’s token for its reads, the caller’s own to write', () => {
    const declared = Object.fromEntries(
      fields().flatMap(({ coordinate, field }) => {
        const scopes = (field.extensions.pothosOptions as { authScopes?: unknown } | undefined)?.authScopes;
        return scopes ? [[coordinate, scopes]] : [];
      }),
    );
    expect(declared).toEqual({
      'Query.contractsBySymbol': { explorerToken: true },
      'Query.failedTransactions': { explorerToken: true },
      'Mutation.updateBuybackRound': { callerToken: true },
      'Subscription.failedTransactionAdded': { explorerToken: true },
    });
    // Every write needs the caller's own token, never the server's.
    const writes = Object.keys(schema.getMutationType()?.getFields() ?? {});
    for (const name of writes) expect(declared[`Mutation.${name}`]).toEqual({ callerToken: true });
  });
});
