import { DURATION_FORMAT, durationMillis } from '../core/duration.js';
import { z } from '../core/zod.js';

/** The values settings take, from a flag's or a variable's text: each parsed, or refused with a reason. */

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** A switch: `true`, `yes`, `on`, `1` and their opposites, in any case; empty is off. */
export const booleanText = z
  .string()
  .trim()
  .toLowerCase()
  .refine(
    (v) => ['1', '0', 'true', 'false', 'yes', 'no', 'on', 'off', ''].includes(v),
    'must be true or false',
  )
  .transform((v) => ['1', 'true', 'yes', 'on'].includes(v));

/** A duration flag: `10s`, `500ms`, `1m`, or seconds, read as the control commands read theirs. */
export const durationText = z.string().transform((text, ctx) => {
  const millis = durationMillis(text);
  if (millis === undefined) {
    ctx.addIssue({ code: 'custom', message: `must be a duration: ${DURATION_FORMAT}` });
    return z.NEVER;
  }
  return millis;
});

/** A TCP port; 0 picks a free one. */
export const port = z.coerce
  .number({ message: 'must be a number' })
  .int('must be a whole number')
  .min(0, 'must be between 0 and 65535')
  .max(65535, 'must be between 0 and 65535');

/**
 * Host names or IP addresses, lower-cased (`--tls-name`, `--webhook-allow-host`); `brackets` also
 * takes an IPv6 address in brackets, as a URL writes it.
 */
export function hostNames(options: { brackets: boolean }) {
  return z
    .array(
      z
        .string()
        .trim()
        .toLowerCase()
        .min(1, 'must not be empty')
        .max(253, 'must be at most 253 characters')
        .regex(
          options.brackets ? /^[a-z0-9.:[\]_-]+$/ : /^[a-z0-9.:_-]+$/,
          'must be a host name or an IP address',
        ),
    )
    .default([]);
}
