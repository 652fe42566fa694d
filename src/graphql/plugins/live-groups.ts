import { createHash } from 'node:crypto';
import {
  createSourceEventStream,
  type DocumentNode,
  type ExecutionArgs,
  type ExecutionResult,
  execute,
  type FragmentDefinitionNode,
  GraphQLError,
  type GraphQLNamedType,
  type GraphQLSchema,
  getNamedType,
  getOperationAST,
  isInterfaceType,
  isObjectType,
  Kind,
  type SelectionSetNode,
} from 'graphql';
import { isAsyncIterable, type Plugin } from 'graphql-yoga';
import type { GatewayMetrics } from '../../ops/metrics.js';
import { declaredCacheScope } from '../../schema/cache-scope.js';
import { type Context, explorerTokenOf } from '../context.js';
import { operationFact } from './prepared.js';

/**
 * Subscriptions in groups: subscribers whose operation is the same (document, operation name,
 * variables) and whose credential scope is the same form one group, and each event is executed
 * once per group; its one result object reaches every member, so that a transport serializes it
 * once (http/sse.ts keeps one frame per result) and writes the same bytes to every stream.
 *
 * Whether the credential is part of a group's key is read from the schema's declared cache scopes
 * (schema/cache-scope.ts), never guessed: an operation that selects a `private` field anywhere
 * (`failedTransactionAdded`: events read with one caller's token) is grouped per token; one that
 * selects only `public` and `parent` fields answers every subscriber alike.
 *
 * Everything a subscriber's request owes runs for each of them, in the one envelop pipeline, before
 * this plugin's subscribe function: parsing, validation, limits, pricing and the rate limit, the
 * subscription caps. A group executes in a context of its own (its own loaders, no request), so
 * that no member's disconnect cancels another's events. The first member's subscription starts the
 * group's source (the field's `subscribe`, its argument rules and authorization included); later
 * members of the same key join it. A group ends when its last member leaves, or when its source
 * ends (SIGTERM), which completes every member's stream.
 */

/** One event as every member of a group gets it. */
export interface Delivery {
  result: ExecutionResult;
  /** When the poll that found the event was answered (ms since the epoch). */
  polledAt: number;
  /** The event's id a client can resume after (SSE's `id:`), where events have one. */
  id: string | undefined;
}

/** A transport that writes a member's events itself, at its socket's pace (http/sse.ts). */
export interface LiveSink {
  /** One event, in order; the sink keeps at most LIVE_BACKLOG of them waiting, then cuts. */
  deliver(delivery: Delivery): void;
  /** The group's source ended: the stream completes. */
  complete(): void;
}

/**
 * A subscriber's stream as its transport holds it: how to close its connection (it stopped
 * reading), and, where the transport writes streams itself (http/sse.ts), how it takes the group
 * member over and what runs when the stream ends (the subscription caps give their place back).
 */
export interface MemberHandle {
  cut(): void;
  adopt?(member: LiveMember): void;
  onEnd?: (() => void) | undefined;
}

/** What every member of a process shares. */
interface MemberOptions {
  backlog: number;
  metrics: GatewayMetrics;
}

/**
 * One subscriber of a group. Pulled as an async iterator (Yoga's own stream processors), or, once
 * a sink attaches, pushing every event to it: then no iterator chain runs for it at all.
 */
export class LiveMember implements AsyncIterableIterator<ExecutionResult> {
  private readonly queue: Delivery[] = [];
  private waiting: ((result: IteratorResult<ExecutionResult>) => void) | null = null;
  private sink: LiveSink | null = null;
  private done = false;

  constructor(
    private readonly group: LiveGroup,
    private readonly options: MemberOptions,
    private readonly handle: MemberHandle,
  ) {}

  /** Pushes every event from now on (and any waiting) to `sink`. */
  attach(sink: LiveSink): void {
    this.sink = sink;
    for (const delivery of this.queue.splice(0)) sink.deliver(delivery);
    // The group ended before the stream was taken over: it completes now.
    if (this.done) sink.complete();
  }

