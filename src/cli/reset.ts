import { createInterface } from 'node:readline/promises';
import type { Command } from 'commander';
import { controlAction } from './control.js';
import type { Account } from './format.js';

/**
 * `reset`: the account as if new, keeping its keys and settings (`POST /_sandbox/reset`). It cannot
 * be undone, so a person confirms it at the terminal, and a script says `--yes` (as `prisma migrate
 * reset` asks for `--force`): without a terminal to ask, the command refuses rather than guess.
 */
export function addResetCommand(program: Command): void {
  controlAction(
    program
      .command('reset')
      .description(
        "remove the account's shipments, labels, webhooks, events, faults and e-mails; keys and settings stay",
      )
      .option('-y, --yes', 'do not ask (a script must say it)'),
    async ({ api, out }, { options, command }) => {
      if (options.yes !== true) {
        if (!process.stdin.isTTY)
          command.error('error: reset cannot be undone: add --yes to reset without being asked', {
            exitCode: 2,
          });
        const account = (await api.get<Account>('/_sandbox/account')).data;
        if (!(await confirm(`Reset account ${account.id} (${account.name})? It cannot be undone. [y/N] `))) {
          process.stderr.write('Nothing was reset.\n');
          return;
        }
      }
      out.answer(
        await api.post<{ reset: true }>('/_sandbox/reset'),
        () =>
          "Reset: the account's data is gone and its clock is back at real time; its keys and settings stay.\n",
      );
    },
  );
}

async function confirm(question: string): Promise<boolean> {
  const terminal = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await terminal.question(question)).trim());
  } finally {
    terminal.close();
  }
}
