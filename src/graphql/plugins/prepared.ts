import {
  type ASTNode,
  type ASTVisitor,
  BREAK,
  type DocumentNode,
  type ExecutionArgs,
  type ExecutionResult,
  type FieldNode,
  GraphQLError,
  type GraphQLSchema,
  getEnterLeaveForKind,
  getLocation,
  getOperationAST,
  type Kind,
  type OperationDefinitionNode,
  type SourceLocation,
  type ValidationRule,
  visit,
} from 'graphql';
import { type CompiledQuery, compileQuery, isCompiledQuery } from 'graphql-jit';
import type { Plugin } from 'graphql-yoga';
import { LRUCache } from 'lru-cache';
import type { DocumentCacheConfig } from '../../config.js';

/**
 * Prepared documents: everything that depends only on a document's text is worked out once and
 * kept with it (the parsed document, its validation, per operation its label, cache verdict and,
 * once hot, its compiled plan), so that a repeated document pays only for its variables and its
 * execution. One envelop plugin, in Yoga's pipeline, for both transports. A compiled query also
 * gets a prepared request: the parts the pipeline's plugins contribute for its operation, then its
 * plan, which the fast path runs for its repeated requests without envelop's hooks (see
 * PreparedRequest and partPlugin below).
 *
 * A flood of documents never seen before (a random alias, a comment) must neither grow memory nor
 * push out the documents really in use, nor cost more than graphql-js does:
 * - a document is kept from its second use; the first leaves only its text with a doorkeeper;
 * - everything is held by one LRU keyed by the text, bounded in entries and estimated bytes, so the
 *   oldest are dropped with all they hold;
 * - a query is compiled by graphql-jit (whose compilation costs several executions, and whose code
 *   lives in V8's heap) only on its `compileAfter`th use within `compileWindowMs`; until then it
 *   runs on the interpreting executor, which answers the same bytes;
 * - validation runs all rules in one pass whose per-kind handler lists are built lazily.
 */

/** What the gateway derives from one operation of a document, each worked out once. */
export interface PreparedOperation {
  readonly operation: OperationDefinitionNode;
  /** Facts other plugins derive from the operation (its label, its cache verdict…), by their key. */
  readonly facts: Map<OperationFact<unknown>, unknown>;
  uses: number;
  windowStart: number;
  /** The compiled plan once hot; 'interpret' when graphql-jit cannot compile it. */
  compiled: CompiledQuery | 'interpret' | null;
  /** The prepared request, once the operation is hot and compiled: what a repeated request runs. */
  request: PreparedRequest | null;
}

interface PreparedDocument {
  readonly source: string;
  readonly document: DocumentNode;
  /** Its uses before it was kept, from when the doorkeeper first saw it: they count as uses of each operation. */
  readonly uses: number;
  readonly firstSeen: number;
  /** Estimated bytes: the document, then any compiled plans. */
  bytes: number;
  validation: { rules: string; errors: readonly GraphQLError[] } | null;
  readonly operations: Map<string, PreparedOperation>;
}

// Estimates, measured on Node 20 with the benchmark's documents (heap growth per kept document):
// a parsed document (with its token locations) weighs 58 to 96 bytes per character of its text; a
// compiled plan 4 to 13 KB before it first runs, when V8 adds its bytecode. The code graphql-jit
// generates runs to 1,500 to 2,800 characters per field the document selects (operations/ and the
// benchmark's queries, 7,000 to 56,000 characters): a plan is charged 2 KB per field.
const DOCUMENT_BYTES_PER_CHAR = 80;
const DOCUMENT_BYTES_BASE = 2_048;
const PLAN_BYTES_PER_FIELD = 2_048;
const PLAN_BYTES_BASE = 8_192;

/** Whether a document asks for incremental delivery (`@defer`, `@stream`) anywhere. */
function incremental(document: DocumentNode): boolean {
  let found = false;
  visit(document, {
    Directive(node) {
      if (node.name.value !== 'defer' && node.name.value !== 'stream') return undefined;
      found = true;
      return BREAK;
    },
  });
  return found;
}

/** Fields a document selects (its operations and fragments), for a compiled plan's estimate. */
function fieldCount(document: DocumentNode): number {
  let fields = 0;
  visit(document, {
    Field() {
      fields++;
    },
  });
  return fields;
}

const byDocument = new WeakMap<DocumentNode, PreparedDocument>();

/** An operation's key in its document's record: an absent name (null or undefined) means the document's only operation; "" names none. */
const operationKey = (operationName: string | null | undefined): string =>
  operationName === null || operationName === undefined ? '\u0000' : operationName;

/**
 * The prepared record of an operation of a document the cache kept (an evicted document keeps its
 * record while the request that holds it runs), created on first use; null for a document never
 * kept, or an operation the document does not hold.
 */
