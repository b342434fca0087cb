import { type Command, InvalidArgumentError, Option } from 'commander';
import { DEFAULT_ACCOUNT } from '../accounts/default-account.js';
import { DURATION_FORMAT, durationMillis, formatDuration } from '../core/duration.js';
import { Output, outputMode } from './output.js';
import { SandboxApi, SandboxError, UnreachableError } from './sandbox-api.js';

/** Where `npm start` listens by default (the contract's address). */
export const DEFAULT_URL = 'http://127.0.0.1:4010';

/** What a control command works with: the sandbox it calls and where its answers go. */
export interface Control {
  api: SandboxApi;
  out: Output;
}

interface ControlFlags {
  url: string;
  key?: string;
  json?: boolean;
  pretty?: boolean;
}

/**
 * The exit status of a command that gives a verdict (`report`, `probe`) when it has none to give: the
 * sandbox could not be reached or refused the request. Not 1, which such a command keeps for "the
 * integration fails", so a CI job can tell a failing client from a missing sandbox.
 */
export const NO_VERDICT = 2;

/**
 * Ends a command with an exit status of its own: a verdict's 1, whose reasons the command has printed,
 * or `NO_VERDICT` with the error that prevented one (printed as any command's error is).
 */
export class Exit extends Error {
  constructor(
    readonly status: number,
    readonly reason?: Error,
  ) {
    super(reason?.message ?? `exit ${status}`);
    this.name = 'Exit';
  }
}

/** What an action is given besides the sandbox: its arguments, its options, its command. */
export interface Invocation {
  args: string[];
  options: Record<string, unknown>;
  command: Command;
}

/**
 * Gives a command that talks to a running sandbox its flags (`--url`, `--key`, `--json`, `--pretty`)
 * and an action that receives the sandbox to call. Flags go on the commands that run, not on their
 * groups, so they may be written after the arguments, where people write them.
 */
export function controlAction(
  command: Command,
  action: (control: Control, invocation: Invocation) => Promise<void>,
  options: {
    key?: boolean;
    /** The exit status when the sandbox refuses or cannot be reached, if not 1 (see NO_VERDICT). */
    errorStatus?: number;
  } = {},
): Command {
  command.addOption(
    new Option('--url <url>', "the sandbox's address").env('SHIPPING_SANDBOX_URL').default(DEFAULT_URL),
  );
  if (options.key !== false)
    command.addOption(
      new Option('--key <key>', 'a test key of the account to act on')
        .env('SHIPPING_SANDBOX_KEY')
        .default(DEFAULT_ACCOUNT.api_key.value, "the default account's key"),
    );
  return command
    .addOption(
      new Option('--json', 'print the JSON the sandbox answered (the default when stdout is not a terminal)'),
    )
    .addOption(new Option('--pretty', 'print readable lines (the default on a terminal)').conflicts('json'))
    .action(async (...received: unknown[]) => {
      // Commander passes the arguments, then the options, then the command itself.
      const flags = received.at(-2) as ControlFlags;
      let api: SandboxApi;
      try {
        api = new SandboxApi({ url: flags.url, key: flags.key ?? '' });
      } catch (error) {
        command.error(`error: option '--url <url>': ${(error as Error).message}`, {
          exitCode: 2,
          code: 'shipping-sandbox.invalidUrl',
        });
      }
      const out = new Output(outputMode(flags));
      const args = received.slice(0, -2).flat() as string[];
      try {
        await action({ api, out }, { args, options: flags as unknown as Record<string, unknown>, command });
      } catch (error) {
        // A script reading stdout gets the sandbox's error body too, as `gh api` does.
        if (error instanceof SandboxError && out.mode === 'json')
          process.stdout.write(`${error.text.trim()}\n`);
        if (
          options.errorStatus !== undefined &&
          (error instanceof SandboxError || error instanceof UnreachableError)
        )
          throw new Exit(options.errorStatus, error);
        throw error;
      }
    });
}

/** `clock advance 90m`: checked here, so a typo is a usage error and not a request. */
export function parseDuration(text: string): string {
  if (durationMillis(text) === undefined)
    throw new InvalidArgumentError(`Not a duration: give ${DURATION_FORMAT}.`);
  return text;
}

/**
 * A duration flag whose milliseconds the command sends (`faults create --delay 2s`): read as every
 * duration is (a plain number is seconds), within `range`, and in whole seconds if asked.
 */
export function durationParser(range: { min: number; max: number; wholeSeconds?: boolean }) {
  return (text: string): number => {
    const millis = durationMillis(text);
    if (millis === undefined) throw new InvalidArgumentError(`Not a duration: give ${DURATION_FORMAT}.`);
    const whole = range.wholeSeconds ? Number.isInteger(millis / 1000) : Number.isInteger(millis);
    if (millis < range.min || millis > range.max || !whole)
      throw new InvalidArgumentError(
        `Not a duration from ${formatDuration(range.min)} to ${formatDuration(range.max)}` +
          `${range.wholeSeconds ? ' in whole seconds' : ''}.`,
      );
    return millis;
  };
}

export function parsePositiveNumber(text: string): number {
  const value = Number(text);
  if (text.trim() === '' || !Number.isFinite(value) || value <= 0)
    throw new InvalidArgumentError('Not a number greater than 0.');
  return value;
}

export function parseLimit(text: string): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) throw new InvalidArgumentError('Not a whole number from 1.');
  return value;
}

/**
 * A path segment from a user's argument (an id), so `../` or `?` cannot change the route. Required
 * arguments are always there; commander has refused the command otherwise.
 */
export const segment = (text: string | undefined) => encodeURIComponent(text ?? '');
