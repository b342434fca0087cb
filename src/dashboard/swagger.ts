import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { type StaticFile, staticFile } from './bundle.js';

/**
 * The files of Swagger UI's standalone build that `/docs` loads, served from the installed
 * `swagger-ui-dist` package (a dependency of the sandbox), so the reference renders without
 * internet access. Only these names are served: nothing else of node_modules is reachable.
 */
export const SWAGGER_FILES = ['swagger-ui-bundle.js', 'swagger-ui.css'] as const;

export function swaggerFiles(): (name: string) => Promise<StaticFile | undefined> {
  const cache = new Map<string, Promise<StaticFile>>();
  return (name) => {
    if (!(SWAGGER_FILES as readonly string[]).includes(name)) return Promise.resolve(undefined);
    let file = cache.get(name);
    if (!file) {
      file = readFile(join(swaggerDirectory(), name)).then((bytes) => staticFile(name, bytes));
      // A failed read is not remembered: the next request tries again.
      file.catch(() => cache.delete(name));
      cache.set(name, file);
    }
    return file;
  };
}

function swaggerDirectory(): string {
  return dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
}