  offer(delivery: Delivery): void {
    if (this.done) return;
    if (this.sink) this.sink.deliver(delivery);
    else if (this.waiting) {
      this.options.metrics.observeDelivery((Date.now() - delivery.polledAt) / 1000);
      this.waiting({ value: delivery.result, done: false });
      this.waiting = null;
    } else if (this.queue.length >= this.options.backlog) {
      this.options.metrics.observeCut();
      this.queue.length = 0;
      this.leave();
      this.handle.cut();
    } else this.queue.push(delivery);
  }

  /** The group's source ended: the stream completes once what is waiting was read. */
  finish(): void {
    if (this.done) return;
    this.leave();
    this.sink?.complete();
  }

  /** The subscriber is gone (or cut): it leaves its group. */
  leave(): void {
    if (this.done) return;
    this.done = true;
    this.group.leave(this);
    if (this.queue.length === 0) {
      this.waiting?.({ value: undefined, done: true });
      this.waiting = null;
    }
  }

  next(): Promise<IteratorResult<ExecutionResult>> {
    const delivery = this.queue.shift();
    if (delivery) {
      this.options.metrics.observeDelivery((Date.now() - delivery.polledAt) / 1000);
      return Promise.resolve({ value: delivery.result, done: false });
    }
    if (this.done) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => {
      this.waiting = resolve;
    });
  }

  return(): Promise<IteratorResult<ExecutionResult>> {
    this.queue.length = 0;
    this.leave();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}

interface GroupOptions {
  /** The source's events (the field's `subscribe`, run once for the group). */
  events: AsyncIterator<unknown>;
  /** Executes the operation for one event. */
  run(payload: unknown): Promise<ExecutionResult>;
  stampOf(payload: unknown): { polledAt: number; id: string | undefined };
  /** Told once the group ended (its last member left, or its source ended). */
  ended(): void;
  /** The source's label for metrics (blocks, validators, failed). */
  source: string;
  metrics: GatewayMetrics;
  /** Whether its subscribers resume after an event (Last-Event-ID): then it is joinable only at first. */
  resuming: boolean;
}

/** Subscribers of one operation, variables and credential: one execution per event for all. */
export class LiveGroup {
  readonly members = new Set<LiveMember>();
  private closed = false;
  private offered = false;

  constructor(private readonly options: GroupOptions) {}

  get open(): boolean {
    return !this.closed;
  }

  /**
   * Whether a subscriber may join: any open group, but a group resuming after an event (its first
   * events are a replay) only until it has offered one, so that no later joiner misses them.
   */
  get joinable(): boolean {
    return !this.closed && !(this.options.resuming && this.offered);
  }

  join(member: LiveMember): void {
    this.members.add(member);
  }

  leave(member: LiveMember): void {
    if (this.members.delete(member) && this.members.size === 0) this.close();
  }

  /** Reads the source's events until it ends: each executed once, handed to every member. */
  async pump(): Promise<void> {
    const { events, run, stampOf, metrics, source } = this.options;
    try {
      for (let next = await events.next(); !next.done && !this.closed; next = await events.next()) {
        const result = await run(next.value);
        metrics.observeLiveExecution(source);
        const delivery = { result, ...stampOf(next.value) };
        this.offered = true;
        for (const member of this.members) member.offer(delivery);
      }
    } finally {
      for (const member of [...this.members]) member.finish();
      this.close();
    }
  }

  private close(): void {
    if (this.closed) return;
    this.closed = true;
    void this.options.events.return?.();
    this.options.ended();
  }
}

/** Which live source each subscription field reads, for metrics. */
const SOURCES: Record<string, string> = {
  blockAdded: 'blocks',
  validatorUpdated: 'validators',
  validatorStatisticsUpdated: 'validators',
  failedTransactionAdded: 'failed',
};

