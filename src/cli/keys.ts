import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import { SCOPES } from '../core/actor.js';
import { controlAction, segment } from './control.js';
import { type CreatedKey, formatKeyCreated, formatKeys, type KeyList, type RevokedKey } from './format.js';
import { asDefaultSubcommand } from './suggest.js';

/** `keys`: the account's API keys, as its settings area has them: list, create, revoke. */
export function addKeyCommands(program: Command): void {
  const keys = program
    .command('keys')
    .description('list (the default); create <name> [--scopes] makes a key; revoke <key-id> ends one');

  controlAction(
    asDefaultSubcommand(keys.command('list', { isDefault: true })).description(
      "list the account's keys: the last four characters of each, its scopes, when last used, when revoked",
    ),
    async ({ api, out }) => out.answer(await api.get<KeyList>('/_sandbox/keys'), formatKeys),
  );

  controlAction(
    keys
      .command('create')
      .description('make another key for the account and print its value (shown only once)')
      .argument('<name>', 'a name to recognise it by, such as CI')
      .option(
        '--scopes <scopes>',
        `what it may do, separated by commas: ${SCOPES.join(', ')} (default: all)`,
        parseScopes,
      ),
    async ({ api, out }, { args: [name], options }) => {
      const scopes = options.scopes as string[] | undefined;
      out.answer(
        await api.post<CreatedKey>('/_sandbox/keys', { name, ...(scopes ? { scopes } : {}) }),
        formatKeyCreated,
      );
    },
  );

  controlAction(
    keys
      .command('revoke')
      .description('revoke a key: its very next request is refused')
      .argument('<key-id>', 'the key (key_…; see `shipping-sandbox keys`)'),
    async ({ api, out }, { args: [id] }) =>
      out.answer(
        await api.delete<RevokedKey>(`/_sandbox/keys/${segment(id)}`),
        (revoked) => `Revoked ${revoked.id} at ${revoked.revoked_at}.\n`,
      ),
  );
}

function parseScopes(text: string): string[] {
  const scopes = text.split(',').map((scope) => scope.trim());
  const unknown = scopes.filter((scope) => !(SCOPES as readonly string[]).includes(scope));
  if (unknown.length > 0)
    throw new InvalidArgumentError(`Not a scope: ${unknown.join(', ')}. Scopes are ${SCOPES.join(', ')}.`);
  return scopes;
}
