import fc from 'fast-check';
import { checkAnswer, excerpt, type Problem, type ProblemKind } from './checker.js';
import { ApiDocument, type JsonSchema, type Operation } from './document.js';
import { type FuzzAccount, prepareAccount } from './fixtures.js';
import { type Answer, bodyText, jsonRequest, NoAnswer, send } from './http.js';
import { KNOWN_FINDINGS, type KnownFinding, knownFinding } from './known-findings.js';
import { startReceiver } from './receiver.js';
import { type GeneratedRequest, requestArbitrary } from './requests.js';

export interface FuzzOptions {
  /** The sandbox, `http://127.0.0.1:4010`. */
  origin: string;
  seed: number;
  /** How many requests to send in all (nine in ten to documented operations). */
  requests: number;
  /** Only these operations: an exact key (`POST /v1/shipments`), or text that keys contain (`webhooks`). */
  only?: readonly string[];
  /** Accounts fuzzed at once (see groupByAccount). */
  concurrency?: number;
  knownFindings?: readonly KnownFinding[];
  /** Called before an operation's requests, with the account they go to (tests inject faults here). */
  onAccount?(account: FuzzAccount, operation: Operation): Promise<void>;
  /** Examples kept per operation and kind of problem; every problem is counted. */
  examplesPerProblem?: number;
}

export interface Finding {
  operation: string;
  kind: ProblemKind;
  detail: string;
  status?: number;
  request: { method: string; url: string; headers: Record<string, string>; body?: string; variant: string };
  /** Replays the operation's requests up to this one: same seed, same operation, index + 1 requests. */
  seed: number;
  index: number;
}

export interface OperationStats {
  operation: string;
  documented: boolean;
  sent: number;
  statuses: Record<string, number>;
  serverErrors: number;
  breaks: number;
  lost: number;
  known: number;
}

export interface FuzzReport {
  seed: number;
  sent: number;
  serverErrors: number;
  /** Answers that break the document: a status it does not give, a wrong media type, a body off its schema. */
  breaks: number;
  /** Requests that got no answer at all. */
  lost: number;
  /** Problems matching a known finding, not counted above. */
  known: number;
  operations: OperationStats[];
  /** How often each error code was answered, by `<status> <code>`. */
  errorCodes: Record<string, number>;
  findings: Finding[];
  durationMs: number;
}

/** A share of the pass for the methods the document's paths lack: they need fewer requests. */
const WRONG_METHOD_SHARE = 0.1;

/**
 * The fuzzing pass: reads `/openapi.json` from a running sandbox and, for every operation, sends
 * generated requests over a real socket to accounts it sets up, and checks every answer against the
 * document. A seed gives the same requests in the same order (the ids in them are the sandbox's).
 */
export async function runFuzz(options: FuzzOptions): Promise<FuzzReport> {
  const started = performance.now();
  const documentAnswer = await send(options.origin, jsonRequest('GET', '/openapi.json', null));
  if (documentAnswer.status !== 200) throw new Error(`GET /openapi.json answered ${documentAnswer.status}`);
  const document = new ApiDocument(JSON.parse(documentAnswer.text) as JsonSchema);

  const operations = selectOperations(document.operations(), options.only ?? []);
  if (operations.length === 0) throw new Error(`no operation matches ${options.only?.join(', ')}`);
  const counts = requestCounts(operations, options.requests);

  const receiver = await startReceiver();
  const report: FuzzReport = {
    seed: options.seed,
    sent: 0,
    serverErrors: 0,
    breaks: 0,
    lost: 0,
    known: 0,
    operations: [],
    errorCodes: {},
    findings: [],
    durationMs: 0,
  };
  try {
    // The longest group first, so that the others run beside it.
    const requestsOf = (group: Operation[]) => group.reduce((sum, o) => sum + (counts.get(o) ?? 0), 0);
    const queue = groupByAccount(operations).sort((a, b) => requestsOf(b) - requestsOf(a));
    const worker = async () => {
      for (let group = queue.shift(); group; group = queue.shift()) {
        const account = await prepareAccount(options.origin, receiver);
        // Each group's own other account: a reset or a deletion fuzzed with its key in one group must
        // not undo what another group made with it.
        const foreign = await prepareAccount(options.origin, receiver);
        for (const operation of group) {
          await options.onAccount?.(account, operation);
          const stats = await fuzzOperation({
            options,
            document,
            operation,
            account,
            foreignKey: foreign.key,
            receiver,
            count: counts.get(operation) ?? 0,
            report,
          });
          report.operations.push(stats);
        }
      }
    };
    await Promise.all(Array.from({ length: options.concurrency ?? 4 }, worker));
  } finally {
    await receiver.close();
  }
  report.operations.sort(
    (a, b) =>
      operations.findIndex((o) => o.key === a.operation) - operations.findIndex((o) => o.key === b.operation),
  );
  report.durationMs = performance.now() - started;
  return report;
}

