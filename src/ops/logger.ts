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
    redact: REDACTED,
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
  const logger = pino(
    { ...jsonLogOptions(level), ...options },
    pino.destination({ sync: false, minLength: 4096 }),
  );
  setInterval(() => logger.flush(), 1000).unref();
  return logger;
}

/**
 * What every JSON line is written with: its level as a name (`"level":"warn"`), which log pipelines
 * (Loki, Cloud Logging, Elastic) read as a severity, where pino's default is a number only pino knows.
 */
export function jsonLogOptions(level: Config['logLevel']): LoggerOptions {
  return { level, formatters: { level: (label) => ({ level: label }) } };
}

/** The start banner's writer, made at its first line. */
let banner: Logger | null = null;

/**
 * One line of the start banner (main.ts): where the process listens, for whoever started it. In a
 * terminal, plain text for a person; otherwise a JSON line like every other (level `info`, the
 * message, and `fields`), written at once, whatever LOG_LEVEL: it is how a supervisor, a test or an
 * operator reading the log learns the address and the build, not an event to filter out.
 */
export function announce(message: string, fields: Record<string, unknown> = {}): void {
  if (process.stdout.isTTY) {
    console.log(message);
    return;
  }
  banner ??= pino(jsonLogOptions('info'), pino.destination({ dest: 1, sync: true }));
  banner.info(fields, message);
}

const REDACTED = { paths: ['authorization', '*.authorization', 'token', '*.token'], censor: '[redacted]' };

const requestLoggers = new WeakMap<Logger, Logger>();

/**
 * Where each request's line goes: the logger's child with redaction of top-level names only. The
 * line's fields are the gateway's own (ids, a bounded operation label, counts, codes), none nested;
 * the wildcard paths cost about 3 µs a line (a fifth of the gateway's logging), for nothing here.
 */
export function requestLogger(logger: Logger): Logger {
  let child = requestLoggers.get(logger);
  if (!child) {
    child = logger.child({}, { redact: { paths: ['authorization', 'token'], censor: REDACTED.censor } });
    requestLoggers.set(logger, child);
  }
  return child;
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
