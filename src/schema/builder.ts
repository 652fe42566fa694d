import SchemaBuilder from '@pothos/core';
import type { Context } from '../context.js';

interface GatewayTypes {
  Context: Context;
  DefaultFieldNullability: false;
  Scalars: {
    Amount: { Input: string; Output: string };
    Decimal: { Input: string; Output: string };
    BigInt: { Input: string; Output: string };
    DateTime: { Input: string; Output: string };
    JSON: { Input: unknown; Output: unknown };
  };
}

/** The builder's resolved type parameters, for helpers that take refs or argument builders. */
export type Types = PothosSchemaTypes.ExtendDefaultTypes<GatewayTypes>;

/** The schema builder, and nothing else: each domain file under schema/ adds its own types. */
export const builder = new SchemaBuilder<GatewayTypes>({ defaultFieldNullability: false });

builder.queryType({ description: 'Reads of chain, search and staking data.' });
builder.mutationType({ description: 'Writes. Each is sent to its upstream exactly once.' });