function preparedOperation(
  document: DocumentNode,
  operationName: string | null | undefined,
): PreparedOperation | null {
  const prepared = byDocument.get(document);
  if (!prepared) return null;
  const key = operationKey(operationName);
  let operation = prepared.operations.get(key);
  if (!operation) {
    const definition = getOperationAST(document, operationName);
    // Only operations the document holds get a record: a caller's operationName adds nothing.
    if (!definition) return null;
    operation = {
      operation: definition,
      facts: new Map(),
      uses: prepared.uses,
      windowStart: prepared.firstSeen,
      compiled: null,
      request: null,
    };
    prepared.operations.set(key, operation);
  }
  return operation;
}

/**
 * A fact a plugin derives from an operation (its label, its cache verdict…): computed once per
 * operation of a kept document, every time for any other document. Each plugin makes its own fact,
 * so plugins share the prepared record without knowing of each other.
 */
export interface OperationFact<T> {
  of(document: DocumentNode, operationName: string | null | undefined, compute: () => T): T;
}

export function operationFact<T>(): OperationFact<T> {
  const fact: OperationFact<T> = {
    of(document, operationName, compute) {
      const operation = preparedOperation(document, operationName);
      if (!operation) return compute();
      if (operation.facts.has(fact)) return operation.facts.get(fact) as T;
      const value = compute();
      operation.facts.set(fact, value);
      return value;
    },
  };
  return fact;
}

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

const hasPart = (plugin: Plugin): plugin is PartPlugin =>
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
  constructor(
    readonly schema: GraphQLSchema,
    readonly document: DocumentNode,
    readonly operationName: string | undefined,
    private readonly parts: readonly RequestPart[],
    private readonly plan: CompiledQuery,
  ) {}

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

/**
 * The field nodes an error of a compiled plan was raised at: those of the document that start at the
 * error's locations (graphql-jit computes them from every merged field node, as graphql-js does).
 */
function nodesAt(document: DocumentNode, locations: readonly SourceLocation[]): FieldNode[] {
  const source = document.loc?.source;
  if (!source) return [];
  const wanted = new Set(locations.map(({ line, column }) => `${line}:${column}`));
  const found: FieldNode[] = [];
  visit(document, {
    Field(node) {
      if (!node.loc) return;
      const { line, column } = getLocation(source, node.loc.start);
      if (wanted.has(`${line}:${column}`)) found.push(node);
    },
  });
  return found;
}

/**
 * A compiled plan's result as the interpreter would have answered it: keys in graphql-js's order
 * (`errors` before `data`) and each error carrying its field nodes (graphql-jit's errors have
 * locations but no nodes, and the error masking rebuilds errors from their nodes), so that a query
 * answers the same bytes before and after it is compiled.
 */
function asInterpreted(
  result: ReturnType<CompiledQuery['query']>,
  document: DocumentNode,
): ReturnType<CompiledQuery['query']> {
  const reorder = (r: ExecutionResult): ExecutionResult => {
    if (!r.errors) return r;
    const errors = r.errors.map((error) => {
      const nodes = error.nodes || !error.locations ? [] : nodesAt(document, error.locations);
      if (nodes.length === 0) return error;
      return new GraphQLError(error.message, {
        nodes,
        path: error.path,
        originalError: error.originalError,
        extensions: error.extensions,
      });
    });
    const { data, extensions } = r;
    return {
      errors,
      ...('data' in r ? { data } : {}),
      ...(extensions ? { extensions } : {}),
    };
  };
  return result instanceof Promise ? result.then(reorder) : reorder(result as ExecutionResult);
}

/**
 * All of a validation's rules as one rule: graphql-js's visitInParallel, except that each node
 * kind's enter and leave lists are built when a node of that kind is first met. graphql-js builds
 * them for every kind (about 40) and every rule (about 30) on each validation, which cost more than
 * the rules themselves for the small documents a frontend sends. Same rules, same order, same errors.
 */
