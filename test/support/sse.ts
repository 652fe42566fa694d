import { parseAnswer } from '../gateway/helpers.js';

/**
 * A GraphQL-over-SSE subscriber on a real socket, as a browser's fetch or EventSource would be:
 * it reads the stream's `next` events as they arrive, parsed and checked for contract codes, and
 * knows when the stream completed or the connection closed. A stream that fails (an event it cannot
 * read, an event of another kind, a broken connection) rejects whatever the test awaits with the
 * reason, instead of passing for a close: a test that waits for nothing must not pass on a failure.
 */

export interface SseMessage {
  event: string;
  data: string;
}

export interface Subscription {
  status: number;
  headers: Headers;
  /**
   * The next `next` event's GraphQL result; rejects if the stream ends first, or with the failure
   * that ended it (see `ended`).
   */
  next(): Promise<any>;
  /** The next `n` results, in order. */
  take(n: number): Promise<any[]>;
  /** Every message read so far (`next`, `complete`; pings are comments, not messages). */
  messages: SseMessage[];
  /**
   * Resolves once the stream ended normally: after `complete`, or when either side closed it
   * cleanly. Rejects when it failed: an event that is not a contract answer, an event other than
   * `next` and `complete`, a connection that broke, or a response that is not an event stream.
   * A failure never looks like a close.
   */
  ended: Promise<'complete' | 'closed'>;
  /** Closes the connection from the client's side. */
  close(): void;
}

export interface SubscribeOptions {
  variables?: Record<string, unknown>;
  token?: string;
  headers?: Record<string, string>;
  /** GET with the query in the URL (as an EventSource sends it) instead of a JSON POST. */
  method?: 'GET' | 'POST';
}

/** Splits an SSE byte stream into messages (`event:` and `data:` lines, blank-line terminated). */
function parseMessages(buffer: string): { messages: SseMessage[]; rest: string } {
  const messages: SseMessage[] = [];
  let rest = buffer;
  for (let end = rest.indexOf('\n\n'); end !== -1; end = rest.indexOf('\n\n')) {
    const block = rest.slice(0, end);
    rest = rest.slice(end + 2);
    let event = 'message';
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) continue;
      if (line.startsWith('event:')) event = line.slice(6).trim();
      else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
    }
    if (data.length > 0 || event !== 'message') messages.push({ event, data: data.join('\n') });
  }
  return { messages, rest };
}

/** What a stream's reader makes of each message; a message it cannot take throws. */
function readMessage(message: SseMessage): any {
  if (message.event === 'complete') return undefined;
  if (message.event !== 'next') throw new Error(`an unexpected ${message.event} event: ${message.data}`);
  try {
    return parseAnswer(message.data);
  } catch (error) {
    throw new Error(
      `a next event that is not a GraphQL answer (${(error as Error).message}): ${message.data}`,
    );
  }
}

export async function subscribe(
  url: string,
  query: string,
  options: SubscribeOptions = {},
): Promise<Subscription> {
  const abort = new AbortController();
  const headers: Record<string, string> = { accept: 'text/event-stream', ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  const get = options.method === 'GET';
  const target = get
    ? `${url}?query=${encodeURIComponent(query)}${options.variables ? `&variables=${encodeURIComponent(JSON.stringify(options.variables))}` : ''}`
    : url;
  const res = await fetch(target, {
    method: get ? 'GET' : 'POST',
    headers: get ? headers : { ...headers, 'content-type': 'application/json' },
    ...(get ? {} : { body: JSON.stringify({ query, variables: options.variables }) }),
    signal: abort.signal,
  });
  const messages: SseMessage[] = [];
  const results: any[] = [];
  const waiting: { resolve(value: any): void; reject(error: Error): void }[] = [];
  /** How the stream ended: normally, or with the failure every later `next()` rejects with. */
  let finished: 'complete' | 'closed' | Error | null = null;
  let closedByClient = false;
  let settle: { resolve(how: 'complete' | 'closed'): void; reject(error: Error): void } | undefined;
  const ended = new Promise<'complete' | 'closed'>((resolve, reject) => {
    settle = { resolve, reject };
  });
  // A failure no test awaits `ended` for still reaches any awaiting `next()`; it is not unhandled.
  ended.catch(() => {});
  const finish = (how: 'complete' | 'closed' | Error) => {
    if (finished) return;
    finished = how;
    if (how instanceof Error) {
      settle?.reject(how);
      for (const w of waiting.splice(0)) w.reject(how);
      abort.abort();
      return;
    }
    settle?.resolve(how);
    for (const w of waiting.splice(0)) w.reject(new Error(`stream ${how} before the next event`));
  };
  void (async () => {
    const type = res.headers.get('content-type') ?? '';
    if (!type.startsWith('text/event-stream')) {
      const text = await res.text().catch((error: Error) => `(unreadable: ${error.message})`);
      finish(new Error(`not an event stream: ${res.status} ${type} ${text}`));
      return;
    }
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        const parsed = parseMessages(buffer + decoder.decode(chunk, { stream: true }));
        buffer = parsed.rest;
        for (const message of parsed.messages) {
          messages.push(message);
          const result = readMessage(message);
          if (message.event === 'complete') finish('complete');
          if (result === undefined) continue;
          const w = waiting.shift();
          if (w) w.resolve(result);
          else results.push(result);
        }
      }
      if (buffer.trim() !== '') throw new Error(`the stream ended inside a message: ${buffer}`);
      finish('closed');
    } catch (error) {
      if (closedByClient) finish('closed');
      else finish(new Error(`SSE stream failed: ${(error as Error).message}`, { cause: error }));
    }
  })();
  const next = () =>
    results.length > 0
      ? Promise.resolve(results.shift())
      : finished instanceof Error
        ? Promise.reject(finished)
        : finished
          ? Promise.reject(new Error(`stream ${finished}`))
          : new Promise<any>((resolve, reject) => waiting.push({ resolve, reject }));
  return {
    status: res.status,
    headers: res.headers,
    next,
    take: async (n) => {
      const out: any[] = [];
      for (let i = 0; i < n; i++) out.push(await next());
      return out;
    },
    messages,
    ended,
    close: () => {
      closedByClient = true;
      abort.abort();
    },
  };
}
