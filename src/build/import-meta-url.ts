/**
 * Injected into the CommonJS bundles only (the render worker, the package's `index.cjs`), where
 * `import.meta.url` has no value: the build maps `import.meta.url` to this. Modules run from `src/`
 * never load it.
 */
export const importMetaUrl: string = require('node:url').pathToFileURL(__filename).href;