function inParallel(rules: readonly ValidationRule[]): ValidationRule {
  return (context) => {
    const visitors = rules.map((rule) => rule(context));
    const skipping: unknown[] = visitors.map(() => null);
    const byKind = new Map<string, ReturnType<typeof getEnterLeaveForKind>[]>();
    const handlers = (kind: string) => {
      let list = byKind.get(kind);
      if (!list) {
        list = visitors.map((visitor) => getEnterLeaveForKind(visitor, kind as Kind));
        byKind.set(kind, list);
      }
      return list;
    };
    return {
      enter(...args: [ASTNode, ...unknown[]]) {
        const node = args[0];
        const list = handlers(node.kind);
        for (let i = 0; i < visitors.length; i++) {
          if (skipping[i] !== null) continue;
          const result = (list[i]?.enter as ((...a: unknown[]) => unknown) | undefined)?.apply(
            visitors[i],
            args,
          );
          if (result === false) skipping[i] = node;
          else if (result === BREAK) skipping[i] = BREAK;
          else if (result !== undefined) return result;
        }
        return undefined;
      },
      leave(...args: [ASTNode, ...unknown[]]) {
        const node = args[0];
        const list = handlers(node.kind);
        for (let i = 0; i < visitors.length; i++) {
          if (skipping[i] === null) {
            const result = (list[i]?.leave as ((...a: unknown[]) => unknown) | undefined)?.apply(
              visitors[i],
              args,
            );
            if (result === BREAK) skipping[i] = BREAK;
            else if (result !== undefined && result !== false) return result;
          } else if (skipping[i] === node) skipping[i] = null;
        }
        return undefined;
      },
    } as ASTVisitor;
  };
}

export interface DocumentCacheEvents {
  /** A query was compiled by graphql-jit. */
  compiled?(): void;
}

/**
 * What the LRU holds: a wrapper around a document, replaced when the document grows, because
 * lru-cache measures a value again only when a different one is set.
 */
interface Slot {
  readonly prepared: PreparedDocument;
}

export class DocumentCache {
  private readonly lru: LRUCache<string, Slot>;
  /**
   * The doorkeeper: texts seen fewer than `keepAfter` times, with when first seen. A document is
   * kept (its parse, validation and facts) only from its `keepAfter`th use, so a flood of
   * documents never seen again leaves nothing but their text here, and never evicts the documents
   * that are really in use.
   */
  private readonly doorkeeper: LRUCache<string, { firstSeen: number; uses: number }>;

  /**
   * The pipeline's plugins that have a part in prepared requests, in pipeline order; null until the
   * pipeline is known, and no request is prepared before.
   */
  private parts: readonly PartPlugin[] | null = null;

  constructor(
    private readonly config: DocumentCacheConfig,
    private readonly events: DocumentCacheEvents = {},
    private readonly now: () => number = Date.now,
  ) {
    // Seven eighths of the bytes for kept documents, one eighth for the doorkeeper's texts.
    this.lru = new LRUCache<string, Slot>({
      max: config.maxEntries,
      maxSize: Math.max(1, config.maxBytes - Math.floor(config.maxBytes / 8)),
      sizeCalculation: (slot) => slot.prepared.bytes,
    });
    this.doorkeeper = new LRUCache<string, { firstSeen: number; uses: number }>({
      max: 4 * config.maxEntries,
      maxSize: Math.max(1, Math.floor(config.maxBytes / 8)),
      // A JavaScript string holds up to 2 bytes per character.
      sizeCalculation: (_, source) => Math.max(1, 2 * source.length),
    });
  }

  /** Entries, estimated bytes and compiled plans held now: what /metrics reports (at each scrape). */
  size(): { entries: number; bytes: number; compiled: number; doorkeeper: number } {
    let compiled = 0;
    for (const { prepared } of this.lru.values())
      for (const operation of prepared.operations.values())
        if (operation.compiled && operation.compiled !== 'interpret') compiled++;
    return {
      entries: this.lru.size,
      bytes: this.lru.calculatedSize + this.doorkeeper.calculatedSize,
      compiled,
      doorkeeper: this.doorkeeper.size,
    };
  }

  /** The pipeline whose plugins' parts make up each prepared request (set once, by graphql/yoga.ts). */
  prepareWith(plugins: readonly Plugin[]): void {
    // A prepared request runs parts only: a plugin that works on every execution without one would
    // be skipped by it. Fail at start rather than serve requests it never sees.
    const own = this.plugin();
    for (const plugin of plugins) {
      if (hasPart(plugin) || plugin === own) continue;
      if (plugin.onExecute || plugin.onContextBuilding || plugin.onExecutionResult)
        throw new Error('A plugin that runs on every execution has no part in prepared requests.');
    }
    this.parts = plugins.filter(hasPart);
  }

  /**
   * The prepared request of a hot operation, by the text and operation name a request sends; null
   * when that operation is not prepared (not hot yet, not a query, or incremental): it then takes
   * the first path.
   */
  preparedRequest(source: string, operationName: string | null | undefined): PreparedRequest | null {
    const operations = this.lru.get(source)?.prepared.operations;
    if (!operations) return null;
    return operations.get(operationKey(operationName))?.request ?? null;
  }

