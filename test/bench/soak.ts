/**
 * `npm run soak`: ten minutes (--minutes N) of mixed load against the production build, to show
 * that memory stays flat and that healthy traffic never errs while the gateway is abused beside it:
 *
 * - the benchmark's scenarios S1 to S5 (healthy: any error among them fails the soak);
 * - a stream of documents never seen before (a random alias or comment on every request);
 * - slow clients that trickle header lines and never finish them, reconnecting when cut off;
 * - explorer reads (failedTransactions) while the explorer fails for 10 s of every minute: these
 *   are expected to answer UPSTREAM_UNAVAILABLE then, and are counted apart.
 *
 * Every 30 s it prints the gateway's RSS and V8 heap (from its /metrics), the req/s of each load
 * since the last line, and error counts. It fails (exit code 1) when RSS grows by more than 10 %
 * after the first two minutes, or when any healthy request errs. The gateway and the devnet are
 * pinned as in the benchmark (gateway on core 0; devnet and this process on core 1).
 */
import type { ChildProcess } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import autocannon from 'autocannon';
import { cliOption, FLOOD_QUERY, rssMb, scenarios, uniqueFloodDocument, withBenchDevnet } from './bench.js';

const minutes = Number(cliOption('minutes', '10'));
const durationSec = Math.round(minutes * 60);
const TOKEN = 'bench-token';

function ask(child: ChildProcess, message: { type: string; service?: string | null }): Promise<void> {
  return new Promise((resolve) => {
    const onMessage = (reply: { type: string }) => {
      if (reply.type !== message.type) return;
      child.off('message', onMessage);
      resolve();
    };
    child.on('message', onMessage);
    child.send(message);
  });
}

interface Tally {
  requests: number;
  errors: number;
}

/** An autocannon run for the whole soak; each response's body is checked for GraphQL errors. */
function loadFor(
  url: string,
  connections: number,
  bodies: () => { body: string; headers?: Record<string, string> },
  tally: Tally,
) {
  let finish: () => void = () => {};
  const done = new Promise<void>((resolve) => {
    finish = resolve;
  });
  const instance = autocannon(
    {
      url,
      connections,
      duration: durationSec,
      requests: [
        {
          method: 'POST',
          setupRequest: (req) => {
            const { body, headers } = bodies();
            return { ...req, body, headers: { 'content-type': 'application/json', ...headers } };
          },
          onResponse: (status, body) => {
            tally.requests++;
            if (status !== 200 || body.includes('"errors"')) tally.errors++;
          },
        },
      ],
    },
    () => finish(),
  );
  instance.on('reqError', () => {
    tally.requests++;
    tally.errors++;
  });
  return done;
}

/** Clients that send a request line and then a header line a second, forever; reconnect when cut. */
function slowClients(port: number, count: number, stop: { done: boolean }) {
  const cut = { count: 0 };
  const open = new Set<Socket>();
  const connectOne = () => {
    if (stop.done) return;
    const socket = connect(port, '127.0.0.1');
    open.add(socket);
    socket.on('error', () => {});
    let line = 0;
    const timer = setInterval(() => socket.write(`x-slow-${line++}: 1\r\n`), 1_000);
    socket.once('connect', () => socket.write('POST /graphql HTTP/1.1\r\nHost: soak\r\n'));
    socket.once('close', () => {
      clearInterval(timer);
      open.delete(socket);
      cut.count++;
      connectOne();
    });
  };
  for (let i = 0; i < count; i++) connectOne();
  return {
    cut,
    close: () => {
      for (const socket of open) socket.destroy();
    },
  };
}

async function heapMb(url: string): Promise<number> {
  const text = await (await fetch(url.replace('/graphql', '/metrics'))).text();
  const bytes = Number(/^nodejs_heap_size_used_bytes (\S+)/m.exec(text)?.[1] ?? 0);
  return Math.round(bytes / 1024 / 1024);
}

