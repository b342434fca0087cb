import { Argument, type Command, type Option } from 'commander';
import { isDefaultSubcommand } from './suggest.js';

/**
 * `completion bash|zsh|fish`: a script that makes the shell complete the command's words with TAB.
 *
 * Hand-written, from commander's own command tree, because the libraries do not fit: `@bomb.sh/tab`
 * (the kept one, with a commander adapter) writes a bash script that needs bash-completion's
 * `_get_comp_words_by_ref`, absent from macOS's bash and slim images (TAB then does nothing there),
 * and that runs what was typed through `eval`; `omelette` and `tabtab` are templates that predate
 * commander's tree. Here each script is a few lines that hand the words typed to the hidden
 * `__complete` command, which answers from the very tree that parses them (so a new command or flag
 * completes without a new script), one candidate a line, a tab before its description. No candidate
 * lets the shell complete file names (`--junit <file>`, `--data-dir <path>`).
 */
export function addCompletionCommands(program: Command): void {
  const name = program.name();
  program
    .command('completion')
    .description('print the script that completes commands and flags in a shell (bash, zsh or fish)')
    .addArgument(new Argument('<shell>', 'the shell').choices(['bash', 'zsh', 'fish']))
    .addHelpText(
      'after',
      `\nbash:  source <(${name} completion bash)      (in ~/.bashrc)\n` +
        `zsh:   source <(${name} completion zsh)       (in ~/.zshrc, after compinit)\n` +
        `fish:  ${name} completion fish > ~/.config/fish/completions/${name}.fish\n`,
    )
    .action((shell: keyof typeof SCRIPTS) => {
      process.stdout.write(SCRIPTS[shell](name));
    });

  program
    .command('__complete', { hidden: true })
    .description('the candidates for the last of the words given (what the completion scripts call)')
    .argument('[words...]')
    .helpOption(false)
    .action((words: string[]) => {
      for (const candidate of candidatesFor(program, words))
        process.stdout.write(`${candidate.value}\t${candidate.description}\n`);
    });
}

/** A shell function name from the command's name: `shipping-sandbox` gives `_shipping_sandbox`. */
const functionName = (name: string) => `_${name.replace(/[^A-Za-z0-9_]/g, '_')}`;

const SCRIPTS = {
  bash: (name: string) => `# bash completion for ${name}: source <(${name} completion bash)
${functionName(name)}() {
  local IFS=$'\\n'
  local candidates
  candidates=($(${name} __complete -- "\${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
  COMPREPLY=("\${candidates[@]%%$'\\t'*}")
}
complete -o default -F ${functionName(name)} ${name}
`,
  zsh: (name: string) => `#compdef ${name}
# zsh completion for ${name}: source <(${name} completion zsh), after compinit
${functionName(name)}() {
  local -a lines values shown
  local line
  lines=("\${(@f)$(${name} __complete -- "\${(@)words[2,CURRENT]}" 2>/dev/null)}")
  for line in "\${lines[@]}"; do
    [[ -z $line ]] && continue
    values+=("\${line%%$'\\t'*}")
    shown+=("\${line%%$'\\t'*}  \${line#*$'\\t'}")
  done
  if (( \${#values} )); then
    compadd -l -d shown -a values
  else
    _files
  fi
}
compdef ${functionName(name)} ${name}
`,
  fish: (
    name: string,
  ) => `# fish completion for ${name}: ${name} completion fish > ~/.config/fish/completions/${name}.fish
function __${functionName(name)}_complete
    set -l words (commandline -opc)
    set -e words[1]
    set -l current (commandline -ct)
    set -l candidates (${name} __complete -- $words "$current" 2>/dev/null)
    if test (count $candidates) -eq 0
        __fish_complete_path "$current"
    else
        printf '%s\\n' $candidates
    end
end
complete -c ${name} -f -a '(__${functionName(name)}_complete)'
`,
};

export interface Candidate {
  value: string;
  description: string;
}

/**
 * What may come as the last of `words` (the words after the command's name, the last one being
 * typed), by commander's tree: the values of the option before it, the options of the command
 * reached, or its subcommands and the choices of its next argument. Empty when any word would do.
 */
export function candidatesFor(program: Command, words: readonly string[]): Candidate[] {
  const current = words.at(-1) ?? '';
  let command = program;
  let positionals = 0;
  let awaited: Option | undefined;
  for (const word of words.slice(0, -1)) {
    if (awaited) {
      awaited = undefined;
    } else if (word.startsWith('-') && word !== '-') {
      const option = optionsOf(command).find((o) => o.long === word || o.short === word);
      if (option && (option.required || option.optional) && !word.includes('=')) awaited = option;
    } else {
      const sub = positionals === 0 ? subcommandsOf(command).find((c) => c.name() === word) : undefined;
      if (sub) command = sub;
      else positionals += 1;
    }
  }
  const all: Candidate[] = [];
  if (awaited) all.push(...choices(awaited.argChoices));
  else if (current.startsWith('-'))
    all.push(...optionsOf(command).map((o) => ({ value: o.long ?? o.flags, description: o.description })));
  else {
    if (positionals === 0)
      all.push(
        ...subcommandsOf(command).map((c) => ({
          value: c.name(),
          description: c.summary() || c.description(),
        })),
      );
    const next = argumentsOf(command)[positionals];
    all.push(...choices(next?.argChoices));
  }
  const seen = new Set<string>();
  return all
    .filter((candidate) => candidate.value.startsWith(current) && !seen.has(candidate.value))
    .filter((candidate) => seen.add(candidate.value))
    .map((candidate) => ({ ...candidate, description: oneLine(candidate.description) }));
}

/** A command's subcommands as its help lists them (hidden ones and `help` aside). */
const subcommandsOf = (command: Command) =>
  command
    .createHelp()
    .visibleCommands(command)
    .filter((sub) => sub.name() !== 'help');

/** A command's options as its help lists them, and those of its default subcommand (`clock` is `clock show`). */
function optionsOf(command: Command): Option[] {
  const own = command.createHelp().visibleOptions(command);
  const fallback = command.commands.find(isDefaultSubcommand);
  return fallback ? [...own, ...optionsOf(fallback)] : own;
}

/** A command's arguments, or its default subcommand's when it has none of its own. */
function argumentsOf(command: Command): readonly Argument[] {
  const fallback = command.commands.find(isDefaultSubcommand);
  return command.registeredArguments.length === 0 && fallback
    ? argumentsOf(fallback)
    : command.registeredArguments;
}

const choices = (values: readonly string[] | undefined): Candidate[] =>
  (values ?? []).map((value) => ({ value, description: '' }));

/** A description on one line, short enough for a menu. */
function oneLine(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 70 ? `${line.slice(0, 69)}…` : line;
}