  /** Keeps a parsed document on its keepAfter-th use; the uses before only leave its text with the doorkeeper. */
  private remember(source: string, document: DocumentNode): void {
    const now = this.now();
    const seen = this.doorkeeper.get(source) ?? { firstSeen: now, uses: 0 };
    seen.uses++;
    if (seen.uses < this.config.keepAfter) {
      this.doorkeeper.set(source, seen);
      return;
    }
    this.doorkeeper.delete(source);
    const entry: PreparedDocument = {
      source,
      document,
      uses: seen.uses - 1,
      firstSeen: seen.firstSeen,
      bytes: DOCUMENT_BYTES_BASE + source.length * DOCUMENT_BYTES_PER_CHAR,
      validation: null,
      operations: new Map(),
    };
    byDocument.set(document, entry);
    this.lru.set(source, { prepared: entry });
  }

  /** Whether this use makes the operation hot: its compileAfter-th within the window. */
  private hot(operation: PreparedOperation): boolean {
    const { compileAfter, compileWindowMs } = this.config;
    if (compileAfter === 0) return false;
    const now = this.now();
    if (now - operation.windowStart > compileWindowMs) {
      operation.windowStart = now;
      operation.uses = 0;
    }
    operation.uses++;
    return operation.uses >= compileAfter;
  }

  /** The compiled plan of a query, compiling it on the use that makes it hot; null: interpret it. */
  private plan(args: ExecutionArgs): CompiledQuery | null {
    const operation = preparedOperation(args.document, args.operationName);
    if (operation?.operation.operation !== 'query') return null;
    if (operation.compiled === 'interpret') return null;
    if (operation.compiled) return operation.compiled;
    if (!this.hot(operation)) return null;
    // graphql-jit answers @defer and @stream in one piece: such a query always runs interpreted
    // (looked for once, when the query turns hot).
    if (incremental(args.document)) {
      operation.compiled = 'interpret';
      return null;
    }
    const compiled = compileQuery(args.schema, args.document, args.operationName ?? undefined);
    const entry = byDocument.get(args.document) as PreparedDocument;
    const bytes = entry.bytes + PLAN_BYTES_BASE + fieldCount(args.document) * PLAN_BYTES_PER_FIELD;
    // Not expected of a validated document, nor of a plan larger than the whole cache: either
    // keeps running on the interpreting executor.
    if (!isCompiledQuery(compiled) || bytes > this.lru.maxSize) {
      operation.compiled = 'interpret';
      return null;
    }
    operation.compiled = compiled;
    // Parts are prepared from the operation alone, never from the request that made it hot.
    const info: OperationInfo = {
      schema: args.schema,
      document: args.document,
      operationName: args.operationName,
    };
    operation.request = this.parts
      ? new PreparedRequest(
          info.schema,
          info.document,
          info.operationName ?? undefined,
          this.parts.map((plugin) => plugin.requestPart(info)).filter((part) => part !== null),
          compiled,
        )
      : null;
    entry.bytes = bytes;
    this.events.compiled?.();
    // Set again, as a new slot, to account for its new size (evicting others if need be).
    if (this.lru.peek(entry.source)?.prepared === entry) this.lru.set(entry.source, { prepared: entry });
    return compiled;
  }

  private own: Plugin | null = null;

  /** The cache's plugin in the pipeline (one instance, which prepareWith knows as its own). */
  plugin(): Plugin {
    this.own ??= this.makePlugin();
    return this.own;
  }

  private makePlugin(): Plugin {
    return {
      onParse: ({ params, setParsedDocument }) => {
        const source = typeof params.source === 'string' ? params.source : params.source.body;
        const cached = this.lru.get(source);
        if (cached) {
          setParsedDocument(cached.prepared.document);
          return;
        }
        // Documents that do not parse are not kept: refusing them again costs what keeping them would.
        return ({ result }) => {
          if (result && !(result instanceof Error)) this.remember(source, result as DocumentNode);
        };
      },
      onValidate: ({ params: { documentAST, rules }, validateFn, setValidationFn, setResult }) => {
        const entry = byDocument.get(documentAST);
        const key = rules?.map((rule: ValidationRule) => rule.name).join(',') ?? '';
        const known = entry?.validation;
        if (known && known.rules === key) {
          setResult(known.errors);
          return;
        }
        setValidationFn((schema, document, given, typeInfo, options) =>
          validateFn(schema, document, given && [inParallel(given)], typeInfo, options),
        );
        if (!entry) return;
        return ({ result }) => {
          entry.validation = { rules: key, errors: result as readonly GraphQLError[] };
        };
      },
      onExecute: ({ args, executeFn, setExecuteFn }) => {
        if (preparedOperation(args.document, args.operationName)?.operation.operation !== 'query') return;
        // Uses are counted when the query really executes: an answer from the response cache
        // (a later plugin) neither counts nor compiles.
        setExecuteFn((given) => {
          const plan = this.plan(given);
          return plan
            ? asInterpreted(
                plan.query(given.rootValue, given.contextValue, given.variableValues),
                given.document,
              )
            : executeFn(given);
        });
      },
    };
  }
}
