/**
 * Whether a store may keep what it reads in memory: only while no other process writes the database,
 * since a row kept here would not see another's change. One sandbox over SQLite always may (the data
 * directory's lock keeps it the only one); over PostgreSQL a replica may while it is the only replica
 * (db/writer-lock.ts), and must drop what it kept when another joins.
 *
 * A store checks `granted` before it answers from memory. What it read from the database it keeps only
 * if the permit is still granted under the `generation` it read under: a read begun before another
 * replica joined and left again may predate that replica's writes. Nor while one of this process's
 * own transactions is open, or when one began or ended during the read (`writing`, and the
 * generation): over PostgreSQL a statement outside it reads what was there before its writes, which
 * its stores forget before it commits.
 */
export interface MemoryPermit {
  readonly granted: boolean;
  /** Changes each time the permit is granted or withdrawn, and as a transaction of this process begins or ends. */
  readonly generation: number;
  /** Whether a transaction of this process is open (over PostgreSQL; one SQLite connection reads its writes). */
  readonly writing?: boolean;
  /** Calls `drop` each time the permit is withdrawn: the store forgets everything it kept. */
  onWithdraw(drop: () => void): void;
}

/** One sandbox over SQLite. */
export const ALWAYS_GRANTED: MemoryPermit = { granted: true, generation: 0, onWithdraw: () => undefined };

/** A store that must read every time (a tool or test opening the database beside a sandbox). */
export const NEVER_GRANTED: MemoryPermit = { granted: false, generation: 0, onWithdraw: () => undefined };

/** Whether what was read under `generation` may be kept now. */
export const mayKeep = (permit: MemoryPermit, generation: number) =>
  permit.granted && permit.writing !== true && permit.generation === generation;
