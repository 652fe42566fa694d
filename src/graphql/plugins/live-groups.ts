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
import type { Delivery, LiveMemberLike, LiveSink, StreamHandle } from '../../live/streams.js';
import type { GatewayMetrics } from '../../ops/metrics.js';
import { declaredCacheScope } from '../../schema/cache-scope.js';
import { type Context, explorerTokenOf } from '../../schema/context.js';
import { operationFact } from '../pipeline/facts.js';
import { incremental } from '../pipeline/shape.js';

/**
 * Subscriptions in groups: subscribers whose operation (document, operation name, variables) and
 * credential scope are the same form one group, and each event is executed once per group; its one
 * result reaches every member, so that a transport serializes it once (pipeline/framing.ts) and
 * writes the same bytes to every stream. The credential is part of the key exactly when the
 * operation selects a field declared `private` (schema/cache-scope.ts): read, never guessed.
 *
 * Everything a subscriber's request owes (parsing, validation, limits, pricing and the rate limit,
 * the caps) runs for each of them in the one pipeline, before this plugin's subscribe. A group
 * executes in a context of its own, so that no member's disconnect cancels another's events; its
 * first member starts its source, later ones join (a private group's each with its token checked),
 * a resuming one gets what it missed first (`replay`). A group ends with its last member or its
 * source (SIGTERM; a refused token, which every member is told).
 * Why, with the figures: docs/decisions/0005-live-groups-and-adapter-streams.md.
 */

/** What every member of a process shares. */
interface MemberOptions {
  backlog: number;
  metrics: GatewayMetrics;
}

/**
 * One subscriber of a group. Pulled as an async iterator (Yoga's own stream processors), or, once
 * a sink attaches, pushing every event to it: then no iterator chain runs for it at all. Its stream
 * handle is its one end: the member leaves its group when the stream ends, however it ends, and
 * ends the stream when it leaves (cut, or its source ended).
 */
export class LiveMember implements AsyncIterableIterator<ExecutionResult>, LiveMemberLike {
  private readonly queue: Delivery[] = [];
  private waiting: ((result: IteratorResult<ExecutionResult>) => void) | null = null;
  private sink: LiveSink | null = null;
  private done = false;
  /** While its replay runs (a resuming subscriber): the live events that wait for it. */
  private held: Delivery[] | null = null;
  /** A resuming subscriber's last event id (a block's height): nothing at or below it again. */
  private floor: number | null = null;

  constructor(
    private readonly group: LiveGroup,
    private readonly options: MemberOptions,
    private readonly handle: StreamHandle,
  ) {}

  get left(): boolean {
    return this.done;
  }

  /** Pushes every event from now on (and any waiting) to `sink`. */
  attach(sink: LiveSink): void {
    this.sink = sink;
    for (const delivery of this.queue.splice(0)) sink.deliver(delivery);
    // The group ended before the stream was taken over: it completes now.
    if (this.done) sink.complete();
  }

  /** A resuming subscriber: live events wait until `replayed` gives it what it missed after `after`. */
  hold(after: number): void {
    this.held = [];
    this.floor = after;
  }

  /**
   * The replay is read: its events first, then the live ones that waited, none twice. `ahead`: the
   * resume point is past the head, so it is no floor: the member resumes at the head.
   */
  replayed(deliveries: Delivery[], ahead = false): void {
    const held = this.held ?? [];
    this.held = null;
    if (ahead) this.floor = null;
    for (const delivery of deliveries) this.offer(delivery);
    for (const delivery of held) this.offer(delivery);
  }

  offer(delivery: Delivery): void {
    if (this.done) return;
    if (this.held) {
      if (this.held.length >= this.options.backlog) this.cut();
      else this.held.push(delivery);
      return;
    }
    if (this.floor !== null && delivery.id !== undefined) {
      const id = Number(delivery.id);
      if (id <= this.floor) return;
      this.floor = id;
    }
    if (this.sink) this.sink.deliver(delivery);
    else if (this.waiting) {
      this.options.metrics.observeDelivery((Date.now() - delivery.polledAt) / 1000);
      this.waiting({ value: delivery.result, done: false });
      this.waiting = null;
    } else if (this.queue.length >= this.options.backlog) this.cut();
    else this.queue.push(delivery);
  }

  /** A reader that stopped: cut, holding no more than LIVE_BACKLOG events for it. */
  private cut(): void {
    this.options.metrics.observeCut();
    this.queue.length = 0;
    this.held = null;
    this.leave();
    this.handle.cut();
  }

  /** The group's source ended: the stream completes once what is waiting was read. */
  finish(): void {
    if (this.done) return;
    this.leave();
    this.sink?.complete();
  }

