import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../core/fixtures.js';

/** The package's version, from its package.json (beside `src/` and `dist/` alike). */
export function packageVersion(): string {
  const { version } = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as {
    version: string;
  };
  return version;
}
