import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The project's root: the nearest folder above this module that holds `package.json`. Found rather
 * than written as `../..`, because this module runs from `src/` (tests), from `dist/` (bundled), and
 * from `/app/dist` in the image, at different depths.
 */
function findProjectRoot(start: string): string {
  for (let dir = start; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json above ${start}`);
  }
}

export const PROJECT_ROOT = findProjectRoot(dirname(fileURLToPath(import.meta.url)));

/** A file of the project's `fixtures/` folder. */
export const fixturePath = (name: string) => join(PROJECT_ROOT, 'fixtures', name);

/** Reads and parses a JSON fixture; a missing or broken file stops start-up with its path. */
export function readJsonFixture(name: string): { json: unknown; path: string } {
  const path = fixturePath(name);
  try {
    return { json: JSON.parse(readFileSync(path, 'utf8')), path };
  } catch (error) {
    throw new Error(`Cannot read ${path}: ${(error as Error).message}`);
  }
}
