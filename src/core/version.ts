import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECT_ROOT } from './fixtures.js';

/** Set by the build (scripts/build.mjs) from package.json: a bundle does not read it again at start. */
declare const BUILT_SANDBOX_VERSION: string | undefined;

/** The package's version (`shipping-sandbox --version`); read from package.json when run from `src/`. */
export const SANDBOX_VERSION: string =
  typeof BUILT_SANDBOX_VERSION === 'string'
    ? BUILT_SANDBOX_VERSION
    : (JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
