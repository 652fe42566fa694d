import type { Plugin } from 'graphql-yoga';
import type { AnswerShape } from './pipeline/shape.js';

/**
 * Routing derived from the plugins. The node:http adapter (http/fast-path.ts) answers the common
 * requests itself and skips Yoga's HTTP stage (`onRequest`, `onRequestParse`, `onParams`,
 * `onResultProcess`, `onResponse`) for them:
 * so every plugin that acts at that stage says what it decides there, and the adapter asks the
 * plugins instead of repeating their rules. A request takes the adapter's path exactly when no
 * plugin declines it; each refusal names the plugin's reason. The start-time guard (guard.ts)
 * refuses a plugin that acts at the HTTP stage without saying so.
 */

/** The GraphQL parameters of a request as sent: a document by text, or named by id (no `query`). */
export interface SentParams {
  query?: string;
  variables?: Record<string, unknown> | null;
  operationName?: string | null;
  extensions?: Record<string, unknown> | null;
  documentId?: string;
}

/** What the adapter knows of a request before it runs it. */
export interface AdapterRequest {
  readonly method: string;
  /** The URL's path. */
  readonly path: string;
  readonly headers: { get(name: string): string | null; has(name: string): boolean };
  readonly params: SentParams;
  /** How its operation answers (pipeline/shape.ts), once its document is known; null: unknown. */
  shape(): AnswerShape | null;
}

/** What a plugin decides at the HTTP stage, said so that the adapter can ask it. */
export interface HttpStage {
  /**
   * Why the request must take Yoga's path, where this plugin's hooks run (a refusal it answers, a
   * step only that path takes); null: the adapter may run it without them.
   */
  declines?(request: AdapterRequest): string | null;
  /** The document a request names by id, when this plugin holds it in process; null otherwise. */
  named?(params: SentParams): string | null;
  /**
   * What this plugin's `onResponse` does to a whole answer, as the function the adapter calls too
   * on the answers it writes: the answer to write instead, or null to leave it as it is.
   */
  answer?(request: AnsweredRequest, answer: WholeAnswer): WholeAnswer | null;
}

/** The request an answer is for: the pipeline's own request object (a plugin's part may have marked it). */
export interface AnsweredRequest {
  readonly method: string;
  readonly headers: { get(name: string): string | null };
}

/**
 * A whole answer about to be written: its status, its headers (those a plugin reads, such as
 * `content-type`, by their lowercase names) and its body.
 */
export interface WholeAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string | null;
}

export type HttpStagePlugin = Plugin & { readonly httpStage: HttpStage };

/** A plugin, with what it decides at the HTTP stage. */
export const withHttpStage = <P extends Plugin>(plugin: P, httpStage: HttpStage): P & HttpStagePlugin =>
  Object.assign(plugin, { httpStage });

export const hasHttpStage = (plugin: Plugin): plugin is HttpStagePlugin => 'httpStage' in plugin;

/** The HTTP-stage hooks the adapter's path skips. */
export const HTTP_STAGE_HOOKS = [
  'onRequest',
  'onRequestParse',
  'onParams',
  'onResultProcess',
  'onResponse',
] as const;

/** What the pipeline's plugins decide for the adapter, asked in pipeline order. */
export class Routing {
  private readonly stages: readonly HttpStage[];

  constructor(plugins: readonly Plugin[]) {
    this.stages = plugins.filter(hasHttpStage).map((plugin) => plugin.httpStage);
  }

  /** The first plugin's reason to take Yoga's path, or null: the adapter may answer the request. */
  declines(request: AdapterRequest): string | null {
    for (const stage of this.stages) {
      const reason = stage.declines?.(request) ?? null;
      if (reason !== null) return reason;
    }
    return null;
  }

  /** A whole answer as the plugins' `onResponse` would leave it, asked in pipeline order. */
  answer(request: AnsweredRequest, answer: WholeAnswer): WholeAnswer {
    let current = answer;
    for (const stage of this.stages) current = stage.answer?.(request, current) ?? current;
    return current;
  }

  /** The document a request names by id, held in process by one of the plugins; null: Yoga resolves it. */
  named(params: SentParams): string | null {
    for (const stage of this.stages) {
      const document = stage.named?.(params) ?? null;
      if (document !== null) return document;
    }
    return null;
  }
}
