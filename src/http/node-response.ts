import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestHeaders } from '../exchange/exchange.js';

/** What node:http adapters share: header lookups and writing a fetch Response to a ServerResponse. */

/** A request's headers as the Headers API reads them (`get`), without building a Headers object. */
export function headersOf(req: IncomingMessage): RequestHeaders {
  return {
    get: (name: string) => (req.headers[name.toLowerCase()] as string | undefined) ?? null,
    has: (name: string) => req.headers[name.toLowerCase()] !== undefined,
  };
}

/** Resolves when `res` can take more (drained) or is gone (closed). */
export const writable = (res: ServerResponse) =>
  new Promise<void>((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.once('drain', done);
    res.once('close', done);
  });

/**
 * Writes a fetch Response (a single body or a stream) to `res` at the pace the client reads it;
 * the client's disconnect cancels the stream. `extra` headers are added to the response's own.
 */
export async function pipeResponse(
  res: ServerResponse,
  response: Response,
  extra: Record<string, string> = {},
): Promise<void> {
  const reader = response.body?.getReader();
  if (res.destroyed) {
    await reader?.cancel();
    return;
  }
  res.once('close', () => void reader?.cancel().catch(() => undefined));
  res.writeHead(response.status, { ...Object.fromEntries(response.headers), ...extra });
  for (let chunk = await reader?.read(); chunk && !chunk.done; chunk = await reader?.read()) {
    if (!res.write(chunk.value) && !res.destroyed) await writable(res);
    if (res.destroyed) return;
  }
  res.end();
}
