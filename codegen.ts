import type { CodegenConfig } from '@graphql-codegen/cli';

/** Typed documents for the frontend operations in operations/, generated from schema.graphql. */
const config: CodegenConfig = {
  schema: 'schema.graphql',
  documents: ['operations/*.graphql'],
  generates: {
    'test/generated/': {
      preset: 'client',
      // persisted-documents.json: the manifest a gateway started with PERSISTED_OPERATIONS accepts.
      presetConfig: { fragmentMasking: false, persistedDocuments: true },
      config: {
        useTypeImports: true,
        emitLegacyCommonJSImports: false,
        enumsAsTypes: true,
        scalars: {
          Amount: 'string',
          Decimal: 'string',
          BigInt: 'string',
          DateTime: 'string',
          JSON: 'unknown',
        },
      },
    },
  },
};

export default config;
