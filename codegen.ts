import type { CodegenConfig } from '@graphql-codegen/cli';

/**
 * Typed documents for the frontends' operations (operations/), from schema.graphql: the client
 * preset set up as a frontend sets it up. operations/generated/ is the typed client a frontend
 * copies from (its codegen.ts takes `gatewayScalars` and `clientPreset` as they are, with its own
 * documents and the gateway's URL or schema.graphql), and what the tests import. `npm run codegen`
 * writes it; test/schema/schema.test.ts fails when it drifts, and `npm run typecheck` checks it.
 */

/**
 * The gateway's custom scalars as they travel (src/schema/scalars.ts): amounts, decimals, big
 * integers and times as strings, never numbers; JSON as whatever it holds.
 */
export const gatewayScalars = {
  Amount: 'string',
  BigInt: 'string',
  DateTime: 'string',
  Decimal: 'string',
  JSON: 'unknown',
} as const;

/** The client preset's target: every scalar mapped (a new one without a mapping fails codegen). */
export const clientPreset = {
  preset: 'client',
  // persisted-documents.json: the manifest a gateway started with PERSISTED_OPERATIONS accepts.
  presetConfig: { fragmentMasking: false, persistedDocuments: true },
  config: {
    useTypeImports: true,
    emitLegacyCommonJSImports: false,
    enumsAsTypes: true,
    strictScalars: true,
    scalars: gatewayScalars,
  },
} satisfies CodegenConfig['generates'][string];

const config: CodegenConfig = {
  schema: 'schema.graphql',
  documents: ['operations/*.graphql'],
  generates: {
    'operations/generated/': clientPreset,
  },
};

export default config;
