import { Command, CommanderError } from 'commander';

/**
 * "Did you mean …?" where commander cannot say it itself. Commander suggests a command or an option
 * only where it parses words itself (`showSuggestionAfterError`, on by default); two kinds of
 * command take their words first: `serve`, the default command, whose flags the settings table
 * parses, and the default subcommand of a group (`clock` runs `clock show`), which takes a mistyped
 * subcommand for an argument. For those, the suggestion is commander's own, asked of a command
 * made for the purpose, so that every suggestion is found and worded the same way.
 */
export function didYouMean(word: string, candidates: readonly string[]): string {
  const probe = new Command().exitOverride().configureOutput({ writeErr: () => {}, outputError: () => {} });
  if (word.startsWith('-')) for (const flag of candidates) probe.option(flag);
  else for (const name of candidates) probe.command(name);
  try {
    probe.parse([word], { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) return /\n\(Did you mean .+\?\)$/.exec(error.message)?.[0] ?? '';
    throw error;
  }
  return '';
}

/** The names of a command's subcommands that its help shows. */
const visibleNames = (command: Command) =>
  command
    .createHelp()
    .visibleCommands(command)
    .map((sub) => sub.name());

const defaultSubcommands = new WeakSet<Command>();

/** Notes that `command` runs when its group is given no subcommand (what completion offers there too). */
export function markDefaultSubcommand(command: Command): Command {
  defaultSubcommands.add(command);
  return command;
}

export const isDefaultSubcommand = (command: Command): boolean => defaultSubcommands.has(command);

/**
 * Makes `command` the default subcommand of its group (`clock show`, `shipments list`) that refuses
 * a word it does not take as the mistyped subcommand it most likely is: `clock advnce 2h` says
 * "unknown command 'advnce' for 'clock' (Did you mean advance?)", not "too many arguments for 'show'".
 */
export function asDefaultSubcommand(command: Command): Command {
  return markDefaultSubcommand(command)
    .allowExcessArguments()
    .hook('preAction', () => {
      const expected = command.registeredArguments.length;
      const [word] = command.args.slice(expected);
      const group = command.parent;
      if (word === undefined || !group) return;
      group.error(
        `error: unknown command '${word}' for '${group.name()}'${didYouMean(word, visibleNames(group))}`,
        { exitCode: 2, code: 'commander.unknownCommand' },
      );
    });
}

/** The word where `serve` expected flags: a mistyped command, told as commander tells one. */
export function unknownCommand(program: Command, word: string): never {
  program.error(`error: unknown command '${word}'${didYouMean(word, visibleNames(program))}`, {
    exitCode: 2,
    code: 'commander.unknownCommand',
  });
}

/**
 * Refuses a serving flag that the settings table does not have, with commander's suggestion, before
 * the table's own parser refuses it without one (`--prot 0`: "Did you mean --port?").
 */
export function checkServingFlags(command: Command, args: readonly string[], names: readonly string[]) {
  const known = [...names.map((name) => `--${name}`), '--help'];
  for (const arg of args) {
    if (!arg.startsWith('--') || arg === '--') continue;
    const flag = arg.split('=')[0] as string;
    if (!known.includes(flag))
      command.error(`error: unknown option '${flag}'${didYouMean(flag, known)}`, {
        exitCode: 2,
        code: 'commander.unknownOption',
      });
  }
}
