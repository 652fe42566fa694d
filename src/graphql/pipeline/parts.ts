import {
  type DocumentNode,
  type ExecutionArgs,
  type ExecutionResult,
  type GraphQLSchema,
  getOperationAST,
} from 'graphql';
import type { CompiledQuery } from 'graphql-jit';
import type { Plugin } from 'graphql-yoga';
import { operationFact } from './facts.js';
import { asInterpreted } from './jit.js';

/**
 * What a plugin does on each request of one operation, decided once from the operation alone (its
 * price, its cache verdict, its label…): handed the request's execution arguments, it lets the
 * request go on (undefined), answers it instead (a refusal, a cached answer), or goes on and sees
 * the result (`done` may replace it; `failed` hears of an execution that threw).
 */
export type RequestPart = (args: ExecutionArgs) => PartOutcome | Promise<PartOutcome>;
export type PartOutcome =
  | undefined
  | { readonly answer: ExecutionResult }
  | {
      readonly done?: (result: ExecutionResult) => ExecutionResult | undefined;
      readonly failed?: (error: unknown) => void;
    };

/** The operation a part is prepared for. */
export interface OperationInfo {
  readonly schema: GraphQLSchema;
  readonly document: DocumentNode;
  readonly operationName?: string | null;
}

/** A plugin's part of every prepared request: null when it has nothing to do for the operation. */
export type PartOf = (operation: OperationInfo) => RequestPart | null;

/** A pipeline plugin with a part in prepared requests (prepared requests run parts in pipeline order). */
export type PartPlugin = Plugin & { readonly requestPart: PartOf };

export const hasPart = (plugin: Plugin): plugin is PartPlugin =>
  typeof (plugin as Partial<PartPlugin>).requestPart === 'function';

/**
 * One definition of a plugin's per-request rule for both paths: the part, prepared once per kept
 * operation (every time for any other document), is what a prepared request runs, and what the
 * plugin's envelop hooks (onExecute, onSubscribe) run on the first path.
 */
export function partPlugin(
  prepare: PartOf,
  { subscriptions = false }: { subscriptions?: boolean } = {},
): PartPlugin {
  const parts = operationFact<RequestPart | null>();
  // Prepared from the operation alone: never from the request (its context, its variables) that
  // happens to be the first to ask.
  const requestPart: PartOf = ({ schema, document, operationName }) =>
    parts.of(document, operationName, () => prepare({ schema, document, operationName }));
  type Hook = NonNullable<Plugin['onExecute']>;
  const onExecute: Hook = ({ args, executeFn, setExecuteFn, setResultAndStopExecution }) => {
    const part = requestPart(args);
    if (!part) return;
    const settle = (outcome: PartOutcome) => {
      if (!outcome) return undefined;
      if ('answer' in outcome) {
        setResultAndStopExecution(outcome.answer);
        return undefined;
      }
      const { done, failed } = outcome;
      if (failed) {
        setExecuteFn((given) =>
          Promise.resolve(executeFn(given)).catch((error: unknown) => {
            failed(error);
            throw error;
          }),
        );
      }
      if (!done) return undefined;
      return {
        onExecuteDone: ({ result, setResult }: { result: unknown; setResult(r: ExecutionResult): void }) => {
          const replaced = done(result as ExecutionResult);
          if (replaced) setResult(replaced);
        },
      };
    };
    const outcome = part(args);
    return outcome instanceof Promise ? outcome.then(settle) : settle(outcome);
  };
  const onSubscribe: NonNullable<Plugin['onSubscribe']> = ({ args, setResultAndStopExecution }) => {
    const part = requestPart(args);
    if (!part) return;
    const settle = (outcome: PartOutcome) => {
      if (outcome && 'answer' in outcome) setResultAndStopExecution(outcome.answer);
    };
    const outcome = part(args);
    return outcome instanceof Promise ? outcome.then(settle) : settle(outcome);
  };
  return { requestPart, onExecute, ...(subscriptions ? { onSubscribe } : {}) };
}

/**
 * A hot operation's request, prepared whole: the parts of the pipeline's plugins in their order,
 * then the compiled plan. A repeated request runs only these, with its own context and variables;
 * the first path runs the same parts from envelop's hooks, so both answer alike (a parity test
 * compares them byte for byte).
 */
export class PreparedRequest {
  /** Whether its operation is a query (not the mutation): what a GET may run. */
  readonly query: boolean;

  constructor(
    readonly schema: GraphQLSchema,
    readonly document: DocumentNode,
    readonly operationName: string | undefined,
    private readonly parts: readonly RequestPart[],
    private readonly plan: CompiledQuery,
  ) {
    this.query = getOperationAST(document, operationName)?.operation === 'query';
  }

  async run(
    contextValue: object,
    variableValues: Record<string, unknown> | undefined,
  ): Promise<ExecutionResult> {
    const args: ExecutionArgs = {
      schema: this.schema,
      document: this.document,
      operationName: this.operationName,
      contextValue,
      variableValues,
    };
    const going: Exclude<PartOutcome, undefined | { answer: ExecutionResult }>[] = [];
    for (const part of this.parts) {
      let outcome = part(args);
      if (outcome instanceof Promise) outcome = await outcome;
      if (!outcome) continue;
      if ('answer' in outcome) return this.finish(going, outcome.answer);
      going.push(outcome);
    }
    let result: ExecutionResult;
    try {
      result = await asInterpreted(this.plan.query(undefined, contextValue, variableValues), this.document);
    } catch (error) {
      for (const { failed } of going) failed?.(error);
      throw error;
    }
    return this.finish(going, result);
  }

  private finish(
    going: Exclude<PartOutcome, undefined | { answer: ExecutionResult }>[],
    result: ExecutionResult,
  ): ExecutionResult {
    for (const { done } of going) result = done?.(result) ?? result;
    return result;
  }
}