/** Whether a selection reaches a field declared `private` (its answer depends on the caller). */
function selectsPrivate(
  schema: GraphQLSchema,
  fragments: Map<string, FragmentDefinitionNode>,
  set: SelectionSetNode,
  type: GraphQLNamedType | undefined,
  seen: Set<string>,
): boolean {
  for (const selection of set.selections) {
    if (selection.kind === Kind.FIELD) {
      const field =
        isObjectType(type) || isInterfaceType(type) ? type.getFields()[selection.name.value] : undefined;
      if (field && declaredCacheScope(field) === 'private') return true;
      if (selection.selectionSet && field) {
        if (selectsPrivate(schema, fragments, selection.selectionSet, getNamedType(field.type), seen))
          return true;
      }
      continue;
    }
    const fragment =
      selection.kind === Kind.INLINE_FRAGMENT ? selection : fragments.get(selection.name.value);
    if (selection.kind === Kind.FRAGMENT_SPREAD && (seen.has(selection.name.value) || !fragment)) continue;
    if (selection.kind === Kind.FRAGMENT_SPREAD) seen.add(selection.name.value);
    const condition = fragment?.typeCondition ? schema.getType(fragment.typeCondition.name.value) : type;
    if (fragment && selectsPrivate(schema, fragments, fragment.selectionSet, condition ?? undefined, seen))
      return true;
  }
  return false;
}

interface Shape {
  /** The root field (one: a subscription selects exactly one). */
  field: string;
  /** Whether the group key holds the caller's credential. */
  private: boolean;
  /** Incremental delivery is answered per subscriber, never grouped. */
  incremental: boolean;
}

function shapeOf(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName: string | null | undefined,
): Shape | null {
  const operation = getOperationAST(document, operationName);
  const root = schema.getSubscriptionType();
  const first = operation?.selectionSet.selections[0];
  if (operation?.operation !== 'subscription' || !root || first?.kind !== Kind.FIELD) return null;
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions)
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  const source = document.loc?.source.body ?? '';
  return {
    field: first.name.value,
    private: selectsPrivate(schema, fragments, operation.selectionSet, root, new Set()),
    incremental: /@\s*(?:defer|stream)\b/.test(source),
  };
}

/** Variables as a key: the same values in any key order are the same variables. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export interface LiveGroupsOptions {
  backlog: number;
  metrics: GatewayMetrics;
  /** The context a group executes in: the first member's, with loaders of its own and no request. */
  groupContext(member: Context, signal: AbortSignal): Context;
  /** When the poll that found an event's payload was answered, and the event's id if it has one. */
  stampOf(payload: unknown): { polledAt: number; id: string | undefined } | undefined;
  /** Masks an error as Yoga's error masking does, so that every transport writes the same bytes. */
  mask(error: GraphQLError): GraphQLError;
}

type SubscribeFn = (args: ExecutionArgs) => Promise<AsyncIterable<ExecutionResult> | ExecutionResult>;

/** This process's groups, by key: one open group per key, or the promise of one being started. */
class LiveGroups {
  private readonly groups = new Map<string, LiveGroup | Promise<LiveGroup | null>>();
  private readonly shapes = operationFact<Shape | null>();

  constructor(private readonly options: LiveGroupsOptions) {}

  private countOpen(): number {
    let open = 0;
    for (const group of this.groups.values()) if (group instanceof LiveGroup && group.open) open++;
    return open;
  }

