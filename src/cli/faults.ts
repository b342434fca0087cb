import { type Command, InvalidArgumentError, Option } from 'commander';
import { controlAction, durationParser, parseLimit, segment } from './control.js';
import { type Fault, type FaultList, formatFault, formatFaults } from './format.js';
import { everyItem } from './pages.js';
import { asDefaultSubcommand } from './suggest.js';

const METHODS = ['GET', 'POST', 'PATCH', 'PUT', 'DELETE'];

/** `faults`: make the account's own API requests fail on purpose, as WireMock or Toxiproxy do. */
export function addFaultCommands(program: Command): void {
  const faults = program
    .command('faults')
    .description('list (the default); create <path> injects a fault; delete <fault-id> | --all removes');

  controlAction(
    asDefaultSubcommand(faults.command('list', { isDefault: true }))
      .description("list the account's fault rules, newest first, with how many requests each has left")
      .option('--limit <n>', 'only the newest n, up to 100 (default: every rule)', parseLimit),
    async ({ api, out }, { options }) =>
      out.answer(
        options.limit === undefined
          ? await everyItem<Fault>(api, '/_sandbox/faults')
          : await api.get<FaultList>(`/_sandbox/faults?limit=${options.limit}`),
        formatFaults,
      ),
  );

  controlAction(
    faults
      .command('create')
      .description('make matching API requests fail: an error answer, a delay, or a dropped connection')
      .argument('<path>', 'the API path: exact (/v1/shipments) or a prefix ending in * (/v1/labels/*)')
      .addOption(new Option('--method <method>', 'only this method (default: any)').choices(METHODS))
      .option(
        '--status <status>',
        'answer this status, 400 to 599, with the contract error body',
        parseStatus,
      )
      .option('--code <code>', "and this error code (default: the status's usual one)")
      .option(
        '--retry-after <duration>',
        'with 429 or 503, the Retry-After to send (such as 30s; default 1s)',
        durationParser({ min: 0, max: 86_400_000, wholeSeconds: true }),
      )
      .option(
        '--delay <duration>',
        'wait this long first, in real time (such as 500ms or 2s; at most 1m)',
        durationParser({ min: 0, max: 60_000 }),
      )
      .option('--drop', 'close the connection without an answer (not with --status)')
      .option('--times <n>', 'affect the next n matching requests only (default: until deleted)', parseLimit)
      .addHelpText(
        'after',
        '\nExamples:\n' +
          '  shipping-sandbox faults create /v1/shipments --method POST --status 503 --retry-after 5s --times 2\n' +
          '  shipping-sandbox faults create "/v1/labels/*" --delay 3s\n',
      ),
    async ({ api, out }, { args: [path], options }) => {
      const body = {
        path,
        method: options.method,
        status: options.status,
        code: options.code,
        retry_after: options.retryAfter === undefined ? undefined : (options.retryAfter as number) / 1000,
        delay_ms: options.delay,
        drop: options.drop,
        times: options.times,
      };
      out.answer(await api.post<Fault>('/_sandbox/faults', body), (fault) => `Created ${formatFault(fault)}`);
    },
  );

  controlAction(
    faults
      .command('delete')
      .description('remove a fault rule, or every one with --all')
      .argument('[fault-id]', 'the rule (flt_…; see `shipping-sandbox faults`)')
      .option('--all', 'remove every fault rule of the account'),
    async ({ api, out }, { args: [id], options, command }) => {
      if ((id === undefined) === (options.all !== true))
        command.error('error: give a fault id or --all (one of them)', { exitCode: 2 });
      if (id === undefined)
        out.answer(
          await api.delete<{ deleted: true }>('/_sandbox/faults'),
          () => 'Deleted every fault rule.\n',
        );
      else
        out.answer(
          await api.delete<{ id: string }>(`/_sandbox/faults/${segment(id)}`),
          (deleted) => `Deleted ${deleted.id}.\n`,
        );
    },
  );
}

function parseStatus(text: string): number {
  const status = Number(text);
  if (!Number.isInteger(status) || status < 400 || status > 599)
    throw new InvalidArgumentError('Not a status from 400 to 599.');
  return status;
}
