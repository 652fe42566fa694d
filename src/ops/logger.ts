import { hostname } from 'node:os';
import { type Logger, type LoggerOptions, pino } from 'pino';
import type { Config } from '../config.js';

/**
 * The gateway's logger: one JSON line per GraphQL request (pretty in a terminal), secrets redacted.
 * Off a terminal, writes are asynchronous and buffered: a request never waits on stdout, and lines
 * leave in 4 KB chunks (one write per ~15 lines instead of one each), flushed every second and on exit.
 * A cluster worker's lines name it (pino's default base is pid and hostname).
 */
export function createLogger(level: Config['logLevel'], worker: number | null = null): Logger {
  const options: LoggerOptions = {
    level,
    ...(worker !== null ? { base: { pid: process.pid, hostname: hostname(), worker } } : {}),
    redact: { paths: ['authorization', '*.authorization', 'token', '*.token'], censor: '[redacted]' },
  };
  if (process.stdout.isTTY) {
    return pino({
      ...options,
      transport: {
        target: 'pino-pretty',
        options: { translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' },
      },
    });
  }
  const logger = pino(options, pino.destination({ sync: false, minLength: 4096 }));
  setInterval(() => logger.flush(), 1000).unref();
  return logger;
}

/** An error for a log line: its name, code and stack frames, never its message. */
export function errorSummary(error: Error) {
  return {
    name: error.name,
    code: (error as { extensions?: { code?: unknown } }).extensions?.code,
    frames: error.stack?.split('\n').slice(1, 6).join('\n'),
  };
}

/**
 * Yoga's own log calls, through the gateway's logger with content stripped: an error becomes its
 * name, code and stack frames, never its message, because messages can quote what a caller sent
 * (a variable's value, a search text).
 */
export function yogaLogger(logger: Logger) {
  const summarize = (args: unknown[]) =>
    args.map((arg) =>
      arg instanceof Error ? errorSummary(arg) : typeof arg === 'string' ? arg.slice(0, 80) : typeof arg,
    );
  const child = logger.child({ component: 'yoga' });
  return {
    debug: () => {},
    info: () => {},
    warn: (...args: unknown[]) => child.warn({ details: summarize(args) }, 'yoga warning'),
    error: (...args: unknown[]) => child.error({ details: summarize(args) }, 'yoga error'),
  };
}