  /** The subscriber is gone, cut or finished: it leaves its group, and its stream ends. */
  leave(): void {
    if (this.done) return;
    this.done = true;
    this.group.leave(this);
    if (this.queue.length === 0) {
      this.waiting?.({ value: undefined, done: true });
      this.waiting = null;
    }
    this.handle.end();
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
  /** The masked answer every member gets when the source fails (its token refused, say). */
  failed(error: unknown): ExecutionResult;
  stampOf(payload: unknown): { polledAt: number; id: string | undefined };
  /** Told once the group ended (its last member left, or its source ended). */
  ended(): void;
  /** The source's label for metrics (blocks, validators, failed). */
  source: string;
  metrics: GatewayMetrics;
  /** How many of its latest events with an id the group keeps executed, for subscribers resuming after one. */
  remember: number;
}

/** Subscribers of one operation, variables and credential: one execution per event for all. */
export class LiveGroup {
  readonly members = new Set<LiveMember>();
  private closed = false;
  /** Its latest events with an id, executed (or being executed), by id: replays reuse them. */
  private readonly recent = new Map<string, Promise<Delivery>>();

  constructor(private readonly options: GroupOptions) {}

  get open(): boolean {
    return !this.closed;
  }

  join(member: LiveMember): void {
    this.members.add(member);
  }

  leave(member: LiveMember): void {
    if (this.members.delete(member) && this.members.size === 0) this.close();
  }

  /** An event as this group's members get it: executed once, whoever asks for it. */
  deliveryOf(payload: unknown): Promise<Delivery> {
    const stamp = this.options.stampOf(payload);
    const kept = stamp.id === undefined ? undefined : this.recent.get(stamp.id);
    if (kept) return kept;
    const delivery = this.options.run(payload).then((result) => {
      this.options.metrics.observeLiveExecution(this.options.source);
      return { result, ...stamp };
    });
    if (stamp.id !== undefined) {
      this.recent.set(stamp.id, delivery);
      // The oldest goes first (a Map keeps insertion order).
      if (this.recent.size > this.options.remember)
        this.recent.delete(this.recent.keys().next().value as string);
    }
    return delivery;
  }

