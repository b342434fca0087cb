/**
 * The build: `src/` bundled with esbuild into `dist/`. One place, so each output says what it is for.
 *
 * - `dist/sandbox.cjs`: the command line and the server, one CommonJS bundle (its start-up reads one
 *   file, not hundreds; what only serving needs is evaluated only by `serve`). `import.meta.url` has
 *   no value in CommonJS, so it is given one (`src/build/import-meta-url.ts`).
 * - `dist/main.js`: the launcher that `bin` and `npm start` run (src/launcher.ts), which loads the
 *   bundle through V8's code cache, and `dist/code-cache/`: that cache, made by starting the built
 *   sandbox once (see makeCodeCache), for this folder only. A fresh container of the Docker image
 *   (which runs `dist/` where it was built) then starts without compiling. The package leaves it out.
 * - `dist/render-worker.cjs`: a label render thread (see src/labels/render/pool.ts), CommonJS too.
 * - `dist/index.cjs`, `dist/client.cjs`: the package's entries (`shipping-sandbox`, `shipping-sandbox/client`)
 *   for `require`; `dist/index.js`, `dist/client.js`: the same for `import`, each a one-line ES module
 *   over its CommonJS bundle (Node's "wrapper" way to ship both), so a program that both imports and
 *   requires the package loads its code once.
 * - With `--declarations` (`npm pack` runs it, through `prepack`): `dist/types/`, the type declarations
 *   of those two entries and of the files they name, and no others (see emitDeclarations).
 * - `dist/dashboard/`: the QA dashboard's browser code (`app.js`, `app.css`) and the API reference's
 *   key bar (`docs.js`, `docs.css`), bundled with Preact as `src/dashboard/ui/build.json` says (the
 *   sandbox bundles the same in memory when it runs from its sources).
 * - `dist/swagger-ui/`: Swagger UI's files for `/docs`, copied from a development dependency (see
 *   copySwaggerUi).
 *
 * Heavy renderers stay outside the bundle and load from node_modules on first use; better-sqlite3
 * and workerpool are native or spawn files of their own.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { builtinModules, createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, posix, resolve } from 'node:path';
import { build } from 'esbuild';
import { parse as parseYaml } from 'yaml';

// pino is bundled (its files then come compiled from the code cache: about 10 ms of a start); it is
// used without transports, whose worker files a bundle could not find.
const EXTERNAL = [
  'workerpool',
  'better-sqlite3',
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

/**
 * The built-in scenario files, read here so that a start parses no YAML (src/scenarios/files.ts checks
 * them as it does any file). Read as that file reads them: the same extensions, sorted, no dotfiles.
 */
const builtScenarios = Object.fromEntries(
  readdirSync('scenarios')
    .filter((name) => !name.startsWith('.') && /\.(ya?ml|json)$/.test(name))
    .sort()
    .map((name) => {
      const text = readFileSync(join('scenarios', name), 'utf8');
      return [name, name.endsWith('.json') ? JSON.parse(text) : parseYaml(text)];
    }),
);

/** The package's entries: what `exports` in package.json names. */
const PACKAGE_ENTRIES = { index: 'src/index.ts', client: 'src/client/index.ts' };

rmSync('dist', { recursive: true, force: true });

await Promise.all([
  build({
    ...common,
    entryPoints: {
      sandbox: 'src/main.ts',
      'render-worker': 'src/labels/render/worker.ts',
      index: PACKAGE_ENTRIES.index,
    },
    format: 'cjs',
    outdir: 'dist',
    outExtension: { '.js': '.cjs' },
    inject: ['src/build/import-meta-url.ts'],
    define: {
      ...common.define,
      'import.meta.url': 'importMetaUrl',
      // As JSON text: an object here would be a module of its own, initialised ahead of every other.
      BUILT_SCENARIOS: JSON.stringify(JSON.stringify(builtScenarios)),
    },
  }),
  // The client runs in merchants' programs and needs nothing of the server. openapi-fetch (15 KB) is
  // bundled into it: left outside, esbuild's interop for an ES-module package ("type": "module")
  // calls it through `require(...).default`, which openapi-fetch's CommonJS build does not hold as
  // the function. It stays a dependency for its types, which the client's declarations name.
  build({
    ...common,
    entryPoints: { client: PACKAGE_ENTRIES.client },
    format: 'cjs',
    outdir: 'dist',
    outExtension: { '.js': '.cjs' },
  }),
]);

