import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from './net.js';
import { hasRedis, REDIS_SERVER } from './redis.js';
import { until } from './until.js';

/**
 * A real Redis Cluster for the tests: three masters of Debian's `redis-server` (7.0 or later, for
 * sharded pub/sub) on free ports of 127.0.0.1, each with its cluster bus on a free port of its own
 * and a temporary directory, persistence off. The 16384 slots are split in three
 * (`CLUSTER ADDSLOTSRANGE`) and the nodes introduced (`CLUSTER MEET`), as `redis-cli --cluster
 * create` does, without needing redis-cli. The gateways connect as the `gateway` user with the
 * rights `components/redis` gives it (its keys and channels only), the test as `default`.
 * `stop(i)` kills one node; `start(i)` brings it back on its ports with its nodes.conf, so that it
 * rejoins holding its slots (and no keys).
 */

/** Whether the cluster tests run: as the Redis tests, skipped outside CI without redis-server, failing in CI. */
export const hasRedisCluster = hasRedis;

const SLOTS = 16_384;
const NODES = 3;
const PASSWORD = 'cluster-test-password';
/** deploy/k8s/components/redis/redis.yaml's `gateway` user. */
const GATEWAY_USER = [
  'gateway',
  'on',
  `>${PASSWORD}`,
  '~gw:*',
  '~chain-gateway:*',
  '&gw:*',
  '+@all',
  '-@dangerous',
  '+info',
];

export interface TestRedisCluster {
  /** `redis-cluster://` as the `gateway` user, naming two of the three nodes: the third is found from them. */
  url: string;
  ports: number[];
  /** The node (0, 1 or 2) whose slots hold `key`'s (or a channel's) hash slot. */
  nodeOf(key: string): Promise<number>;
  /** Every key of every node. */
  keys(): Promise<string[]>;
  /** One command to one node (PUBSUB and CLUSTER answer for the node asked). */
  call(node: number, ...command: [string, ...(string | number)[]]): Promise<unknown>;
  stop(node: number): Promise<void>;
  start(node: number): Promise<void>;
  close(): Promise<void>;
}

interface Node {
  port: number;
  busPort: number;
  dir: string;
  child: ChildProcess | null;
}

/** Starts one node's redis-server; resolves once it accepts connections. */
async function run(node: Node): Promise<void> {
  const proc = spawn(
    REDIS_SERVER,
    [
      ...['--port', String(node.port), '--bind', '127.0.0.1', '--dir', node.dir],
      ...['--save', '', '--appendonly', 'no'],
      ...['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf'],
      ...['--cluster-port', String(node.busPort), '--cluster-node-timeout', '5000'],
      ...['--user', ...GATEWAY_USER],
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  node.child = proc;
  await new Promise<void>((resolve, reject) => {
    let out = '';
    proc.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('Ready to accept connections')) resolve();
    });
    proc.once('exit', (code) => reject(new Error(`redis-server exited with ${code}: ${out}`)));
  });
}

/** One command to one node, on a connection of its own. */
async function ask(port: number, ...command: [string, ...(string | number)[]]): Promise<unknown> {
  const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0 });
  try {
    await client.connect();
    return await client.call(...command);
  } finally {
    client.disconnect();
  }
}

/** Resolves once every node says the cluster is whole: every slot served, every node known. */
async function whole(nodes: Node[]): Promise<void> {
  await until(
    async () => {
      const infos = await Promise.all(
        nodes.map((n) => ask(n.port, 'CLUSTER', 'INFO').catch(() => '') as Promise<string>),
      );
      return infos.every(
        (info) => info.includes('cluster_state:ok') && info.includes(`cluster_known_nodes:${NODES}`),
      );
    },
    { within: 15_000, what: 'the three nodes agreeing that the cluster is ok' },
  );
}

export async function startRedisCluster(): Promise<TestRedisCluster> {
  const nodes: Node[] = [];
  for (let i = 0; i < NODES; i++) {
    nodes.push({
      port: await freePort(),
      busPort: await freePort(),
      dir: mkdtempSync(join(tmpdir(), 'gateway-redis-cluster-')),
      child: null,
    });
  }
  await Promise.all(nodes.map(run));
  // Slot ranges of about a third each, node i holding [first[i], first[i + 1]).
  const first = nodes.map((_, i) => Math.floor((i * SLOTS) / NODES));
  await Promise.all(
    nodes.map((n, i) =>
      ask(n.port, 'CLUSTER', 'ADDSLOTSRANGE', first[i] as number, (first[i + 1] ?? SLOTS) - 1),
    ),
  );
  const [seed, ...others] = nodes as [Node, ...Node[]];
  for (const other of others) await ask(seed.port, 'CLUSTER', 'MEET', '127.0.0.1', other.port, other.busPort);
  await whole(nodes);

  const stop = async (i: number) => {
    const node = nodes[i] as Node;
    const proc = node.child;
    node.child = null;
    if (!proc || proc.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    proc.kill('SIGKILL');
    await exited;
  };
  return {
    url: `redis-cluster://gateway:${PASSWORD}@127.0.0.1:${nodes[0]?.port},127.0.0.1:${nodes[1]?.port}`,
    ports: nodes.map((n) => n.port),
    async nodeOf(key) {
      const slot = (await ask(seed.port, 'CLUSTER', 'KEYSLOT', key)) as number;
      return first.findLastIndex((start) => start <= slot);
    },
    async keys() {
      const all = await Promise.all(nodes.map((n) => ask(n.port, 'KEYS', '*') as Promise<string[]>));
      return all.flat().sort();
    },
    call: (i, ...command) => ask((nodes[i] as Node).port, ...command),
    stop,
    async start(i) {
      await run(nodes[i] as Node);
      await whole(nodes);
    },
    async close() {
      for (let i = 0; i < NODES; i++) await stop(i);
      for (const node of nodes) rmSync(node.dir, { recursive: true, force: true });
    },
  };
}