  /** Starts a group's source, in a context of the group's own; an ExecutionResult when it refuses. */
  private async open(key: string, shape: Shape, args: ExecutionArgs): Promise<LiveGroup | ExecutionResult> {
    const { options } = this;
    const controller = new AbortController();
    const groupArgs = {
      ...args,
      contextValue: options.groupContext(args.contextValue as Context, controller.signal),
    };
    const events = await createSourceEventStream(groupArgs);
    if (!isAsyncIterable(events)) return events;
    const group: LiveGroup = new LiveGroup({
      events: events[Symbol.asyncIterator](),
      // An event that fails to execute is its members' error, masked; the stream goes on.
      run: async (payload) => {
        const result = await Promise.resolve(execute({ ...groupArgs, rootValue: payload })).catch(
          (error: unknown): ExecutionResult => ({
            errors: [new GraphQLError(String(error), { originalError: error as Error })],
          }),
        );
        return result.errors ? { ...result, errors: result.errors.map((e) => options.mask(e)) } : result;
      },
      stampOf: (payload) => options.stampOf(payload) ?? { polledAt: Date.now(), id: undefined },
      ended: () => {
        controller.abort();
        if (this.groups.get(key) === group) this.groups.delete(key);
        options.metrics.subscriptionGroups.set(this.countOpen());
      },
      source: SOURCES[shape.field] ?? shape.field,
      metrics: options.metrics,
      resuming: (args.contextValue as Context).resumeAfter !== null,
    });
    return group;
  }

  /** A subscriber's place in `group`, taken over by its transport when that writes streams itself. */
  private join(group: LiveGroup, args: ExecutionArgs): LiveMember {
    // Only the stream handle is kept: the member outlives its request's context (loaders and all).
    const { stream } = args.contextValue as Context;
    const member = new LiveMember(group, this.options, stream);
    group.join(member);
    stream.adopt?.(member);
    return member;
  }

  /** The group key of a subscription, or null when it is not grouped (incremental delivery). */
  private key(args: ExecutionArgs): { key: string; shape: Shape } | null {
    const shape = this.shapes.of(args.document, args.operationName, () =>
      shapeOf(args.schema, args.document, args.operationName),
    );
    const text = args.document.loc?.source.body;
    if (!shape || shape.incremental || text === undefined) return null;
    const token = shape.private ? explorerTokenOf(args.contextValue as Context) : null;
    const credential = token === null ? '' : createHash('sha256').update(token).digest('base64url');
    const variables = canonical(args.variableValues ?? {});
    // Subscribers resuming after the same event (clients of an instance that shut down) share a
    // group too: they missed the same events.
    const resume = (args.contextValue as Context).resumeAfter ?? '';
    return {
      key: `${credential}\u0000${resume}\u0000${args.operationName ?? ''}\u0000${variables}\u0000${text}`,
      shape,
    };
  }

  async subscribe(args: ExecutionArgs, original: SubscribeFn) {
    const grouped = this.key(args);
    if (!grouped) return original(args);
    const { key, shape } = grouped;
    const known = await this.groups.get(key);
    if (known?.joinable) return this.join(known, args);
    // This subscriber starts the group; others of the same key meanwhile wait for it (and start
    // their own if it refused: each then gets its own answer).
    let settle: (group: LiveGroup | null) => void = () => {};
    const pending = new Promise<LiveGroup | null>((resolve) => {
      settle = resolve;
    });
    this.groups.set(key, pending);
    const opened = await this.open(key, shape, args).catch((error: unknown) => ({
      errors: [error as GraphQLError],
    }));
    if (!(opened instanceof LiveGroup)) {
      if (this.groups.get(key) === pending) this.groups.delete(key);
      settle(null);
      return opened;
    }
    this.groups.set(key, opened);
    const member = this.join(opened, args);
    settle(opened);
    this.options.metrics.subscriptionGroups.set(this.countOpen());
    // A source that fails ends its group: the members' streams complete (pump's finally).
    opened.pump().catch(() => undefined);
    return member;
  }
}

/**
 * The plugin: last of the pipeline, it replaces the subscribe function, so that every other
 * plugin's onSubscribe has run (and may have refused) before a subscriber joins a group.
 */
export function useLiveGroups(options: LiveGroupsOptions): Plugin {
  const groups = new LiveGroups(options);
  return {
    onSubscribe({ subscribeFn, setSubscribeFn }) {
      setSubscribeFn((args) => groups.subscribe(args, subscribeFn as SubscribeFn));
    },
  };
}
