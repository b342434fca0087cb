import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, extname, join } from 'node:path';
import { PROJECT_ROOT } from '../core/fixtures.js';

/** A file the sandbox serves to browsers: its bytes, their type, and a tag for revalidation. */
export interface StaticFile {
  bytes: Uint8Array;
  contentType: string;
  etag: string;
}

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

export function staticFile(name: string, bytes: Uint8Array): StaticFile {
  return {
    bytes,
    contentType: CONTENT_TYPES[extname(name)] ?? 'application/octet-stream',
    etag: `"${createHash('sha256').update(bytes).digest('base64url').slice(0, 22)}"`,
  };
}

/** Where `scripts/build.mjs` writes the dashboard's browser code. */
export const BUILT_DASHBOARD = join(PROJECT_ROOT, 'dist', 'dashboard');

/** How the browser code is bundled; the build script reads the same file. */
export const BUILD_OPTIONS = join(PROJECT_ROOT, 'src', 'dashboard', 'ui', 'build.json');

/**
 * The dashboard's browser code (`app.js`, `app.css`, `docs.js`, `docs.css`), by file name. Run from the
 * TypeScript sources (tests, `npm run dev`), it is bundled in memory with esbuild on first use, so
 * it is always the code being edited and nothing has to be built first; run from the build, it is
 * what `scripts/build.mjs` wrote into `dist/dashboard/`. Loaded once, on the first request for it.
 */
export function dashboardBundle({
  fromSources = import.meta.url.endsWith('.ts'),
  builtDir = BUILT_DASHBOARD,
}: {
  fromSources?: boolean;
  builtDir?: string;
} = {}): () => Promise<ReadonlyMap<string, StaticFile>> {
  let loading: Promise<ReadonlyMap<string, StaticFile>> | undefined;
  return () => {
    loading ??= (fromSources ? bundleInMemory() : Promise.resolve().then(() => readBuilt(builtDir))).catch(
      (error: unknown) => {
        // A failed load is tried again on the next request rather than remembered.
        loading = undefined;
        throw error;
      },
    );
    return loading;
  };
}

function readBuilt(directory: string): ReadonlyMap<string, StaticFile> {
  if (!existsSync(directory)) {
    throw new Error(`The dashboard is not built: ${directory} is missing (run npm run build).`);
  }
  const files = new Map<string, StaticFile>();
  for (const name of readdirSync(directory)) {
    files.set(name, staticFile(name, readFileSync(join(directory, name))));
  }
  return files;
}

async function bundleInMemory(): Promise<ReadonlyMap<string, StaticFile>> {
  // esbuild is a development tool: loaded by `require` here only, so the server's own bundle
  // neither contains it nor needs it.
  const esbuild = createRequire(import.meta.url)('esbuild') as typeof import('esbuild');
  const options = JSON.parse(readFileSync(BUILD_OPTIONS, 'utf8')) as import('esbuild').BuildOptions;
  const result = await esbuild.build({
    ...options,
    absWorkingDir: PROJECT_ROOT,
    outdir: BUILT_DASHBOARD,
    write: false,
  });
  return new Map(
    result.outputFiles.map((file) => [basename(file.path), staticFile(basename(file.path), file.contents)]),
  );
}
