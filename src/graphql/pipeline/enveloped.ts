import type { DocumentNode, ExecutionArgs, GraphQLError, GraphQLSchema } from 'graphql';

/**
 * What Yoga's processRequest does before it executes, for the adapter's own paths (the JSON fast
 * path, the SSE and multipart writer, WebSockets): parse, validate, then the context, each through
 * the envelop pipeline, so that every plugin's hooks run as on Yoga's path. A document that does
 * not parse throws its GraphQLError, as Yoga's parse does; one that does not validate is answered
 * by its errors. The caller executes or subscribes with the arguments.
 */

/** The envelop pipeline of one request (Yoga's `getEnveloped`), as far as the sequence uses it. */
export interface Envelope {
  schema: GraphQLSchema;
  parse(source: string | undefined): DocumentNode;
  validate(schema: GraphQLSchema, document: DocumentNode): readonly GraphQLError[];
  contextFactory(): unknown;
}

export type EnvelopedArgs = ExecutionArgs & { signal?: unknown };

/** A request's GraphQL parameters, as any of the adapter's paths reads them. */
export interface EnvelopedParams {
  query?: string;
  variables?: Record<string, unknown> | null;
  operationName?: string | null;
}

export async function envelopedArgs(
  envelope: Envelope,
  params: EnvelopedParams,
  signal: unknown,
): Promise<EnvelopedArgs | { errors: readonly GraphQLError[] }> {
  const document = envelope.parse(params.query);
  const errors = envelope.validate(envelope.schema, document);
  if (errors.length > 0) return { errors };
  return {
    schema: envelope.schema,
    document,
    contextValue: await envelope.contextFactory(),
    variableValues: params.variables ?? undefined,
    operationName: params.operationName ?? undefined,
    signal,
  };
}
