import { type ChildProcess, spawn } from 'node:child_process';
import { EventEmitter, once } from 'node:events';

/**
 * The real gateway process (`src/main.ts` under tsx) on port 0, its output watched: tests wait
 * on what it prints, never on time.
 */

export interface Started {
  child: ChildProcess;
  url: string;
  output(): string;
  /** Resolves with what `read` finds in the output, as soon as it finds something. */
  waitFor<T>(read: (output: string) => T | null): Promise<T>;
  /** Resolves when the process has printed `pattern` (at any time since it started). */
  printed(pattern: RegExp): Promise<RegExpExecArray>;
}

/**
 * Starts the gateway with `env` over the test's own; `listening` resolves once it listens. With
 * `openFiles`, under that open-file limit (`ulimit -n`).
 */
export function startServerProcess(
  env: Record<string, string>,
  openFiles?: number,
): Started & { listening: Promise<void> } {
  const node = [process.execPath, '--import', 'tsx', 'src/main.ts'];
  const [command, ...args] =
    openFiles === undefined ? node : ['bash', '-c', `ulimit -n ${openFiles} && exec "$@"`, 'bash', ...node];
  const child = spawn(command as string, args, {
    // In devnet mode the chain stands still unless a test moves it.
    env: { ...process.env, PORT: '0', NODE_ENV: 'test', DEVNET_BLOCK_MS: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const events = new EventEmitter();
  const append = (chunk: Buffer) => {
    output += chunk.toString();
    events.emit('printed');
  };
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  const waitFor = <T>(read: (output: string) => T | null) =>
    new Promise<T>((resolve, reject) => {
      const check = () => {
        const found = read(output);
        if (found === null) return;
        stop();
        resolve(found);
      };
      const exited = () => {
        stop();
        reject(new Error(`server exited before printing what ${read} reads: ${output}`));
      };
      const stop = () => {
        events.off('printed', check);
        child.off('exit', exited);
      };
      events.on('printed', check);
      child.once('exit', exited);
      check();
    });
  const printed = (pattern: RegExp) => waitFor((text) => pattern.exec(text));
  const started: Started & { listening: Promise<void> } = {
    child,
    url: '',
    output: () => output,
    waitFor,
    printed,
    listening: printed(/gateway listening on (\S+)/).then(([, url]) => {
      started.url = url as string;
    }),
  };
  return started;
}

/**
 * A gateway process on a devnet's URLs as the live tests run it (short polls and leases, no rate
 * limit), listening; `env` adds to or overrides it. `started` collects it for the file's cleanup.
 */
export async function startLiveGateway(
  urls: { scan: string; explorer: string; stake: string },
  live: { pollMs: number; leaseMs: number },
  env: Record<string, string>,
  started: Started[],
): Promise<Started> {
  const gateway = startServerProcess({
    SCAN_URL: urls.scan,
    EXPLORER_URL: urls.explorer,
    STAKE_URL: urls.stake,
    LIVE_POLL_MS: String(live.pollMs),
    LIVE_LEASE_MS: String(live.leaseMs),
    RATE_LIMIT_POINTS: '0',
    ...env,
  });
  started.push(gateway);
  await gateway.listening;
  return gateway;
}

/** Kills (SIGKILL) every process of `started` still running, and resolves once each has exited. */
export async function killAll(started: readonly Started[]): Promise<void> {
  await Promise.all(
    started.map(async (p) => {
      if (p.child.exitCode !== null || p.child.signalCode !== null) return;
      p.child.kill('SIGKILL');
      await once(p.child, 'exit');
    }),
  );
}
