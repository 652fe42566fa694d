import { execFile, spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';

/**
 * The container engine for the deploy tests: Debian's podman, with the flags these machines need
 * (runc for cgroups v1, limits under the hard file limit of 20,000), and the image `.ci/image.sh`
 * builds. CI's machine has no registry to pull from, so the image is built on a stand-in base.
 */

export const IMAGE = 'localhost/chain-gateway:ci';
export const PODMAN = ['--runtime', 'runc'];
export const ULIMITS = ['--ulimit', 'nofile=16384:16384', '--ulimit', 'nproc=8192:8192'];

export interface Finished {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end, never throwing on its exit code: tests assert on it. */
export function run(command: string, args: string[]): Promise<Finished> {
  return new Promise((resolve) => {
    execFile(command, args, { maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

export const podman = (args: string[]) => run('podman', [...PODMAN, ...args]);

/**
 * Builds (or finds up to date: every layer is cached) the image through `.ci/image.sh`, and
 * returns what the script printed on stdout. A failed build throws with its whole output.
 */
export async function buildImage(): Promise<string> {
  const built = await run('bash', ['.ci/image.sh']);
  if (built.code !== 0)
    throw new Error(`.ci/image.sh failed (exit ${built.code}):\n${built.stdout}${built.stderr}`);
  return built.stdout;
}

export interface Container {
  /** Everything the container printed so far (stdout and stderr). */
  output(): string;
  /** Resolves with the first match of `pattern` in the output, as soon as it is printed. */
  printed(pattern: RegExp): Promise<RegExpExecArray>;
  /** The exit code of `podman run`, which is the container's. */
  exited: Promise<number>;
}

/** `podman run` in the foreground (attached, removed on exit), its output watched. */
export function runContainer(args: string[]): Container {
  const child = spawn('podman', [...PODMAN, 'run', '--rm', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const events = new EventEmitter();
  const append = (chunk: Buffer) => {
    output += chunk.toString();
    events.emit('printed');
  };
  child.stdout.on('data', append);
  child.stderr.on('data', append);
  let gone = false;
  const exited = new Promise<number>((resolve) =>
    child.once('close', (code) => {
      gone = true;
      resolve(code ?? -1);
    }),
  );
  const printed = (pattern: RegExp) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      const check = () => {
        const found = pattern.exec(output);
        if (!found) return;
        stop();
        resolve(found);
      };
      const missed = () => {
        stop();
        reject(new Error(`the container exited before printing ${pattern}:\n${output}`));
      };
      const stop = () => {
        events.off('printed', check);
        child.off('close', missed);
      };
      events.on('printed', check);
      child.once('close', missed);
      check();
      if (gone) missed();
    });
  return { output: () => output, printed, exited };
}
