/**
 * The build: `src/` bundled with esbuild into `dist/`. One place, so each output says what it is for.
 *
 * - `dist/main.js`: the command line that `bin` and `npm start` run, an ES module (its start-up
 *   loads a few files, not hundreds). What only serving needs (the server, pino) is split into a
 *   chunk beside it that `serve` loads: the control commands start without it, and Node 22.1+'s
 *   compile cache (`module.enableCompileCache()` in src/main.ts) covers the chunk, which is most of
 *   the code. Bundled CommonJS packages call `require`, which an ES module lacks: the banner makes
 *   one.
 * - `dist/render-worker.cjs`: a label render thread (see src/labels/render/pool.ts), CommonJS, where
 *   `import.meta.url` has no value, so it is given one (`src/build/import-meta-url.ts`).
 * - `dist/index.cjs`, `dist/client.cjs`: the package's entries (`shipping-sandbox`, `shipping-sandbox/client`)
 *   for `require`; `dist/index.js`, `dist/client.js`: the same for `import`, each a one-line ES module
 *   over its CommonJS bundle (Node's "wrapper" way to ship both), so a program that both imports and
 *   requires the package loads its code once.
 * - With `--declarations` (`npm pack` runs it, through `prepack`): `dist/types/`, the type declarations
 *   of those two entries and of the files they name, and no others (see emitDeclarations).
 * - `dist/dashboard/`: the QA dashboard's browser code (`app.js`, `app.css`) and the API reference's
 *   key bar (`docs.js`, `docs.css`), bundled with Preact as `src/dashboard/ui/build.json` says (the
 *   sandbox bundles the same in memory when it runs from its sources).
 *
 * Heavy renderers stay outside the bundle and load from node_modules on first use; better-sqlite3
 * and workerpool are native or spawn files of their own.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { builtinModules, createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, posix } from 'node:path';
import { build } from 'esbuild';

const EXTERNAL = [
  'workerpool',
  'better-sqlite3',
  'pino',
  'pino-pretty',
  '@resvg/resvg-js',
  'pdf-lib',
  'bwip-js',
  'opentype.js',
];

const pkg = JSON.parse(readFileSync('package.json', 'utf8'));

const common = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  sourcemap: true,
  logLevel: 'warning',
  external: EXTERNAL,
  // The version a bundle reports (src/core/version.ts), without reading package.json at start.
  define: { BUILT_SANDBOX_VERSION: JSON.stringify(pkg.version) },
};

/** The package's entries: what `exports` in package.json names. */
const PACKAGE_ENTRIES = { index: 'src/index.ts', client: 'src/client/index.ts' };

rmSync('dist', { recursive: true, force: true });

await Promise.all([
  build({
    ...common,
    entryPoints: { main: 'src/main.ts' },
    format: 'esm',
    splitting: true,
    outdir: 'dist',
    // Chunks beside main.js: code that finds files next to itself (the render worker) finds them.
    chunkNames: '[name]-[hash]',
    banner: {
      js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
    },
  }),
  build({
    ...common,
    entryPoints: { 'render-worker': 'src/labels/render/worker.ts', index: PACKAGE_ENTRIES.index },
    format: 'cjs',
    outdir: 'dist',
    outExtension: { '.js': '.cjs' },
    inject: ['src/build/import-meta-url.ts'],
    define: { ...common.define, 'import.meta.url': 'importMetaUrl' },
  }),
  // The client runs in merchants' programs and needs nothing of the server: its dependency stays
  // theirs to share.
  build({
    ...common,
    entryPoints: { client: PACKAGE_ENTRIES.client },
    format: 'cjs',
    outdir: 'dist',
    outExtension: { '.js': '.cjs' },
    external: [...EXTERNAL, 'openapi-fetch'],
  }),
]);

for (const name of Object.keys(PACKAGE_ENTRIES)) {
  // Node finds the names to re-export in the CommonJS bundle itself (esbuild marks them for it).
  writeFileSync(join('dist', `${name}.js`), `export * from './${name}.cjs';\n`);
}

await build({
  ...JSON.parse(readFileSync('src/dashboard/ui/build.json', 'utf8')),
  outdir: 'dist/dashboard',
});

if (process.argv.includes('--declarations')) emitDeclarations();

/**
 * `tsc` writes the declarations of every file the entries reach (the server's too), into a temporary
 * folder; only the entries' declarations and the files they name are copied to `dist/types/`, each
 * twice: `.d.ts` for `import` and `.d.cts` for `require`, so TypeScript reads each in the module
 * system it is loaded in. A declaration that names a library the package does not depend on, or a
 * file outside the copied set, stops the build: installed, it would not resolve.
 */
function emitDeclarations() {
  const scratch = mkdtempSync(join(tmpdir(), 'shipping-sandbox-declarations-'));
  try {
    const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
    // No type check here (`npm test` does it): emitting alone takes a fraction of the time. tsc
    // complains of declarations it cannot write for some internal files (the wiring's return type):
    // those are never shipped, so only complaints about the copied files count (checked below).
    const run = spawnSync(
      process.execPath,
      [tsc, '-p', 'tsconfig.build.json', '--noCheck', '--pretty', 'false', '--outDir', scratch],
      { encoding: 'utf8' },
    );
    if (run.error) throw run.error;
    const complaints = [...run.stdout.matchAll(/^src\/(\S+?)\.ts\(\d+,\d+\): error .*$/gm)].map(
      ([line, file]) => ({ file: `${file}.d.ts`, line }),
    );

    const allowed = new Set([...Object.keys(pkg.dependencies ?? {}), ...builtinModules]);
    const packageOf = (specifier) =>
      specifier
        .replace(/^node:/, '')
        .split('/')
        .slice(0, specifier.startsWith('@') ? 2 : 1)
        .join('/');
    const pending = Object.values(PACKAGE_ENTRIES).map((entry) =>
      posix.relative('src', entry).replace(/\.ts$/, '.d.ts'),
    );
    const copied = new Set();
    while (pending.length > 0) {
      const file = pending.pop();
      if (copied.has(file)) continue;
      copied.add(file);
      const complaint = complaints.find((c) => c.file === file);
      if (complaint) throw new Error(`tsc: ${complaint.line}`);
      const text = readFileSync(join(scratch, file), 'utf8');
      if (/^\/\/\/\s*<reference/m.test(text))
        throw new Error(`${file}: a triple-slash reference would not resolve once installed`);
      const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
      for (const [, specifier] of code.matchAll(/(?:from|import)\s*\(?\s*['"]([^'"]+)['"]/g)) {
        if (specifier.startsWith('.')) {
          pending.push(posix.join(posix.dirname(file), specifier.replace(/\.js$/, '.d.ts')));
        } else if (!allowed.has(packageOf(specifier))) {
          throw new Error(`${file} names '${specifier}', which is not a dependency of the package`);
        }
      }
      const target = join('dist', 'types', file);
      mkdirSync(dirname(target), { recursive: true });
      writeFileSync(target, text);
      writeFileSync(
        target.replace(/\.d\.ts$/, '.d.cts'),
        text.replace(/((?:from|import)\s*\(?\s*['"]\.[^'"]*)\.js(['"])/g, '$1.cjs$2'),
      );
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
