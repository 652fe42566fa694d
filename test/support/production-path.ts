import type { IncomingHttpHeaders } from 'node:http';
import { expect, onTestFailed } from 'vitest';
import type { Gateway } from '../../src/gateway.js';

/**
 * The production path under the domain tests (the vitest project 'spec, over a socket'): each
 * request the helpers send goes over a real socket to the gateway's own node:http listener, as
 * main.ts serves it, and its document is sent once before (a warm-up) so that the request itself
 * runs the prepared request, as a hot operation's does in production (decisions 0003, 0008). A
 * warm-up carries an `x-request-id` of its own, which the gateway passes on to every upstream call
 * it makes: those calls are taken out of the records a test reads, so that a test sees only its
 * own request's traffic. A test that fails says which path answered each of its requests.
 */

/** A gateway's listener on 127.0.0.1 (helpers.ts `listen`). */
export interface Listening {
  /** Its /graphql URL. */
  url: string;
  close(): Promise<void>;
}

/** What a test keeps of upstream traffic: a recording devnet, or an upstream of its own. */
export interface Recorder {
  requests: { headers: IncomingHttpHeaders; service?: string }[];
  /** Requests per service, when the recorder counts them too (the devnet's `counts`). */
  counts?: Record<string, number>;
}

/** A request's answer over the socket, read whole. */
export interface SocketAnswer {
  status: number;
  headers: Headers;
  text: string;
}

const WARM_UP_ID = 'warm-up-';

/** A document as a failure message names it: its first line, short. */
const named = (document: string) => {
  const line = document.trim().split('\n')[0] ?? '';
  return line.length > 60 ? `${line.slice(0, 57)}...` : line;
};

/** How many requests the gateway answered by a prepared request (`graphql_prepared_requests_total`). */
async function preparedCount(gateway: Gateway): Promise<number> {
  const { values } = await gateway.metrics.preparedRequests.get();
  return values.reduce((sum, v) => sum + v.value, 0);
}

/** The listeners, warm-ups and records of one test file. */
export class SocketPath {
  private readonly listeners = new Map<Gateway, Promise<Listening>>();
  /** The documents each gateway has been sent: executed once, so prepared when they can be. */
  private readonly sent = new WeakMap<Gateway, Set<string>>();
  private readonly recorders = new Set<Recorder>();
  private warmUps = 0;
  /** The paths that answered the running test's requests, for its failure message. */
  private answered: { test: string | undefined; paths: string[] } = { test: undefined, paths: [] };

  constructor(private readonly serve: (gateway: Gateway) => Promise<Listening>) {}

  /** Serves `gateway` on `listening` (served with its own settings) rather than with the defaults. */
  adopt(gateway: Gateway, listening: Promise<Listening>): void {
    this.listeners.set(gateway, listening);
  }

  /** Upstream traffic whose warm-ups are taken out of `recorder`. */
  keepsRecords(recorder: Recorder): void {
    this.recorders.add(recorder);
  }

  /** The gateway's listener, served on first use for the rest of the file. */
  listening(gateway: Gateway): Promise<Listening> {
    let listening = this.listeners.get(gateway);
    if (!listening) {
      listening = this.serve(gateway);
      this.listeners.set(gateway, listening);
    }
    return listening;
  }

  /** The gateway's /graphql URL on its listener. */
  async url(gateway: Gateway): Promise<string> {
    return (await this.listening(gateway)).url;
  }

  /** Any request to the gateway's listener (`path` and query after the origin). */
  async fetch(gateway: Gateway, path: string, init?: RequestInit): Promise<Response> {
    return fetch(new URL(path, await this.url(gateway)), init);
  }

  /**
   * A GraphQL POST of `document` over the socket, warmed first unless `cold` (a test of what a cold
   * gateway's caches do) or the gateway has been sent the document before.
   */
  async post(gateway: Gateway, document: string, init: RequestInit, cold = false): Promise<SocketAnswer> {
    const url = await this.url(gateway);
    const sent = this.sent.get(gateway) ?? new Set<string>();
    this.sent.set(gateway, sent);
    if (!sent.has(document) && !cold) await this.warmUp(url, init);
    sent.add(document);
    const before = await preparedCount(gateway);
    const res = await fetch(url, init);
    const answer = { status: res.status, headers: res.headers, text: await res.text() };
    const prepared = (await preparedCount(gateway)) - before === 1;
    this.note(prepared ? 'the prepared request' : `the first path, not prepared (${named(document)})`);
    return answer;
  }

  async close(): Promise<void> {
    const listening = await Promise.all(this.listeners.values());
    this.listeners.clear();
    await Promise.all(listening.map((l) => l.close()));
  }

  /** The request once, its upstream calls then taken out of the records (and counts) tests read. */
  private async warmUp(url: string, init: RequestInit): Promise<void> {
    const id = `${WARM_UP_ID}${++this.warmUps}`;
    const res = await fetch(url, { ...init, headers: { ...(init.headers as object), 'x-request-id': id } });
    await res.arrayBuffer();
    for (const { requests, counts } of this.recorders) {
      for (let i = requests.length - 1; i >= 0; i--) {
        if (requests[i]?.headers['x-request-id'] !== id) continue;
        const [call] = requests.splice(i, 1);
        if (counts && call?.service) counts[call.service] = (counts[call.service] ?? 0) - 1;
      }
    }
  }

  /** Which path answered, kept for the running test: a failure of it lists them. */
  private note(path: string): void {
    const test = expect.getState().currentTestName;
    if (test === undefined) return;
    if (this.answered.test !== test) {
      const paths: string[] = [];
      this.answered = { test, paths };
      try {
        onTestFailed(({ task }) => {
          const note = `\n[answered over a socket by the gateway's listener: ${paths.join('; ')}]`;
          for (const error of task.result?.errors ?? []) error.message += note;
        });
      } catch {
        // Outside a test's body (a hook): nothing to name.
      }
    }
    this.answered.paths.push(path);
  }
}
