/**
 * The benchmark's devnet for `npm run bench -- --live`: src/devnet/main.ts's devnet (same seed,
 * token and standing chain) with two clocks the live benchmark reads over IPC. It stamps each block
 * an advance creates, and the arrival of the first lookup of that height by the search service's
 * suggestions (`GET /api/v1/dex/search?q=<height>`) after its creation: the poll that found the
 * block, answered in the same turn of the event loop. Both are machine-clock milliseconds
 * (`performance.timeOrigin + performance.now()`), the clock the load generator stamps receipts
 * with, so a receipt minus either is a delay on one clock.
 */
import { type RecordedRequest, startDevnet } from '../../src/devnet/index.js';

const now = () => performance.timeOrigin + performance.now();

const devnet = await startDevnet({
  seed: process.env.DEVNET_SEED ?? 'bench',
  token: process.env.DEVNET_TOKEN ?? 'bench-token',
  blockIntervalMs: 0,
  // The devnet calls `requests.push` for each request as it arrives (before answering it): the
  // hook below stamps the lookups instead of keeping every request.
  record: true,
});

/** Creation time of each block added here, by height. */
const created = new Map<number, number>();
/** Arrival time of the first suggestions lookup of each created height. */
const found = new Map<number, number>();

const stamp = (req: RecordedRequest) => {
  if (req.service !== 'scan' || req.path !== '/api/v1/dex/search') return;
  const text = new URLSearchParams(req.query).get('q') ?? '';
  if (!/^\d+$/.test(text)) return;
  const height = Number(text);
  if (created.has(height) && !found.has(height)) found.set(height, now());
};
devnet.requests.push = (...items: RecordedRequest[]) => {
  for (const item of items) stamp(item);
  return 0;
};

console.log(`SCAN_URL=${devnet.urls.scan}`);
console.log(`EXPLORER_URL=${devnet.urls.explorer}`);
console.log(`STAKE_URL=${devnet.urls.stake}`);

interface Message {
  type: string;
  id?: number;
  ms?: number;
  blocks?: number;
  heights?: number[];
}

const reply = (message: Message, body: Record<string, unknown>) =>
  process.send?.({ type: message.type, id: message.id, ...body });

process.on('message', (message: Message) => {
  switch (message.type) {
    case 'counts':
      return reply(message, { counts: { ...devnet.counts } });
    case 'latency':
      devnet.setLatency(message.ms ?? 0);
      return reply(message, { ms: message.ms ?? 0 });
    case 'advance': {
      const at = now();
      const advance = devnet.advance(message.blocks ?? 1);
      for (const height of advance.heights) created.set(height, at);
      return reply(message, { advance, at });
    }
    case 'times': {
      const heights = message.heights ?? [];
      return reply(message, {
        created: heights.map((h) => created.get(h) ?? null),
        found: heights.map((h) => found.get(h) ?? null),
      });
    }
    case 'clock':
      return reply(message, { now: now() });
  }
});

const stop = () => {
  devnet.close().then(() => process.exit(0));
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