/** An operation's exact key picks that operation alone; any other text, every operation whose key contains it. */
function selectOperations(operations: Operation[], only: readonly string[]): Operation[] {
  if (only.length === 0) return operations;
  const keys = new Set(operations.map((o) => o.key));
  return operations.filter((o) =>
    only.some((text) => (keys.has(text) ? o.key === text : o.key.includes(text))),
  );
}

/** Controls whose effect reaches every request of the account: the account's keys, settings, clock, faults. */
const ACCOUNT_WIDE = /^\/_sandbox\/(account|keys|reset|clock|faults)(\/|$)/;

/**
 * Which operations share an account, in the order they run in it. Each control that changes the
 * whole account gets one of its own (a reset, a clock ten years on, a revoked key would blur every
 * other operation's answers), and so does each deletion (a cancelled shipment or a deleted webhook
 * would leave the others little to read, and the deletion nothing to delete); the methods the paths
 * lack share one; the rest share one, reads before writes, as a merchant's integration would. Groups
 * run side by side; the operations of a group run one after the other, so that a seed sends the
 * same requests to the same state.
 */
function groupByAccount(operations: Operation[]): Operation[][] {
  const alone = (o: Operation) => o.method === 'DELETE' || (o.method !== 'GET' && ACCOUNT_WIDE.test(o.path));
  const order = ['GET', 'POST', 'PUT', 'PATCH'];
  const common = operations
    .filter((o) => o.documented && !alone(o))
    .sort((a, b) => order.indexOf(a.method) - order.indexOf(b.method));
  const own = operations.filter((o) => o.documented && alone(o)).map((o) => [o]);
  const wrong = operations.filter((o) => !o.documented);
  return [common, wrong, ...own].filter((group) => group.length > 0);
}

function requestCounts(operations: Operation[], total: number): Map<Operation, number> {
  const documented = operations.filter((o) => o.documented);
  const wrong = operations.filter((o) => !o.documented);
  const wrongShare = documented.length && wrong.length ? WRONG_METHOD_SHARE : wrong.length ? 1 : 0;
  const each = (share: number, n: number) => (n === 0 ? 0 : Math.max(1, Math.ceil((total * share) / n)));
  const perDocumented = each(1 - wrongShare, documented.length);
  const perWrong = each(wrongShare, wrong.length);
  return new Map(operations.map((o) => [o, o.documented ? perDocumented : perWrong]));
}

/** A seed per operation, from the pass's seed and the operation's key: adding a route moves no other's requests. */
export function operationSeed(seed: number, key: string): number {
  let hash = 0x811c9dc5 ^ seed;
  for (const char of key) hash = Math.imul(hash ^ (char.codePointAt(0) ?? 0), 0x01000193);
  return hash | 0;
}

/** The counter each kind of problem adds to; the pass fails on any but `known`. */
const COUNTER_OF: Record<ProblemKind | 'known', 'serverErrors' | 'breaks' | 'lost' | 'known'> = {
  server_error: 'serverErrors',
  undocumented_status: 'breaks',
  content_type: 'breaks',
  not_json: 'breaks',
  schema: 'breaks',
  cross_account: 'breaks',
  scope: 'breaks',
  no_answer: 'lost',
  known: 'known',
};

/**
 * What a key may do, beyond the document: another account's key reaches none of this account's
 * resources, and a key with `shipments:read` alone changes nothing (but may revoke itself).
 */
function checkKey(
  operation: Operation,
  account: FuzzAccount,
  request: GeneratedRequest,
  answer: Answer,
): Problem[] {
  // Keyless routes (a pre-signed label URL) belong to whoever holds the URL.
  if (!operation.authenticated || answer.status >= 300) return [];
  if (request.auth === 'foreign key' && request.realId)
    return [{ kind: 'cross_account', detail: `another account's key got ${answer.status}` }];
  const revokesItself =
    operation.path === '/_sandbox/keys/{id}' && request.pathValues.id === account.restrictedKeyId;
  if (request.auth === 'restricted key' && operation.method !== 'GET' && !revokesItself)
    return [{ kind: 'scope', detail: `a key with shipments:read alone got ${answer.status}` }];
  return [];
}

