import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { cruise, type ICruiseResult, type IForbiddenRuleType } from 'dependency-cruiser';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestSandbox } from './helpers.js';

const config = createRequire(import.meta.url)('../.dependency-cruiser.cjs') as {
  forbidden: IForbiddenRuleType[];
  options: Record<string, unknown>;
};

async function cruiseTree(directory: string, baseDir = process.cwd()): Promise<ICruiseResult> {
  const result = await cruise([directory], {
    ...config.options,
    baseDir,
    validate: true,
    ruleSet: { forbidden: config.forbidden },
  });
  return result.output as ICruiseResult;
}

const violations = (result: ICruiseResult) =>
  result.summary.violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`).sort();

/** The folder (or root file) a source file belongs to: `src/labels/render/pdf.ts` is `labels`. */
const roomOf = (source: string) => source.replace(/^src\//, '').split('/')[0] as string;

/** Pairs of folders that reach each other through their imports, however long the way round. */
function folderCycles(result: ICruiseResult): string[][] {
  const edges = new Map<string, Set<string>>();
  for (const module of result.modules) {
    if (!module.source.startsWith('src/')) continue;
    const from = roomOf(module.source);
    for (const dependency of module.dependencies) {
      if (!dependency.resolved.startsWith('src/')) continue;
      const to = roomOf(dependency.resolved);
      if (to !== from) edges.set(from, (edges.get(from) ?? new Set()).add(to));
    }
  }
  const reaches = (from: string, target: string, seen = new Set<string>()): boolean => {
    for (const next of edges.get(from) ?? []) {
      if (next === target) return true;
      if (seen.has(next)) continue;
      seen.add(next);
      if (reaches(next, target, seen)) return true;
    }
    return false;
  };
  const cycles: string[][] = [];
  for (const [from, targets] of edges)
    for (const to of targets) if (from < to && reaches(to, from)) cycles.push([from, to]);
  return cycles;
}

describe('the import rules', () => {
  it('hold for src/: no cycle of files or of folders, nothing runs upward', async () => {
    const result = await cruiseTree('src');
    expect(result.summary.totalCruised).toBeGreaterThan(100);
    expect(violations(result)).toEqual([]);
    expect(folderCycles(result)).toEqual([]);
  });

  const fixtures = mkdtempSync(join(tmpdir(), 'sandbox-architecture-'));
  afterAll(() => rmSync(fixtures, { recursive: true, force: true }));

  /** A small tree that breaks every rule once. */
  function writeTree(files: Record<string, string>): void {
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(dirname(join(fixtures, path)), { recursive: true });
      writeFileSync(join(fixtures, path), text);
    }
  }

  it('catch a core that imports Hono or a resource, logic that imports HTTP, and cycles', async () => {
    writeTree({
      'src/core/ids.ts':
        "import { Hono } from 'hono';\nimport { x } from '../shipments/store.js';\nexport const y = [Hono, x];\n",
      'src/shipments/store.ts': "import { z } from '../labels/service.js';\nexport const x = z;\n",
      'src/labels/service.ts':
        "import { x } from '../shipments/store.js';\nimport { h } from '../http/auth.js';\nexport const z = [x, h];\n",
      'src/http/auth.ts': "import { c } from '../config/index.js';\nexport const h = c;\n",
      'src/config/index.ts': "import { w } from '../wiring.js';\nexport const c = w;\n",
      'src/wiring.ts': 'export const w = 1;\n',
      'src/client/index.ts':
        "import { Hono } from 'hono';\nimport { signatureHeader } from '../webhooks/signature.js';\nexport const c = [Hono, signatureHeader];\n",
      'src/webhooks/signature.ts': 'export const signatureHeader = 1;\n',
      'src/dashboard/ui/app.ts':
        "import { signatureHeader } from '../../webhooks/signature.js';\nexport const a = signatureHeader;\n",
      // The client's types are the page's to use; its code is not.
      'src/dashboard/ui/types.ts':
        "import type { Label } from '../../client/types.js';\nimport { createClient } from '../../client/index.js';\nexport type L = Label;\nexport const c = createClient;\n",
      'src/client/types.ts': 'export type Label = { id: string };\n',
      'src/dashboard/module.ts': "import { a } from './ui/app.js';\nexport const m = a;\n",
      // A new resource, named nowhere in the rules: it may stand on the ground alone.
      'src/parcels/service.ts': "import { x } from '../shipments/store.js';\nexport const p = x;\n",
      // A resource's schema that takes zod from the framework instead of the core.
      'src/events/schema.ts': "import { z } from '@hono/zod-openapi';\nexport const s = z;\n",
      'tsconfig.json': '{"compilerOptions":{"module":"NodeNext","moduleResolution":"NodeNext"}}\n',
      'package.json': '{"type":"module"}\n',
    });
    // Hono and its packages as the fixture tree sees them: resolved from this project's node_modules.
    mkdirSync(join(fixtures, 'node_modules'), { recursive: true });
    symlinkSync(join(process.cwd(), 'node_modules', 'hono'), join(fixtures, 'node_modules', 'hono'));
    symlinkSync(join(process.cwd(), 'node_modules', '@hono'), join(fixtures, 'node_modules', '@hono'));

    const result = await cruiseTree('src', fixtures);
    const names = new Set(result.summary.violations.map((v) => v.rule.name));
    expect([...names].sort()).toEqual([
      'core-is-the-ground',
      'http-uses-only-the-core',
      'logic-knows-no-framework',
      'new-resources-import-only-the-ground',
      'no-circular',
      'nothing-imports-the-wiring',
      'only-the-wiring-reads-the-config',
      'resources-import-what-they-declare',
      'the-browser-code-stands-alone',
      'the-client-stands-alone',
      'the-server-leaves-the-browser-code-alone',
    ]);
    expect(violations(result)).toContain(
      'the-client-stands-alone: src/client/index.ts -> src/webhooks/signature.ts',
    );
    expect(
      violations(result).some((v) =>
        /^the-client-stands-alone: src\/client\/index.ts -> .*node_modules\/hono\//.test(v),
      ),
    ).toBe(true);
    expect(violations(result)).toContain(
      'the-browser-code-stands-alone: src/dashboard/ui/types.ts -> src/client/index.ts',
    );
    expect(violations(result)).not.toContain(
      'the-browser-code-stands-alone: src/dashboard/ui/types.ts -> src/client/types.ts',
    );
    expect(violations(result)).toContain('core-is-the-ground: src/core/ids.ts -> src/shipments/store.ts');
    expect(
      violations(result).some((v) =>
        /^core-is-the-ground: src\/core\/ids.ts -> .*node_modules\/hono\//.test(v),
      ),
    ).toBe(true);
    expect(violations(result)).toContain(
      'new-resources-import-only-the-ground: src/parcels/service.ts -> src/shipments/store.ts',
    );
    // shipments/ declares events, rates and addresses, not labels (it reaches labels through a port).
    expect(violations(result)).toContain(
      'resources-import-what-they-declare: src/shipments/store.ts -> src/labels/service.ts',
    );
    expect(
      violations(result).some((v) =>
        /^logic-knows-no-framework: src\/events\/schema.ts -> .*node_modules\/@hono\//.test(v),
      ),
    ).toBe(true);
    expect(folderCycles(result)).toContainEqual(['labels', 'shipments']);
  });
});

describe('the modules', () => {
  it("make every table between them, each table by one owner's migrations (the settings are the database layer's)", async () => {
    const sandbox = await createTestSandbox();
    const TABLES = "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'";
    const tablesOf = (db: Database.Database) => db.prepare(TABLES).pluck().all() as string[];
    // The owners' steps, one owner at a time, into an empty database: what each adds is its own.
    const fresh = new Database(':memory:');
    const owners = new Map<string, string[]>();
    for (const owner of sandbox.schema) {
      const before = new Set(tablesOf(fresh));
      for (const step of owner.migrations.sqlite) fresh.exec(step);
      owners.set(
        owner.name,
        tablesOf(fresh).filter((table) => !before.has(table)),
      );
    }
    expect(owners.get('settings')).toEqual(['settings']);
    expect(owners.get('shipments')?.sort()).toEqual(['shipment_counts', 'shipments']);
    const owned = [...owners.values()].flat();
    expect(owned.length).toBe(new Set(owned).size);
    expect([...owned, 'schema_versions'].sort()).toEqual((await sandbox.db.column<string>(TABLES)).sort());
  });
});
