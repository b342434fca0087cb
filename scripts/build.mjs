/**
 * The build: `src/` bundled with esbuild into `dist/`. One place, so each output says what it is for.
 *
 * - `dist/sandbox.cjs`: the command line and the server, one CommonJS bundle (its start-up loads one
 *   file, not hundreds). `import.meta.url` has no value in CommonJS, so it is given one
 *   (`src/build/import-meta-url.ts`).
 * - `dist/render-worker.cjs`: a label render thread (see src/labels/render/pool.ts).
 * - `dist/main.js`: the launcher that `bin` and `npm start` run (src/boot.ts).
 * - `dist/dashboard/`: the QA dashboard's browser code (`app.js`, `app.css`) and the API reference's
 *   key bar (`docs.js`, `docs.css`), bundled with Preact as `src/dashboard/ui/build.json` says (the
 *   sandbox bundles the same in memory when it runs from its sources).
 *
 * Heavy renderers and the certificate maker stay outside the bundle and load from node_modules on
 * first use; better-sqlite3 and workerpool are native or spawn files of their own.
 */
import { readFileSync, rmSync } from 'node:fs';
import { build } from 'esbuild';

const EXTERNAL = [
  'workerpool',
  'better-sqlite3',
  'pino',
  '@resvg/resvg-js',
  'pdf-lib',
  'bwip-js',
  'opentype.js',
  'selfsigned',
];

const common = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  sourcemap: true,
  logLevel: 'warning',
  external: EXTERNAL,
};

rmSync('dist', { recursive: true, force: true });

await Promise.all([
  build({
    ...common,
    entryPoints: { sandbox: 'src/main.ts', 'render-worker': 'src/labels/render/worker.ts' },
    format: 'cjs',
    outdir: 'dist',
    outExtension: { '.js': '.cjs' },
    inject: ['src/build/import-meta-url.ts'],
    define: { 'import.meta.url': 'importMetaUrl' },
  }),
  build({ ...common, entryPoints: ['src/boot.ts'], format: 'esm', outfile: 'dist/main.js' }),
]);

await build({
  ...JSON.parse(readFileSync('src/dashboard/ui/build.json', 'utf8')),
  outdir: 'dist/dashboard',
});
