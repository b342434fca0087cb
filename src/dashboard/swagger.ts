import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { PROJECT_ROOT } from '../core/fixtures.js';
import { type StaticFile, staticFile } from './bundle.js';

/**
 * The files of Swagger UI's standalone build that `/docs` loads, served by the sandbox itself so the
 * reference renders without internet access. Only these names are served: nothing else is reachable.
 */
export const SWAGGER_FILES = ['swagger-ui-bundle.js', 'swagger-ui.css'] as const;

/**
 * Where `scripts/build.mjs` copies them, with Swagger UI's licence. The package ships the copy rather
 * than depending on `swagger-ui-dist`, which would install `@scarf/scarf` and its install-time
 * analytics in every merchant's project.
 */
export const BUILT_SWAGGER_UI = join(PROJECT_ROOT, 'dist', 'swagger-ui');

/**
 * Swagger UI's files by name. Run from the TypeScript sources (tests, `npm run dev`) they are read
 * from `swagger-ui-dist`, a development dependency; run from the build, from the build's copy.
 */
export function swaggerFiles({
  fromSources = import.meta.url.endsWith('.ts'),
  builtDir = BUILT_SWAGGER_UI,
}: {
  fromSources?: boolean;
  builtDir?: string;
} = {}): (name: string) => Promise<StaticFile | undefined> {
  const directory = () =>
    fromSources ? dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json')) : builtDir;
  const cache = new Map<string, Promise<StaticFile>>();
  return (name) => {
    if (!(SWAGGER_FILES as readonly string[]).includes(name)) return Promise.resolve(undefined);
    let file = cache.get(name);
    if (!file) {
      file = readFile(join(directory(), name)).then((bytes) => staticFile(name, bytes));
      // A failed read is not remembered: the next request tries again.
      file.catch(() => cache.delete(name));
      cache.set(name, file);
    }
    return file;
  };
}
