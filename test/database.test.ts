import { describe, expect, it } from 'vitest';
import { openDatabase, transaction } from '../src/db/database.js';

describe('transaction', () => {
  const setUp = () => {
    const db = openDatabase(':memory:');
    db.exec('CREATE TABLE notes (text TEXT NOT NULL)');
    const add = (text: string) => db.prepare('INSERT INTO notes VALUES (?)').run(text);
    const notes = () => db.prepare('SELECT text FROM notes ORDER BY rowid').pluck().all();
    return { db, add, notes };
  };

  it('commits what the work wrote and returns its result', () => {
    const { db, add, notes } = setUp();
    const result = transaction(db, () => {
      add('a');
      add('b');
      return 'done';
    });
    expect(result).toBe('done');
    expect(db.inTransaction).toBe(false);
    expect(notes()).toEqual(['a', 'b']);
  });

  it('rolls everything back when the work throws, and rethrows', () => {
    const { db, add, notes } = setUp();
    expect(() =>
      transaction(db, () => {
        add('a');
        throw new Error('no');
      }),
    ).toThrow('no');
    expect(db.inTransaction).toBe(false);
    expect(notes()).toEqual([]);
  });

  it('nests as a savepoint: an inner failure caught inside undoes only the inner writes', () => {
    const { db, add, notes } = setUp();
    transaction(db, () => {
      add('outer');
      try {
        transaction(db, () => {
          add('inner');
          throw new Error('inner fails');
        });
      } catch {}
      add('after');
    });
    expect(notes()).toEqual(['outer', 'after']);
  });

  it('serves each database on its own', () => {
    const first = setUp();
    const second = setUp();
    transaction(first.db, () => first.add('one'));
    transaction(second.db, () => second.add('two'));
    expect([first.notes(), second.notes()]).toEqual([['one'], ['two']]);
  });
});
