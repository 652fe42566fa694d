import { createHash } from 'node:crypto';
import {
  BREAK,
  type DefinitionNode,
  type DocumentNode,
  type ExecutionResult,
  type FragmentDefinitionNode,
  type GraphQLSchema,
  getOperationAST,
  Kind,
  print,
  TypeInfo,
  visit,
  visitWithTypeInfo,
} from 'graphql';
import type { Plugin } from 'graphql-yoga';

type OnResponsePayload = Parameters<NonNullable<Plugin['onResponse']>>[0];

import { LRUCache } from 'lru-cache';
import { asksForCost, publicAnswerHeaders } from '../../exchange/headers.js';
import { finalAt, type RequestTrace, traceOf } from '../../ops/request-trace.js';
import type { SharedCache, SharedFill } from '../../scale/shared-cache.js';
import { declaredCacheScope } from '../../schema/cache-scope.js';
import { operationFact } from '../pipeline/facts.js';
import {
  type OperationInfo,
  type PartOutcome,
  type PartPlugin,
  partPlugin,
  type RequestPart,
} from '../pipeline/parts.js';
import { type AnsweredRequest, type HttpStagePlugin, type WholeAnswer, withHttpStage } from '../routing.js';

/**
 * Whole results of public queries reused, and the same answers offered to CDNs and browsers on GET
 * (why hand-written: docs/decisions/0006-own-response-cache.md). An operation is public only if it
 * is a query and every field it selects, through fragments and nested selections, declares
 * `cacheScope: 'public'` where it is defined (schema/cache-scope.ts), so the cache never holds one
 * caller's data, a live figure or the answer to a write. Results with errors are not kept, nor
 * offered to a CDN; nor is anything of a request that asks for its cost, which is answered
 * privately (exchange/exchange.ts, contract.md §9).
 *
 * Answers follow the chain (contract.md §9) while its head is known (live/head.ts): an answer made
 * only of final history (its resolvers say so: schema/cache-scope.ts) is kept as long as the cache
 * has room, and offered `immutable`; any other is latest state, kept until the head moves (its
 * entry names the height it was read at, and so does its text: `extensions.chainHeight`), and
 * offered until the next block is expected. Without a known head, RESPONSE_CACHE_TTL_MS rules.
 */

/** The operation to run and the fragments it reaches: what executing it can select. */
function operationDefinitions(document: DocumentNode, operationName: string | null | undefined) {
  const operation = getOperationAST(document, operationName);
  if (!operation) return null;
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const d of document.definitions)
    if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
  const definitions: DefinitionNode[] = [operation];
  const reached = new Set<string>();
  for (let i = 0; i < definitions.length; i++) {
    visit(definitions[i] as DefinitionNode, {
      FragmentSpread(spread) {
        const fragment = fragments.get(spread.name.value);
        if (fragment && !reached.has(fragment.name.value)) {
          reached.add(fragment.name.value);
          definitions.push(fragment);
        }
      },
    });
  }
  return { operation, definitions };
}

function judge(schema: GraphQLSchema, document: DocumentNode, operationName: string | null | undefined) {
  const selected = operationDefinitions(document, operationName);
  if (selected?.operation.operation !== 'query') return false;
  const typeInfo = new TypeInfo(schema);
  let isPublic = true;
  visit(
    { kind: Kind.DOCUMENT, definitions: selected.definitions },
    visitWithTypeInfo(typeInfo, {
      Field(node) {
        const parent = typeInfo.getParentType();
        const field = typeInfo.getFieldDef();
        // Introspection (`__typename`, `__schema`, `__type` and what lies inside) is the same for all.
        if (node.name.value.startsWith('__') || parent?.name.startsWith('__')) return;
        // A field the schema does not know (a document not validated), or one without a declared
        // scope: nothing vouches for it. `parent` adds no restriction to what selected it.
        const scope = field ? declaredCacheScope(field) : undefined;
        if (scope !== 'public' && scope !== 'parent') {
          isPublic = false;
          return BREAK;
        }
      },
    }),
  );
  return isPublic;
}

