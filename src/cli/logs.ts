import { setTimeout as sleep } from 'node:timers/promises';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { type Control, controlAction, type Invocation } from './control.js';
import { readEvents } from './event-stream.js';
import { formatRequest, type JournalEntry } from './format.js';
import { UnreachableError } from './sandbox-api.js';

/** How long to wait before connecting again once the sandbox went away. */
const RECONNECT_MS = 1000;

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'];

/**
 * `logs tail`: the account's API requests as the sandbox records them, one line each, in the way of
 * `stripe logs tail`. It reads `GET /_sandbox/requests/stream` (server-sent events), so watching
 * neither polls the API nor counts against the account: not in its rate limits, its journal or its
 * integration report.
 */
export function addLogCommands(program: Command): void {
  const logs = program.command('logs').description("tail: the account's API requests as they happen");

  controlAction(
    logs
      .command('tail')
      .description(
        "print the account's API requests as the sandbox records them, one line each, until stopped (Ctrl-C)",
      )
      .addOption(
        new Option(
          '--status <statuses>',
          'only these statuses, separated by commas: 201, 4xx, 5xx, 0 (dropped)',
        ).argParser(parseStatuses),
      )
      .addOption(
        new Option('--method <methods>', 'only these methods, separated by commas: GET, POST, …').argParser(
          parseMethods,
        ),
      )
      .option(
        '--path <path>',
        'only this path: exact (/v1/shipments) or a prefix ending in * (/v1/labels/*); /v1 may be left out',
      )
      .addHelpText(
        'after',
        "\nEach line: when (on the account's clock), the method and path, the status with an error's\n" +
          'code and field, how long the answer took, and the request id (req_…). With --json (the\n' +
          'default in a pipe), one JSON object a line, as GET /_sandbox/requests lists them.\n\n' +
          'Examples:\n' +
          '  shipping-sandbox logs tail\n' +
          '  shipping-sandbox logs tail --status 4xx,5xx --path "/v1/labels*"\n' +
          "  shipping-sandbox logs tail --json | jq -r 'select(.code) | .code'\n",
      ),
    tail,
  );
}

/**
 * Follows the stream; reconnects, and says so, when the sandbox goes away after it was reached. A
 * sandbox that cannot be reached at first, or that refuses the key, is an error as for any command.
 */
async function tail({ api, out }: Control, { options }: Invocation): Promise<void> {
  const wanted = requestFilter(options as TailOptions);
  let connected = false;
  let lost = false;
  for (;;) {
    try {
      const response = await api.stream('/_sandbox/requests/stream');
      process.stderr.write(
        connected
          ? 'The sandbox answers again.\n'
          : `Tailing the account's requests at ${api.origin} (Ctrl-C to stop)\n`,
      );
      connected = true;
      lost = false;
      await readEvents(response, {
        onEvent: (event, data) => {
          if (event === 'request') {
            const entry = JSON.parse(data) as JournalEntry;
            if (wanted(entry)) out.item(entry, formatRequest);
          } else if (event === 'dropped') {
            const { count } = JSON.parse(data) as { count: number };
            process.stderr.write(`(${count} requests left out: they came faster than they were read)\n`);
          }
        },
      });
    } catch (error) {
      if (!(error instanceof UnreachableError) || !connected) throw error;
    }
    if (!lost) process.stderr.write(`Lost the sandbox at ${api.origin}; trying again every second.\n`);
    lost = true;
    await sleep(RECONNECT_MS);
  }
}

interface TailOptions {
  status?: StatusPattern[];
  method?: string[];
  path?: string;
}

/** `404`, or a class such as `4xx`. */
type StatusPattern = { exact: number } | { hundreds: number };

/** Whether an entry passes the filters given (every one of them). */
export function requestFilter(options: TailOptions): (entry: JournalEntry) => boolean {
  const path = options.path === undefined ? undefined : apiPath(options.path);
  return (entry) =>
    (options.status === undefined ||
      options.status.some((p) =>
        'exact' in p ? entry.status === p.exact : Math.floor(entry.status / 100) === p.hundreds,
      )) &&
    (options.method === undefined || options.method.includes(entry.method)) &&
    (path === undefined ||
      (path.endsWith('*') ? entry.path.startsWith(path.slice(0, -1)) : entry.path === path));
}

/** A path as fault rules take one: `/v1` may be left out. */
const apiPath = (path: string) => (path.startsWith('/v1/') || path === '/v1' ? path : `/v1${path}`);

function parseStatuses(text: string): StatusPattern[] {
  return text.split(',').map((part) => {
    const word = part.trim().toLowerCase();
    if (/^[1-5]xx$/.test(word)) return { hundreds: Number(word[0]) };
    if (/^([1-5]\d\d|0)$/.test(word)) return { exact: Number(word) };
    throw new InvalidArgumentError(
      `'${part}' is not a status: give 404, a class such as 4xx, or 0 (dropped).`,
    );
  });
}

function parseMethods(text: string): string[] {
  return text.split(',').map((part) => {
    const method = part.trim().toUpperCase();
    if (!METHODS.includes(method))
      throw new InvalidArgumentError(`'${part}' is not a method: give ${METHODS.join(', ')}.`);
    return method;
  });
}
