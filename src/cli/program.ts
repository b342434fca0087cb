import { Command, CommanderError, Help, Option } from 'commander';
import { addAccountCommands } from './accounts.js';
import { addClockCommands } from './clock.js';
import { addCompletionCommands } from './completion.js';
import { addConformanceCommand, type RunConformance } from './conformance.js';
import { Exit } from './control.js';
import { addEventCommands } from './events.js';
import { addFaultCommands } from './faults.js';
import { addKeyCommands } from './keys.js';
import { addListenCommand } from './listen.js';
import { addLogCommands } from './logs.js';
import { addReportCommands } from './report.js';
import { addResetCommand } from './reset.js';
import { SandboxError, UnreachableError } from './sandbox-api.js';
import { addShipmentCommands } from './shipments.js';
import { checkServingFlags, markDefaultSubcommand, unknownCommand } from './suggest.js';
import { addWebhookCommands } from './webhooks.js';

/** A serving flag as the settings table (src/config/settings.ts) describes it; only its help is shown here. */
export interface ServingFlag {
  flag: string;
  env: string;
  kind: 'string' | 'boolean' | 'list';
  placeholder?: string;
  defaultText: string;
  description: string;
  /** The values it takes, when they are a list: the shell's completion offers them. */
  choices?: readonly string[];
}

export interface CommandLineParts {
  version: string;
  /** The settings table's flags, for `serve --help`. */
  servingFlags: ServingFlag[];
  /**
   * Starts serving with the serving flags as given (parsed and checked by the settings table, which
   * also reads their environment variables). Resolves once serving, or once it failed and said why.
   */
  serve(args: string[]): Promise<void>;
  /** Runs the conformance script beside a sandbox of its own, started in this process. */
  conformance: RunConformance;
}

/** The exit status of a usage error (a wrong flag, a missing argument); an answer's error is 1. */
export const USAGE_ERROR = 2;

/**
 * The command line: `serve` (the default: `shipping-sandbox --port 0` serves), and the commands that
 * control a running sandbox. Resolves with the exit status (0 also while serving goes on).
 */
export async function runCommandLine(argv: string[], parts: CommandLineParts): Promise<number> {
  const program = createProgram(parts);
  try {
    await program.parseAsync(argv, { from: 'user' });
    return 0;
  } catch (error) {
    // Commander has said what was wrong (or printed the help or the version) already.
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : USAGE_ERROR;
    if (error instanceof Exit) {
      if (error.reason) sayError(error.reason);
      return error.status;
    }
    if (error instanceof SandboxError || error instanceof UnreachableError) {
      sayError(error);
      return 1;
    }
    throw error;
  }
}

/** An error as the command line says it: its message, and for a refusal the status and code. */
function sayError(error: Error): void {
  const summary = error instanceof SandboxError ? ` (${error.summary})` : '';
  process.stderr.write(`error: ${error.message}${summary}\n`);
}

export function createProgram(parts: CommandLineParts): Command {
  const program = new Command('shipping-sandbox')
    .description('A high-fidelity sandbox of the shipping API: serve one, or control a running one.')
    .usage('[serve] [flags]  |  shipping-sandbox <command> [options]')
    .version(parts.version, '-v, --version', 'print the version')
    .helpOption('-h, --help', 'print this help')
    // Set before the commands are made: `.command()` copies them to each.
    .exitOverride()
    .showHelpAfterError('(add --help for usage)');

  program.commandsGroup('Serve:');
  addServeCommand(program, parts);
  program.commandsGroup('Clock:');
  addClockCommands(program);
  program.commandsGroup('Shipments and tracking:');
  addShipmentCommands(program);
  program.commandsGroup('Events and webhooks:');
  addEventCommands(program);
  addWebhookCommands(program);
  addListenCommand(program);
  program.commandsGroup('Requests and faults:');
  addLogCommands(program);
  addFaultCommands(program);
  program.commandsGroup('Integration report:');
  addReportCommands(program);
  program.commandsGroup('Accounts:');
  addAccountCommands(program);
  addKeyCommands(program);
  addResetCommand(program);
  program.commandsGroup('Conformance:');
  addConformanceCommand(program, parts.conformance, parts.version);
  program.commandsGroup('Shell:');
  addCompletionCommands(program);
  program.addHelpText('after', CONTROL_HELP);
  return program;
}

