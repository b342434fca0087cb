// Loaded into a sandbox under measurement (`node --require bench/memory-probe.cjs dist/main.js …`) by
// bench/memory-breakdown.ts, never by the product. It keeps the databases the sandbox opens, and answers
// each `probe` message on its IPC channel with what only the process can see: V8's heap by space, what
// Node counts outside it, and SQLite's pages by table and index (the `dbstat` table).
const v8 = require('node:v8');
const vm = require('node:vm');
const Database = require('better-sqlite3');

const databases = new Set();
const prepare = Database.prototype.prepare;
Database.prototype.prepare = function (...args) {
  databases.add(this);
  return prepare.apply(this, args);
};

// Made on the first collection asked for: a V8 flag set before the launcher compiles the bundle would
// make V8 refuse the build's code cache, and the start would differ from a real one.
let gc;
const collect = () => {
  if (!gc) {
    v8.setFlagsFromString('--expose-gc');
    gc = vm.runInNewContext('gc');
  }
  gc();
};

const MiB = 1024 * 1024;
const mib = (bytes) => Math.round((bytes / MiB) * 10) / 10;

function database(db) {
  const pageSize = db.pragma('page_size', { simple: true });
  const pageCount = db.pragma('page_count', { simple: true });
  const freelist = db.pragma('freelist_count', { simple: true });
  let objects = [];
  try {
    objects = db
      .prepare(
        `SELECT name, sum(pgsize) AS bytes, sum(payload) AS payload, sum(unused) AS unused, count(*) AS pages
         FROM dbstat GROUP BY name ORDER BY bytes DESC`,
      )
      .all()
      .map((row) => ({
        name: row.name,
        mib: mib(row.bytes),
        payloadMiB: mib(row.payload),
        unusedMiB: mib(row.unused),
      }));
  } catch (error) {
    objects = [{ name: `dbstat unavailable: ${error.message}`, mib: 0 }];
  }
  return {
    name: db.name,
    memory: db.memory,
    mib: mib(pageSize * pageCount),
    freelistMiB: mib(pageSize * freelist),
    cacheSize: db.pragma('cache_size', { simple: true }),
    objects,
  };
}

function heap() {
  const usage = process.memoryUsage();
  const stats = v8.getHeapStatistics();
  return {
    rssMiB: mib(usage.rss),
    heapTotalMiB: mib(usage.heapTotal),
    heapUsedMiB: mib(usage.heapUsed),
    heapPhysicalMiB: mib(stats.total_physical_size),
    externalMiB: mib(usage.external),
    arrayBuffersMiB: mib(usage.arrayBuffers),
    mallocedByV8MiB: mib(stats.malloced_memory),
    spaces: Object.fromEntries(
      v8.getHeapSpaceStatistics().map((space) => [
        space.space_name,
        {
          sizeMiB: mib(space.space_size),
          usedMiB: mib(space.space_used_size),
          physicalMiB: mib(space.physical_space_size),
        },
      ]),
    ),
  };
}

process.on('message', (message) => {
  if (message?.type !== 'probe') return;
  const before = heap();
  let afterGc;
  if (message.gc) {
    collect();
    afterGc = heap();
  }
  const open = [...databases].filter((db) => db.open);
  process.send({ type: 'probe', heap: before, afterGc, databases: open.map(database) });
});
// The channel must not keep a sandbox alive that is asked to stop.
process.channel?.unref();