const failed = await withBenchDevnet(async (devnet, startTarget) => {
  const gateway = await startTarget('dist', devnet.urls);
  const pid = gateway.child.pid;
  const healthyScenarios = scenarios().filter((s) => ['S1', 'S2', 'S3', 'S4', 'S5'].includes(s.id));
  let turn = 0;
  const healthy: Tally = { requests: 0, errors: 0 };
  const unique: Tally = { requests: 0, errors: 0 };
  const explorer: Tally = { requests: 0, errors: 0 };
  const stop = { done: false };
  const runs = [
    loadFor(
      gateway.url,
      8,
      () => {
        const s = healthyScenarios[turn++ % healthyScenarios.length] as (typeof healthyScenarios)[number];
        return {
          body: JSON.stringify({ query: s.query, operationName: s.id, variables: s.variables() }),
          headers: s.headers,
        };
      },
      healthy,
    ),
    loadFor(gateway.url, 4, () => ({ body: JSON.stringify({ query: uniqueFloodDocument() }) }), unique),
    loadFor(
      gateway.url,
      2,
      () => ({
        body: JSON.stringify({ query: '{ failedTransactions(pageSize: 5) { nodes { hash } } }' }),
        headers: { authorization: `Bearer ${TOKEN}` },
      }),
      explorer,
    ),
  ];
  const slow = slowClients(Number(new URL(gateway.url).port), 20, stop);
  const finished = Promise.all(runs);

  const start = Date.now();
  const rss: { at: number; mb: number }[] = [];
  let last = { healthy: 0, unique: 0, explorer: 0, at: start };
  console.log(`soak: ${minutes} min against ${gateway.url} (FLOOD_QUERY: ${FLOOD_QUERY})`);
  const report = setInterval(async () => {
    const at = Date.now();
    const seconds = (at - last.at) / 1000;
    const mb = rssMb(pid);
    rss.push({ at: at - start, mb });
    const rate = (t: Tally, before: number) => Math.round((t.requests - before) / seconds);
    console.log(
      `${String(Math.round((at - start) / 1000)).padStart(4)} s  RSS ${mb} MB  heap ${await heapMb(gateway.url)} MB  ` +
        `healthy ${rate(healthy, last.healthy)} req/s (${healthy.errors} errors)  ` +
        `unique ${rate(unique, last.unique)} req/s (${unique.errors} errors)  ` +
        `explorer ${rate(explorer, last.explorer)} req/s (${explorer.errors} failed while it was down)  ` +
        `slow clients cut ${slow.cut.count}`,
    );
    last = { healthy: healthy.requests, unique: unique.requests, explorer: explorer.requests, at };
  }, 30_000);
  // The explorer fails for 10 s of every minute.
  const outages = setInterval(async () => {
    await ask(devnet.child, { type: 'failing', service: 'explorer' });
    setTimeout(() => void ask(devnet.child, { type: 'failing', service: null }), 10_000);
  }, 60_000);

  await finished;
  stop.done = true;
  clearInterval(report);
  clearInterval(outages);
  slow.close();

  const settled = rss.filter((r) => r.at >= 120_000);
  const base = settled[0]?.mb ?? 0;
  const peak = Math.max(...settled.map((r) => r.mb), 0);
  const growth = base > 0 ? (peak - base) / base : 0;
  console.log(
    `\nhealthy: ${healthy.requests} requests, ${healthy.errors} errors; unique documents: ${unique.requests} requests, ` +
      `${unique.errors} errors; explorer reads: ${explorer.requests}, ${explorer.errors} answered an outage; ` +
      `slow clients cut off: ${slow.cut.count}`,
  );
  console.log(
    `RSS after 2 min ${base} MB, highest after ${peak} MB: ${(growth * 100).toFixed(1)} % growth (limit 10 %)`,
  );
  const fails = growth > 0.1 || healthy.errors > 0 || healthy.requests === 0 || settled.length === 0;
  console.log(fails ? 'soak FAILED' : 'soak passed');
  return fails;
});
process.exit(failed ? 1 : 0);