const CONTROL_HELP = `
With no command, serves: \`shipping-sandbox serve --help\` lists every flag.

The other commands control a running sandbox. Its address and the key of the account to act on come
from --url and --key, or SHIPPING_SANDBOX_URL and SHIPPING_SANDBOX_KEY (default: the sandbox on
127.0.0.1:4010 and its default account). On a terminal they print readable lines; in a pipe, the
JSON the sandbox answered (--json and --pretty choose). An error exits with 1 (the sandbox refused:
its message is printed) or 2 (the command line is wrong). \`report\` and \`probe\` give a verdict
instead: 0 passes, 1 fails, 2 no verdict (no sandbox, or it refused). \`conformance\` calls another
deployment (--target, --key) beside a sandbox of its own: 0 same, 1 different, 2 could not run.

Examples:
  shipping-sandbox --port 0 --https-port 0 --memory
                                                serve in memory on free ports
  shipping-sandbox clock advance 2h             move the account's clock, running what falls due
  shipping-sandbox shipments                    the newest shipments and their tracking numbers
  shipping-sandbox shipments advance shp_… delivered
  shipping-sandbox trigger tracking.delivered   send a sample event to the webhooks
  shipping-sandbox listen --forward-to localhost:3000/webhooks
                                                receive the account's events here, signed
  shipping-sandbox webhooks create https://127.0.0.1:8787/hooks --events tracking.delivered
  shipping-sandbox logs tail --status 4xx,5xx   print the account's failing requests as they happen
  shipping-sandbox accounts create --plan starter
  shipping-sandbox report --junit report.xml    judge the client; exits with 1 when a check fails
  shipping-sandbox conformance --target https://api.example.com/v1 --key svc_test_…
                                                does that deployment answer as the sandbox does?
`;

/**
 * `serve`, the default command. Its flags are the settings table's: commander shows them in the
 * help, and hands them over as they were typed to the table's own parser, which also reads their
 * environment variables and says which value is wrong and why.
 */
function addServeCommand(program: Command, parts: CommandLineParts): void {
  const serve = markDefaultSubcommand(program.command('serve', { isDefault: true }))
    .description('serve the sandbox (the default command): shipping-sandbox [serve] [flags]')
    .usage('[flags]')
    .allowUnknownOption()
    .allowExcessArguments()
    .configureHelp({
      // The table's flags, then what commander would show (its own --help).
      visibleOptions: (command) => [
        ...parts.servingFlags.map(helpOption),
        ...new Help().visibleOptions(command),
      ],
    })
    .action(async (_options, command: Command) => {
      const [first] = command.args;
      // A word where a flag should be: most likely a mistyped command, not a serving flag.
      if (first !== undefined && !first.startsWith('-')) unknownCommand(program, first);
      checkServingFlags(
        command,
        command.args,
        parts.servingFlags.map((flag) => flag.flag),
      );
      await parts.serve(command.args);
    });
  serve.addHelpText(
    'after',
    '\nEach flag is also read from its environment variable; a flag wins over its variable.\n',
  );
}

/** A serving flag as commander shows it, with its variable and its default. */
function helpOption(flag: ServingFlag): Option {
  const option = new Option(
    `--${flag.flag}${flag.placeholder ? ` <${flag.placeholder}>` : ''}`,
    flag.description,
  ).env(flag.env);
  // Only shown and completed, never parsed here: the settings table checks the value.
  if (flag.choices) option.choices(flag.choices);
  return flag.kind === 'boolean' ? option : option.default(flag.defaultText, flag.defaultText);
}
