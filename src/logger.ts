import { type Logger, pino } from 'pino';
import type { Config } from './config.js';

/** JSON lines on stdout; `--log-level debug` adds one line per request. */
export function createLogger(level: Config['logLevel']): Logger {
  return pino({ level, base: undefined, timestamp: pino.stdTimeFunctions.isoTime });
}
