/** `npm run schema`: prints the schema, sorted, to schema.graphql (a test fails when it drifts). */
import { writeFileSync } from 'node:fs';
import { lexicographicSortSchema, printSchema } from 'graphql';
import { schema } from './index.js';

export const printedSchema = (): string => `${printSchema(lexicographicSortSchema(schema))}\n`;

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].replace(/\\/g, '/'))) {
  writeFileSync(new URL('../../schema.graphql', import.meta.url), printedSchema());
  console.log('schema.graphql written');
}