/** Whether an operation is public, judged once per prepared operation. */
const PUBLIC = operationFact<boolean>();

/**
 * Whether the results of an operation may be shared between callers: a query whose every selected
 * field is public. Judged once per prepared document and operation (pipeline/facts.ts).
 */
export function isPublicOperation(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName?: string | null,
): boolean {
  return PUBLIC.of(document, operationName, () => judge(schema, document, operationName));
}

/** Whether an `if-none-match` header names this entity tag (weak comparison, as RFC 9110 asks). */
function matches(ifNoneMatch: string | null, etag: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch
    .split(',')
    .map((tag) => tag.trim().replace(/^W\//, ''))
    .some((tag) => tag === '*' || tag === etag);
}

/**
 * With `shared` (REDIS_URL), the entries here are a first level in front of Redis: a miss here
 * reads the answer from Redis, or waits for another instance that is executing the same operation,
 * or executes it and stores the answer for the others (shared-cache.ts). Only the public
 * operations chosen above ever reach Redis.
 */
export interface PublicResponseCacheOptions {
  ttlMs: number;
  onLookup?: (hit: boolean) => void;
  shared?: SharedCache | null;
  /** The most answers kept, and the most bytes of their JSON. */
  maxEntries?: number;
  maxBytes?: number;
  /** The chain's head (live/head.ts); without one, every entry lives RESPONSE_CACHE_TTL_MS. */
  head?: CacheHead | null;
  /** CHAIN_HEAD_HOLD_MS: how long a latest answer keeps the block poller going (0: not at all). */
  headHoldMs?: number;
}

/** What the cache needs of the chain's head. */
export interface CacheHead {
  height(): number | null;
  nextBlockInMs(): number | null;
  hold(forMs: number): void;
}

/** How long Redis keeps an answer keyed by its height (a later height reads another key). */
const AT_HEIGHT_MS = 60_000;
/** How long Redis keeps a final answer, and how long a CDN or a browser may. */
const FINAL_MS = 86_400_000;
const FINAL_MAX_AGE_S = 31_536_000;

/** One kept answer: `height` it was read at (null: the head was unknown), and whether it is final. */
interface Entry {
  expires: number;
  result: ExecutionResult;
  bytes: number;
  height: number | null;
  final: boolean;
}

/** What one execution may do with the cache: answer from an entry, or fill one with its result. */
type Outcome = { found: ExecutionResult } | { fill: SharedFill | null };

export class PublicResponseCache {
  private readonly ttlMs: number;
  private readonly onLookup: (hit: boolean) => void;
  private readonly shared: SharedCache | null;
  private readonly entries: LRUCache<string, Entry>;
  private readonly head: CacheHead | null;
  private readonly holdMs: number;
  /**
   * GET requests whose every operation was public and answered without errors: their response may
   * be kept by a CDN. A request with a private operation or an error is marked false.
   */
  private readonly shareable = new WeakMap<object, boolean>();
  /** How long a CDN or a browser may keep a shared answer, in seconds. */
  private readonly maxAgeSeconds: number;
  // Documents are known by their text (the same text parsed twice is the same document), or by
  // identity when they have none (built without locations).
  private readonly documentIds = new WeakMap<DocumentNode, string>();
  private nextId = 0;
  // Across instances a document is known by a hash of its printed text, computed once per document.
  private readonly documentHashes = new WeakMap<DocumentNode, string>();
  readonly plugin: PartPlugin & HttpStagePlugin;

  constructor({
    ttlMs,
    onLookup = () => {},
    shared = null,
    maxEntries = 2_000,
    maxBytes = 16_000_000,
    head = null,
    headHoldMs = 60_000,
  }: PublicResponseCacheOptions) {
    this.ttlMs = ttlMs;
    this.head = head;
    this.holdMs = headHoldMs;
    this.onLookup = onLookup;
    this.shared = shared;
    this.entries = new LRUCache({
      max: maxEntries,
      maxSize: maxBytes,
      sizeCalculation: (entry) => entry.bytes,
    });
    this.maxAgeSeconds = Math.max(1, Math.floor(ttlMs / 1000));
    this.plugin = withHttpStage(
      {
        ...partPlugin((operation) => this.part(operation)),
        onResponse: (payload) => this.onResponse(payload),
      },
      // A shared GET's answer gets its cache-control and entity tag on both paths, from one function.
      { answer: (request, answer) => this.shareableAnswer(request, answer) },
    );
  }

  /** Answers held now (for /metrics). */
  size(): number {
    return this.entries.size;
  }

  private documentKey(document: DocumentNode): string {
    const text = document.loc?.source.body;
    if (text !== undefined) return text;
    let id = this.documentIds.get(document);
    if (id === undefined) {
      id = `\u0001${this.nextId++}`;
      this.documentIds.set(document, id);
    }
    return id;
  }

  private sharedId(document: DocumentNode, rest: string): string {
    let digest = this.documentHashes.get(document);
    if (digest === undefined) {
      digest = createHash('sha256').update(print(document)).digest('base64url');
      this.documentHashes.set(document, digest);
    }
    return createHash('sha256').update(`${digest}\u0000${rest}`).digest('base64url');
  }

  /**
   * Kept as the JSON it answers, serialized once: that text measures the entry, and every answer
   * from it (this one included) is written without serializing again (both transports use a
   * result's own `stringify`). Only bare `{ data }` results are kept.
   */
  private remember(key: string, result: ExecutionResult, forMs: number, final = false): void {
    const text = JSON.stringify(result);
    // Not enumerable: a plugin that copies the result to add to it ({ ...result, errors }) drops
    // it, and that copy is serialized afresh.
    const kept = Object.defineProperty(result, 'stringify', { value: () => text, configurable: true });
    const height = result.extensions?.chainHeight;
    this.entries.set(key, {
      expires: Date.now() + forMs,
      result: kept,
      bytes: 2 * (text.length + key.length),
      height: typeof height === 'number' ? height : null,
      final,
    });
  }

  /**
   * Whether an entry answers a request now: a final one always; one read at a height while the
   * head is known, until the head moves; else by its TTL. Never one read below the height the
   * request asks for (Min-Chain-Height).
   */
  private answers(entry: Entry, head: number | null, min: number): boolean {
    if (min > 0 && (entry.height === null || entry.height < min)) return false;
    if (entry.final) return true;
    // Read while the head was unknown: renewed once it is known, so that answers say their height.
    if (head !== null) return entry.height === head;
    return entry.expires > Date.now();
  }

  /** Keeps the block poller going for the head a latest answer is renewed by (CHAIN_HEAD_HOLD_MS). */
  private hold(): void {
    if (this.holdMs > 0) this.head?.hold(this.holdMs);
  }

  /** A request answered from `entry`: its trace says the entry's height and reads, as its text does. */
  private answered(entry: Entry, trace: RequestTrace | undefined): ExecutionResult {
    if (trace) {
      trace.chainHeight = entry.height;
      if (entry.final) trace.reads.final = Math.max(trace.reads.final, entry.height ?? 0);
      else trace.reads.latest = true;
    }
    // Latest state needs the head to be renewed by; one read while the head was unknown (another
    // instance's, through Redis) needs it the more, to learn it: otherwise nothing here ever would.
    if (!entry.final) this.hold();
    return entry.result;
  }

  /**
   * The entry of `key` if it answers; else, with Redis, the shared answer or a ticket to fill it.
   * While the head is known, the shared key names it: the first instance to miss at a height
   * fills it, the others wait for that answer (shared-cache.ts), so the deployment reads the
   * upstreams once per block.
   */
  private lookup(
    key: string,
    document: DocumentNode,
    rest: string,
    trace: RequestTrace | undefined,
  ): Outcome | Promise<Outcome> {
    const head = this.head?.height() ?? null;
    const min = trace?.minChainHeight ?? 0;
    const hit = this.entries.get(key);
    const fresh = hit !== undefined && this.answers(hit, head, min);
    this.onLookup(fresh);
    if (fresh) return { found: this.answered(hit, trace) };
    const shared = this.shared;
    if (!shared) return { fill: null };
    const at = head === null ? rest : `${rest}\u0000${head}`;
    return shared.begin<ExecutionResult>('responses', this.sharedId(document, at)).then((lookup) => {
      if ('fill' in lookup) return { fill: lookup.fill };
      this.remember(key, lookup.found.value, Math.min(lookup.found.ttlMs, this.ttlMs));
      const entry = this.entries.get(key);
      // Proven again as a local entry would be (a shared answer read below the asked height is none).
      if (!entry || !this.answers(entry, head, min)) return { fill: null };
      return { found: this.answered(entry, trace) };
    });
  }

  /**
   * The cache's part of a request: for a public operation, its answer from an entry, or its result
   * kept; for a GET, whether its answer may be offered to a CDN. A request that asks for its cost
   * is answered as a private operation's: never from an entry, never kept, never offered.
   */
  private part({ schema, document, operationName }: OperationInfo): RequestPart {
    const verdict = isPublicOperation(schema, document, operationName);
    const requestOf = (context: unknown) =>
      (context as { request?: Partial<AnsweredRequest> } | undefined)?.request;
    const getOf = (context: unknown) => {
      const request = requestOf(context);
      return request?.method === 'GET' ? request : undefined;
    };
    const privately = (contextValue: unknown) => {
      const get = getOf(contextValue);
      if (get) this.shareable.set(get, false);
      return undefined;
    };
    if (!verdict) return ({ contextValue }) => privately(contextValue);
    const documentKey = this.documentKey(document);
    return ({ contextValue, operationName, variableValues }) => {
      const headers = requestOf(contextValue)?.headers;
      if (headers && asksForCost(headers)) return privately(contextValue);
      const get = getOf(contextValue);
      if (get) this.shareable.set(get, this.shareable.get(get) !== false);
      const rest = `${operationName ?? ''}\u0000${JSON.stringify(variableValues ?? {})}`;
      const key = `${documentKey}\u0000${rest}`;
      const settle = (outcome: Outcome): PartOutcome => {
        if ('found' in outcome) return { answer: outcome.found };
        const fill = outcome.fill;
        return {
          done: (result) => this.done(key, result, get, fill, trace),
          // An execution that rejects never gets to `done`: its fill lock is released here, so
          // that other instances do not wait out the lock for a value that will never come.
          ...(fill ? { failed: () => this.shared?.failed(fill) } : {}),
        };
      };
      const trace = traceOf(requestOf(contextValue));
      const outcome = this.lookup(key, document, rest, trace);
      return outcome instanceof Promise ? outcome.then(settle) : settle(outcome);
    };
  }

  /**
   * An executed public operation: its answer kept (and shared) unless it streamed or has errors,
   * with the height it was read at in its text (a final one: its history's own height), which is
   * then the answer this request gets too, so that its text and its stamp agree.
   */
  private done(
    key: string,
    result: unknown,
    get: object | undefined,
    fill: SharedFill | null,
    trace: RequestTrace | undefined,
  ): ExecutionResult | undefined {
    const single = result as ExecutionResult;
    if (Symbol.asyncIterator in (result as object) || single.errors?.length || single.extensions) {
      if (get) this.shareable.set(get, false);
      if (fill) this.shared?.failed(fill);
      return undefined;
    }
    const final = trace && this.head ? finalAt(trace.reads) : null;
    if (trace && final !== null) trace.chainHeight = final;
    const height = trace?.chainHeight ?? null;
    // Stamped in place: the result is this execution's own, not yet anyone else's.
    const kept = single;
    if (height !== null)
      (kept as { extensions?: Record<string, unknown> }).extensions = { chainHeight: height };
    this.remember(key, kept, this.ttlMs, final !== null);
    // A latest answer needs the head to be renewed by (and one read while it was unknown, to learn it).
    if (final === null) this.hold();
    const sharedMs = final !== null ? FINAL_MS : height !== null ? AT_HEIGHT_MS : this.ttlMs;
    if (fill) this.shared?.filled(fill, kept, sharedMs);
    return kept;
  }

  /**
   * How long a CDN or a browser may keep a shared answer: a final one for a year, immutable; one
   * read at a known head until the next block is expected (the interval the poller measured);
   * else RESPONSE_CACHE_TTL_MS.
   */
  private maxAge(request: AnsweredRequest): { seconds: number; immutable: boolean } {
    const trace = traceOf(request);
    if (trace && finalAt(trace.reads) !== null) return { seconds: FINAL_MAX_AGE_S, immutable: true };
    const next = trace?.chainHeight != null ? (this.head?.nextBlockInMs() ?? null) : null;
    if (next === null) return { seconds: this.maxAgeSeconds, immutable: false };
    return { seconds: Math.max(1, Math.floor(next / 1000)), immutable: false };
  }

  /**
   * Whether a request's answer with this status may be offered to a CDN: a shareable GET's 200,
   * never one asked with its cost (its part marked it so; asked again here, failing closed).
   */
  private shares(request: AnsweredRequest, status: number): boolean {
    return (
      request.method === 'GET' &&
      status === 200 &&
      this.shareable.get(request) === true &&
      !asksForCost(request.headers)
    );
  }

  /** A whole answer as a CDN is offered it, when the request shares it; null: it stays as it is. */
  private shareableAnswer(request: AnsweredRequest, answer: WholeAnswer): WholeAnswer | null {
    const { body } = answer;
    return body !== null && this.shares(request, answer.status) ? this.tagged(request, answer, body) : null;
  }

  /**
   * The rest of /graphql answers `no-store` (exchange/exchange.ts); a shared answer (`body` is its
   * body) answers `public, max-age` with the headers of a public answer (exchange.ts: none of its
   * caller's) and an entity tag, and a 304 without a body when the caller has it.
   */
  private tagged(request: AnsweredRequest, answer: WholeAnswer, body: string): WholeAnswer {
    // The media type is part of the representation: one tag per body and content type.
    const etag = `"${createHash('sha1')
      .update(`${answer.headers['content-type'] ?? ''}\n${body}`)
      .digest('base64url')}"`;
    const { seconds, immutable } = this.maxAge(request);
    const headers: Record<string, string> = {
      ...publicAnswerHeaders(answer.headers, seconds, immutable),
      etag,
    };
    if (!matches(request.headers.get('if-none-match'), etag)) return { ...answer, headers };
    delete headers['content-type'];
    delete headers['content-length'];
    return { status: 304, headers, body: null };
  }

  /** Yoga's path: its response as a shared answer, when the request shares it. */
  private async onResponse({ request, response, setResponse, fetchAPI }: OnResponsePayload): Promise<void> {
    if (!this.shares(request, response.status)) return;
    const body = await response.text();
    const shared = this.tagged(
      request,
      {
        status: response.status,
        // Fetch headers may iterate a name as it was set (`Content-Type`): a whole answer's are lowercase.
        headers: Object.fromEntries(
          [...response.headers].map(([name, value]) => [name.toLowerCase(), value]),
        ),
        body,
      },
      body,
    );
    setResponse(new fetchAPI.Response(shared.body, { status: shared.status, headers: shared.headers }));
  }
}
