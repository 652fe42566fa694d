import type {
  DocumentNode,
  ExecutionArgs,
  GraphQLError,
  OperationDefinitionNode,
  ValidationRule,
} from 'graphql';
import { type CompiledQuery, compileQuery, isCompiledQuery } from 'graphql-jit';
import type { Plugin } from 'graphql-yoga';
import { LRUCache } from 'lru-cache';
import type { DocumentCacheConfig } from '../../config.js';
import { keepDocument, type OperationRecord, operationFact, operationKey, operationRecord } from './facts.js';
import { asInterpreted, fieldCount } from './jit.js';
import { hasPart, type OperationInfo, type PartPlugin, PreparedRequest } from './parts.js';
import { type AnswerShape, answerShape, answerShapeOfText, incremental } from './shape.js';
import { inParallel } from './validation.js';

/**
 * Prepared documents: everything that depends only on a document's text is worked out once and
 * kept with it (the parsed document, its validation, per operation its label, cache verdict and,
 * once hot, its compiled plan), so that a repeated document pays only for its variables and its
 * execution. One envelop plugin, in Yoga's pipeline, for both transports. A compiled operation also
 * gets a prepared request (parts.ts): its plugins' parts, then its plan, which the fast path runs
 * for its repeated requests without envelop's hooks.
 *
 * The rule: a flood of documents never seen before neither grows memory, nor pushes out the
 * documents in use, nor costs more than graphql-js. A document is kept from its second use, in one
 * LRU keyed by its text and bounded in entries and estimated bytes; a query or the mutation is
 * compiled by graphql-jit only once hot (`compileAfter` uses within `compileWindowMs`), and runs on
 * the interpreting executor, with the same bytes, until then. Why, with the figures:
 * docs/decisions/0002-prepared-documents-in-one-lru.md.
 */

/** Whether an operation may get a plan: a query or the mutation of a kept document, never a subscription. */
const compilable = (operation: PreparedOperation | null): operation is PreparedOperation =>
  operation !== null && operation.operation.operation !== 'subscription';

/** What the gateway keeps of one operation of a kept document, besides its facts. */
export interface PreparedOperation extends OperationRecord {
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

/** A kept document's operation record, with what the cache keeps of it. */
const preparedOperation = (document: DocumentNode, operationName: string | null | undefined) =>
  operationRecord(document, operationName) as PreparedOperation | null;

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

/** How each operation of a kept document answers. */
const shapes = operationFact<AnswerShape | null>();

export class DocumentCache {
  /** What the cache keeps of each document it kept, by the parsed document requests hold. */
  private readonly byDocument = new WeakMap<DocumentNode, PreparedDocument>();
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
    // A prepared request runs parts only: graphql/guard.ts refuses at start a plugin that works on
    // every execution without one.
    this.parts = plugins.filter(hasPart);
  }

  /**
   * The prepared request of a hot operation, by the text and operation name a request sends; null
   * when that operation is not prepared (not hot yet, a subscription, or incremental): it then takes
   * the first path.
   */
  preparedRequest(source: string, operationName: string | null | undefined): PreparedRequest | null {
    const operations = this.lru.get(source)?.prepared.operations;
    if (!operations) return null;
    return operations.get(operationKey(operationName))?.request ?? null;
  }

  /**
   * How an operation sent as text answers (shape.ts), from its kept document when there is one: a
   * repeated document is never parsed for it.
   */
  shapeOf(source: string, operationName: string | null | undefined): AnswerShape | null {
    const kept = this.lru.peek(source)?.prepared.document;
    if (!kept) return answerShapeOfText(source, operationName);
    return shapes.of(kept, operationName, () => answerShape(kept, operationName));
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
    const uses = seen.uses - 1;
    // Its operations' records, each made on first use, counting the document's uses before.
    const operations = keepDocument(
      document,
      (operation: OperationDefinitionNode): PreparedOperation => ({
        operation,
        facts: new Map(),
        uses,
        windowStart: seen.firstSeen,
        compiled: null,
        request: null,
      }),
    );
    const entry: PreparedDocument = {
      source,
      document,
      bytes: DOCUMENT_BYTES_BASE + source.length * DOCUMENT_BYTES_PER_CHAR,
      validation: null,
      operations,
    };
    this.byDocument.set(document, entry);
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

  /**
   * The compiled plan of a query or the mutation (graphql-jit runs a mutation's root fields one
   * after the other, as graphql-js does), compiling it on the use that makes it hot; null: interpret
   * it. A subscription is never compiled: its events run in their group (live-groups.ts).
   */
  private plan(args: ExecutionArgs): CompiledQuery | null {
    const operation = preparedOperation(args.document, args.operationName);
    if (!compilable(operation)) return null;
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
    const entry = this.byDocument.get(args.document) as PreparedDocument;
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
        const entry = this.byDocument.get(documentAST);
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
        if (!compilable(preparedOperation(args.document, args.operationName))) return;
        // Uses are counted when the operation really executes: an answer from the response cache
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