async function fuzzOperation(run: {
  options: FuzzOptions;
  document: ApiDocument;
  operation: Operation;
  account: FuzzAccount;
  foreignKey: string;
  receiver: { url: string; failingUrl: string };
  count: number;
  report: FuzzReport;
}): Promise<OperationStats> {
  const { options, document, operation, account, report } = run;
  const stats: OperationStats = {
    operation: operation.key,
    documented: operation.documented,
    sent: 0,
    statuses: {},
    serverErrors: 0,
    breaks: 0,
    lost: 0,
    known: 0,
  };
  const arbitrary = requestArbitrary({
    document,
    operation,
    account,
    foreignKey: run.foreignKey,
    receiver: run.receiver,
  });
  const requests = fc.sample(arbitrary, {
    seed: operationSeed(options.seed, operation.key),
    numRuns: run.count,
  });
  const examples = new Map<ProblemKind, number>();

  const exchange = async (request: GeneratedRequest): Promise<{ answer?: Answer; problems: Problem[] }> => {
    try {
      const answer = await send(options.origin, request);
      const problems = [
        ...checkAnswer(document, operation, answer),
        ...checkKey(operation, account, request, answer),
      ];
      return { answer, problems };
    } catch (error) {
      if (!(error instanceof NoAnswer)) throw error;
      return { problems: [{ kind: 'no_answer', detail: error.message }] };
    }
  };

  for (const [index, request] of requests.entries()) {
    // A burst sends the same request several times at once, as a retrying client or a race would.
    const outcomes = await Promise.all(Array.from({ length: request.copies }, () => exchange(request)));
    for (const { answer, problems } of outcomes) {
      report.sent++;
      stats.sent++;
      const status = answer ? String(answer.status) : 'none';
      stats.statuses[status] = (stats.statuses[status] ?? 0) + 1;
      if (answer && answer.status >= 400) countErrorCode(report, answer);
      if (answer) await cleanUp(options.origin, operation, request, answer);

      for (const problem of problems) {
        const knownFindings = options.knownFindings ?? KNOWN_FINDINGS;
        const known = knownFinding(knownFindings, operation.key, problem.kind, request, answer);
        tally(known ? 'known' : problem.kind, report, stats);
        const shown = examples.get(problem.kind) ?? 0;
        if (known || shown >= (options.examplesPerProblem ?? 3)) continue;
        examples.set(problem.kind, shown + 1);
        report.findings.push(findingOf(options, operation, request, problem, answer, index));
      }
    }
  }
  return stats;
}

/** Counts a problem where it belongs, in the pass and in its operation. */
function tally(kind: ProblemKind | 'known', report: FuzzReport, stats: OperationStats) {
  const counter = COUNTER_OF[kind];
  report[counter]++;
  stats[counter]++;
}

/** Tallies the error codes answered, by status: docs/reference.md's list of codes can be checked against it. */
function countErrorCode(report: FuzzReport, answer: Answer) {
  let code = '(no code)';
  try {
    code = String((JSON.parse(answer.text) as { error?: { code?: unknown } }).error?.code ?? code);
  } catch {}
  const key = `${answer.status} ${code}`;
  report.errorCodes[key] = (report.errorCodes[key] ?? 0) + 1;
}

/**
 * Undoes what would spill over onto other requests: an injected fault created by a fuzzed
 * `POST /_sandbox/faults` is removed at once, with the key that made it (the foreign account's key
 * makes rules too), so no later answer is a fault the fuzzer made.
 */
async function cleanUp(origin: string, operation: Operation, request: GeneratedRequest, answer: Answer) {
  if (operation.key !== 'POST /_sandbox/faults' || answer.status !== 201) return;
  const { id } = JSON.parse(answer.text) as { id: string };
  const removal = jsonRequest('DELETE', `/_sandbox/faults/${encodeURIComponent(id)}`, null);
  removal.headers.authorization = request.headers.authorization ?? '';
  const removed = await send(origin, removal);
  if (removed.status !== 200) throw new Error(`could not remove the injected fault ${id}: ${removed.status}`);
}

function findingOf(
  options: FuzzOptions,
  operation: Operation,
  request: GeneratedRequest,
  problem: Problem,
  answer: Answer | undefined,
  index: number,
): Finding {
  const body = bodyText(request.body);
  return {
    operation: operation.key,
    kind: problem.kind,
    detail: problem.detail,
    ...(answer ? { status: answer.status } : {}),
    request: {
      method: request.method,
      url: `${options.origin}${request.target}`,
      headers: request.headers,
      ...(body === undefined ? {} : { body: excerpt(body, 2_000) }),
      variant: request.variant,
    },
    seed: options.seed,
    index,
  };
}
