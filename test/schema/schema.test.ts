import { readdirSync, readFileSync } from 'node:fs';
import { generate } from '@graphql-codegen/cli';
import { isEnumType, isInputObjectType, isObjectType, isSpecifiedScalarType } from 'graphql';
import { describe, expect, it } from 'vitest';
import codegenConfig from '../../codegen.js';
import { schema } from '../../src/schema/index.js';
import { printedSchema } from '../../src/schema/print.js';

describe('checked-in artifacts', () => {
  it('schema.graphql matches the code (run `npm run schema`)', () => {
    expect(readFileSync(new URL('../../schema.graphql', import.meta.url), 'utf8')).toBe(printedSchema());
  });

  it('operations/generated matches schema.graphql and operations (run `npm run codegen`)', async () => {
    const outputs = await generate(
      { ...codegenConfig, cwd: new URL('../..', import.meta.url).pathname, silent: true },
      false,
    );
    // Every checked-in file of each output folder is generated, and nothing else is.
    expect(outputs.map((o: { filename: string }) => o.filename).sort()).toEqual(
      Object.keys(codegenConfig.generates)
        .flatMap((dir) =>
          readdirSync(new URL(`../../${dir}`, import.meta.url)).map((file) => `${dir}${file}`),
        )
        .sort(),
    );
    for (const output of outputs) {
      expect(
        readFileSync(new URL(`../../${output.filename}`, import.meta.url), 'utf8'),
        output.filename,
      ).toBe(output.content);
    }
  });

  it('describes every type, field, argument and enum value', () => {
    const missing: string[] = [];
    for (const type of Object.values(schema.getTypeMap())) {
      if (type.name.startsWith('__') || isSpecifiedScalarType(type)) continue;
      if (!type.description) missing.push(type.name);
      if (isObjectType(type) || isInputObjectType(type)) {
        for (const field of Object.values(type.getFields())) {
          if (!field.description) missing.push(`${type.name}.${field.name}`);
          for (const arg of 'args' in field ? field.args : []) {
            if (!arg.description) missing.push(`${type.name}.${field.name}(${arg.name})`);
          }
        }
      }
      if (isEnumType(type)) {
        for (const value of type.getValues())
          if (!value.description) missing.push(`${type.name}.${value.name}`);
      }
    }
    expect(missing).toEqual([]);
  });
});