  /** Reads the source's events until it ends: each executed once, handed to every member. */
  async pump(): Promise<void> {
    const { events } = this.options;
    try {
      for (let next = await events.next(); !next.done && !this.closed; next = await events.next()) {
        const delivery = await this.deliveryOf(next.value);
        for (const member of this.members) member.offer(delivery);
      }
    } catch (error) {
      // The source failed (its credential refused): every member is told why, then completes.
      const delivery = { result: this.options.failed(error), polledAt: Date.now(), id: undefined };
      for (const member of this.members) member.offer(delivery);
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
  return {
    field: first.name.value,
    private: selectsPrivate(schema, fragments, operation.selectionSet, root, new Set()),
    incremental: incremental(document),
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
  /** LIVE_CATCH_UP: the latest events with an id a group keeps executed for resuming subscribers. */
  catchUp: number;
  metrics: GatewayMetrics;
  /** The context a group executes in: the first member's, with loaders of its own and no request. */
  groupContext(member: Context, signal: AbortSignal): Context;
  /** When the poll that found an event's payload was answered, and the event's id if it has one. */
  stampOf(payload: unknown): { polledAt: number; id: string | undefined } | undefined;
  /** Masks an error (public-errors: code, mask, log), so that every transport writes the same bytes. */
  mask(error: GraphQLError): GraphQLError;
  /** What a subscriber of `field` resuming after event `after` missed; null when the field's events have no ids. */
  missed(field: string, after: number): MissedEvents | null;
  /** Charges `reads` upstream reads to the subscriber's budget: the refusal over it, else null. */
  charge(context: Context, reads: number): Promise<GraphQLError | null>;
  /** Checks a joining subscriber's credential (a private group's token): the refusal, else null. */
  admit(context: Context): Promise<GraphQLError | null>;
}

/** What a resuming subscriber missed: how many upstream reads it takes (charged first), and the payloads. */
export interface MissedEvents {
  reads: number;
  /** The payloads after the resume point, oldest first; `stopped` ends the reads early (the subscriber left). */
  read(stopped: () => boolean): Promise<unknown[]>;
  /**
   * Whether the resume point names an event the source has not made (its chain started again,
   * another chain's id): asked when nothing came after it; the subscriber then resumes at the head.
   */
  ahead?(): Promise<boolean>;
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
    const masked = (errors: readonly GraphQLError[]) => errors.map((e) => options.mask(e));
    const group: LiveGroup = new LiveGroup({
      events: events[Symbol.asyncIterator](),
      // An event that fails to execute is its members' error, masked; the stream goes on.
      run: async (payload) => {
        const result = await Promise.resolve(execute({ ...groupArgs, rootValue: payload })).catch(
          (error: unknown): ExecutionResult => ({
            errors: [new GraphQLError(String(error), { originalError: error as Error })],
          }),
        );
        return result.errors ? { ...result, errors: masked(result.errors) } : result;
      },
      failed: (error) => ({
        errors: masked([
          error instanceof GraphQLError
            ? error
            : new GraphQLError(String(error), { originalError: error as Error }),
        ]),
      }),
      stampOf: (payload) => options.stampOf(payload) ?? { polledAt: Date.now(), id: undefined },
      ended: () => {
        controller.abort();
        if (this.groups.get(key) === group) this.groups.delete(key);
        options.metrics.subscriptionGroups.set(this.countOpen());
      },
      source: SOURCES[shape.field] ?? shape.field,
      metrics: options.metrics,
      remember: options.catchUp,
    });
    return group;
  }

  /**
   * The open group of `key`, or one started for it: others of the same key meanwhile wait for it
   * (and start their own if it refused: each then gets its own answer).
   */
  private async groupOf(
    key: string,
    shape: Shape,
    args: ExecutionArgs,
  ): Promise<LiveGroup | ExecutionResult> {
    const known = await this.groups.get(key);
    if (known?.open) {
      // A private group's members share its token's events: each one's token is checked as it joins.
      const refusal = shape.private ? await this.options.admit(args.contextValue as Context) : null;
      return refusal ? { errors: [refusal] } : known;
    }
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
    settle(opened);
    this.options.metrics.subscriptionGroups.set(this.countOpen());
    // A source that fails ends its group: the members' streams complete (pump's finally).
    opened.pump().catch(() => undefined);
    return opened;
  }

  /**
   * A subscriber's place in `group`. Its stream's end is its leaving: a stream that ended while it
   * subscribed (its client gone) leaves at once, and its group, alone, ends with it.
   */
  private join(group: LiveGroup, args: ExecutionArgs): LiveMember {
    // Only the stream handle is kept: the member outlives its request's context (loaders and all).
    const { stream } = args.contextValue as Context;
    const member = new LiveMember(group, this.options, stream);
    group.join(member);
    stream.adopt(member);
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
    return { key: `${credential}\u0000${args.operationName ?? ''}\u0000${variables}\u0000${text}`, shape };
  }

  async subscribe(args: ExecutionArgs, original: SubscribeFn) {
    try {
      return await this.subscribeOnce(args, original);
    } catch (error) {
      // However it failed, the stream it was for has ended: what it took is given back.
      (args.contextValue as Context).stream.end();
      throw error;
    }
  }

  private async subscribeOnce(args: ExecutionArgs, original: SubscribeFn) {
    const grouped = this.key(args);
    if (!grouped) return original(args);
    const { key, shape } = grouped;
    const context = args.contextValue as Context;
    // A subscriber resuming after an event (EventSource's Last-Event-ID) gets what it missed first:
    // from memory, or, where that must be read from the upstream, charged to its budget first.
    const missed =
      context.resumeAfter === null ? null : this.options.missed(shape.field, context.resumeAfter);
    if (missed && missed.reads > 0) {
      const refusal = await this.options.charge(context, missed.reads);
      if (refusal) return { errors: [refusal] };
    }
    const group = await this.groupOf(key, shape, args);
    if (!(group instanceof LiveGroup)) return group;
    const member = this.join(group, args);
    if (missed && context.resumeAfter !== null) void replay(group, member, context.resumeAfter, missed);
    return member;
  }
}

/**
 * A resuming member's replay: it joined the live group at once (so that nothing that group
 * delivers from now on is lost) with its live events held; the events it missed come first,
 * executed once per group (a group keeps its latest executed), then the held live ones, none twice.
 */
async function replay(group: LiveGroup, member: LiveMember, after: number, missed: MissedEvents) {
  member.hold(after);
  const payloads = await missed.read(() => member.left).catch(() => []);
  // Nothing after it: past the head, the resume point would hold back every event until the source
  // passed it (a devnet started again: minutes of silence).
  const ahead = payloads.length === 0 && (await missed.ahead?.().catch(() => false)) === true;
  const deliveries: Delivery[] = [];
  for (const payload of payloads) deliveries.push(await group.deliveryOf(payload));
  member.replayed(deliveries, ahead);
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
