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
 *
 * Heavy renderers and the certificate maker stay outside the bundle and load from node_modules on
 * first use; better-sqlite3 and workerpool are native or spawn files of their own.
 */
import { rmSync } from 'node:fs';
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
    entryPoints: { 'render-worker': 'src/labels/render/worker.ts' },
    format: 'cjs',
    outdir: 'dist',
    outExtension: { '.js': '.cjs' },
    inject: ['src/build/import-meta-url.ts'],
    define: { 'import.meta.url': 'importMetaUrl' },
  }),
]);
