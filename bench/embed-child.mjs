/**
 * One merchant's test file, as far as the sandbox is concerned (bench/embed.ts runs it in a fresh
 * process): import the package, start a sandbox, get its first answer; then the cost of each further
 * account, and of a second sandbox in the same process. Prints its figures as one JSON line.
 */
import { request } from 'node:http';

const ACCOUNTS = Number(process.argv[2] ?? 100);

/** `GET /healthz` through node:http (fetch would add its own first-use cost to the figure). */
const health = (origin) =>
  new Promise((resolve, reject) => {
    request(`${origin}/healthz`, { agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    })
      .on('error', reject)
      .end();
  });

const started = performance.now();
const { startSandbox } = await import(new URL('../dist/index.js', import.meta.url).href);
const imported = performance.now();
const sandbox = await startSandbox({ logLevel: 'silent' });
const resolved = performance.now();
if ((await health(sandbox.origin)) !== 200) throw new Error('no healthy answer');
const answered = performance.now();

const accountsStarted = performance.now();
for (let i = 0; i < ACCOUNTS; i++) await sandbox.createAccount();
const accountsMs = performance.now() - accountsStarted;

const secondStarted = performance.now();
const second = await startSandbox({ logLevel: 'silent' });
await health(second.origin);
const secondMs = performance.now() - secondStarted;

const stopStarted = performance.now();
await Promise.all([sandbox.stop(), second.stop()]);
const stopMs = performance.now() - stopStarted;

process.stdout.write(
  `${JSON.stringify({
    processToImportMs: started,
    importMs: imported - started,
    startMs: resolved - imported,
    firstAnswerMs: answered - started,
    perAccountMs: accountsMs / ACCOUNTS,
    secondSandboxMs: secondMs,
    stopMs,
  })}\n`,
);
