import { type Command, Option } from 'commander';
import { PLANS } from '../accounts/plans.js';
import { controlAction } from './control.js';
import { type AccountCreated, formatAccountCreated } from './format.js';

/** `accounts create`: an isolated account with a full key, for a pipeline or a tester of its own. */
export function addAccountCommands(program: Command): void {
  const accounts = program
    .command('accounts')
    .description('create [--plan] [--name]: an account of its own (data, clock, key) and its key');
  controlAction(
    accounts
      .command('create')
      .description('create an account and print its key (shown only once)')
      .addOption(
        new Option('--plan <plan>', 'its plan, which sets its rate limits').choices(PLANS).default('growth'),
      )
      .option('--name <name>', 'a name to recognise it by')
      .addOption(
        new Option('--admin-token <token>', "the server's --admin-token, when it has one").env(
          'SANDBOX_ADMIN_TOKEN',
        ),
      ),
    async ({ api, out }, { options }) => {
      const body = { plan: options.plan, ...(options.name === undefined ? {} : { name: options.name }) };
      // Open unless the server has an admin token: then that token, not a key, is the Bearer.
      const bearer = (options.adminToken as string | undefined) ?? null;
      out.answer(
        await api.post<AccountCreated>('/_sandbox/accounts', body, { bearer }),
        formatAccountCreated,
      );
    },
    { key: false },
  );
}
