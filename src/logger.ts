import { createRequire } from 'node:module';
import { type Logger, pino } from 'pino';
import type PinoPretty from 'pino-pretty';
import type { Config } from './config/index.js';

export type LogFormat = NonNullable<Config['logFormat']>;

/**
 * The server's log on stdout: at `info`, one line a request, a scheduled step and a webhook delivery
 * attempt. Readable lines on a terminal, JSON lines otherwise (a file, a pipe, a CI log a machine
 * reads); `--log-format` decides when the guess is wrong. Every line names its `replica`
 * (`--replica-id`), so the lines of several replicas over one database can be told apart once
 * collected; a terminal's readable lines leave it out, as they leave out the process id.
 */
export function createLogger(
  level: Config['logLevel'],
  format: LogFormat = process.stdout.isTTY ? 'pretty' : 'json',
  replica?: Config['replicaId'],
): Logger {
  const options = {
    level,
    base: replica === undefined ? undefined : { replica },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  if (format === 'json' || level === 'silent') return pino(options);
  // Loaded only for a terminal: a sandbox logging JSON (in CI, in a container) never pays for it.
  const pretty = createRequire(import.meta.url)('pino-pretty') as typeof PinoPretty;
  return pino(options, pretty(PRETTY_OPTIONS));
}

const PRETTY_OPTIONS: PinoPretty.PrettyOptions = {
  // Synchronous: a line written before a crash or an exit is a line on the screen.
  sync: true,
  translateTime: 'SYS:HH:MM:ss.l',
  // Every field is in the message (formatLine below): no object under the line.
  hideObject: true,
  // Only `err` is an error; a delivery's `error` is a word (`timeout`), part of its line.
  errorLikeObjectKeys: ['err'],
  messageFormat: (log, messageKey) => formatLine(log, messageKey),
};

type Line = Record<string, unknown>;
const FIELDS_SHOWN_ELSEWHERE = new Set(['level', 'time', 'pid', 'hostname', 'replica', 'err']);

/** One log line as a person reads it; exported for the tests. */
export function formatLine(log: Line, messageKey = 'msg'): string {
  const message = String(log[messageKey] ?? '');
  const account = log.account === undefined ? '' : `  ${log.account}`;
  switch (message) {
    case 'request': {
      const error =
        log.code === undefined ? '' : ` ${log.code}${log.field === undefined ? '' : ` (${log.field})`}`;
      return `${log.method} ${log.path} ${log.status}${error} ${log.duration_ms} ms${account}`;
    }
    case 'step': {
      const details = [log.status, log.tracking_number].filter((part) => part !== undefined).join(' ');
      return `step ${log.kind} ${log.subject}${details ? ` ${details}` : ''}${account}`;
    }
    case 'delivery': {
      const answer = log.response_status ?? log.error ?? '';
      return `delivery ${log.event} ${log.event_id} -> ${log.webhook} try ${log.attempt} ${log.outcome} ${answer} ${log.duration_ms} ms${account}`;
    }
    default: {
      // Anything else: the message, then its fields as key=value on the same line.
      const fields = Object.entries(log)
        .filter(([key]) => key !== messageKey && !FIELDS_SHOWN_ELSEWHERE.has(key))
        .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`);
      return [message, ...fields].join(' ');
    }
  }
}