// The launcher reads the bundle as one-byte text (latin1 decodes 2 MB in a tenth of the time UTF-8
// takes, and V8 keeps it in half the memory) when it is ASCII: esbuild escapes every other character
// but those of comments, which are escaped here, as code units, as a string or a pattern would be.
writeFileSync(
  'dist/sandbox.cjs',
  readFileSync('dist/sandbox.cjs', 'utf8').replace(
    /[\u0080-\uffff]/g,
    (unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, '0')}`,
  ),
);
// The launcher names the bundle's caches by its content, so a cache never meets another build's code.
const bundleHash = createHash('sha256').update(readFileSync('dist/sandbox.cjs')).digest('hex').slice(0, 16);
await build({
  ...common,
  entryPoints: { main: 'src/launcher.ts' },
  format: 'esm',
  outdir: 'dist',
  define: { ...common.define, SANDBOX_BUNDLE_HASH: JSON.stringify(bundleHash) },
});

for (const name of Object.keys(PACKAGE_ENTRIES)) {
  // Node finds the names to re-export in the CommonJS bundle itself (esbuild marks them for it).
  writeFileSync(join('dist', `${name}.js`), `export * from './${name}.cjs';\n`);
}

await build({
  ...JSON.parse(readFileSync('src/dashboard/ui/build.json', 'utf8')),
  outdir: 'dist/dashboard',
});
copySwaggerUi();

makeCodeCache();

if (process.argv.includes('--declarations')) emitDeclarations();

/**
 * Swagger UI's standalone files, which `/docs` serves (src/dashboard/swagger.ts), copied from
 * `swagger-ui-dist` with its licence, notice and the licences of what its bundle holds. The package
 * ships this copy so that installing it installs neither `swagger-ui-dist` nor the install-time
 * analytics (`@scarf/scarf`) that it depends on.
 */
function copySwaggerUi() {
  const from = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  const to = join('dist', 'swagger-ui');
  mkdirSync(to, { recursive: true });
  for (const name of [
    'swagger-ui-bundle.js',
    'swagger-ui-bundle.js.LICENSE.txt',
    'swagger-ui.css',
    'LICENSE',
    'NOTICE',
  ])
    copyFileSync(join(from, name), join(to, name));
}

/**
 * Starts the built command once (in memory, on free loopback ports, with a temporary folder of its
 * own for the certificate) and has the launcher write the code compiled by the time it is ready to
 * `dist/code-cache/`. It holds for this folder, this Node version and node's flags of this build
 * (NODE_OPTIONS: the Dockerfile sets those its image runs with) only; elsewhere the launcher makes one
 * of its own. Without it the sandbox works the same, compiling as it starts.
 */
function makeCodeCache() {
  const folder = resolve('dist', 'code-cache');
  const scratch = mkdtempSync(join(tmpdir(), 'shipping-sandbox-build-'));
  // The sandbox's own settings in the environment (a port file, a host) are not this run's.
  const env = Object.fromEntries(
    Object.entries(process.env).filter(
      ([name]) => !/^(SANDBOX_|HOST$|PORT$|HTTPS_PORT$|LOG_LEVEL$)/.test(name),
    ),
  );
  try {
    const run = spawnSync(
      process.execPath,
      ['dist/main.js', '--memory', '--port', '0', '--https-port', '0', '--log-level', 'silent'],
      {
        env: {
          ...env,
          TMPDIR: scratch,
          TMP: scratch,
          TEMP: scratch,
          SANDBOX_CODE_CACHE_WRITE: '1',
        },
        encoding: 'utf8',
        timeout: 60_000,
      },
    );
    if (run.status !== 0 || !existsSync(folder) || readdirSync(folder).length === 0)
      process.stderr.write(
        `build: no code cache made (the sandbox will compile as it starts): ${run.error?.message ?? run.stderr}\n`,
      );
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

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
