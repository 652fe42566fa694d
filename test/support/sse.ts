import { parseAnswer } from '../gateway/helpers.js';

/**
 * A GraphQL-over-SSE subscriber on a real socket, as a browser's fetch or EventSource would be:
 * it reads the stream's `next` events as they arrive, parsed and checked for contract codes, and
 * knows when the stream completed or the connection closed.
 */

export interface SseMessage {
  event: string;
  data: string;
}

export interface Subscription {
  status: number;
  headers: Headers;
  /** The next `next` event's GraphQL result; rejects if the stream ends first. */
  next(): Promise<any>;
  /** The next `n` results, in order. */
  take(n: number): Promise<any[]>;
  /** Every message read so far (`next`, `complete`; pings are comments, not messages). */
  messages: SseMessage[];
  /** Resolves once the server ended the stream (after `complete`, or by closing the connection). */
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
  let finished: 'complete' | 'closed' | null = null;
  let endedResolve: (how: 'complete' | 'closed') => void = () => {};
  const ended = new Promise<'complete' | 'closed'>((resolve) => {
    endedResolve = resolve;
  });
  const finish = (how: 'complete' | 'closed') => {
    if (finished) return;
    finished = how;
    endedResolve(how);
    for (const w of waiting.splice(0)) w.reject(new Error(`stream ${how} before the next event`));
  };
  void (async () => {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        const parsed = parseMessages(buffer + decoder.decode(chunk, { stream: true }));
        buffer = parsed.rest;
        for (const message of parsed.messages) {
          messages.push(message);
          if (message.event === 'complete') finish('complete');
          if (message.event !== 'next') continue;
          const result = parseAnswer(message.data);
          const w = waiting.shift();
          if (w) w.resolve(result);
          else results.push(result);
        }
      }
    } catch {
      // The connection was cut (by either side).
    }
    finish('closed');
  })();
  const next = () =>
    results.length > 0
      ? Promise.resolve(results.shift())
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
    close: () => abort.abort(),
  };
}
