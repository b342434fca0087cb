import { mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** A directory that cannot be made or written: the message names it and says why. */
export class DirectoryError extends Error {
  override name = 'DirectoryError';
}

/**
 * Makes `dir` and the parents it lacks, one level at a time, from the deepest that exists.
 *
 * Not `mkdirSync(dir, { recursive: true })`: Node's takes every ENOENT for a missing parent, makes the
 * parent (which exists: EEXIST, fine) and tries again, for ever, where a parent exists but cannot hold
 * directories (under /proc, or a dangling symbolic link): the process spins a core and prints
 * nothing. Here each level is made once, and the first refusal is the answer.
 */
export function makeDirectories(dir: string): void {
  const missing: string[] = [];
  for (let path = dir; ; path = dirname(path)) {
    const found = stat(dir, path);
    if (found) {
      if (!found.isDirectory()) throw notADirectory(dir, path);
      break;
    }
    missing.push(path);
    if (dirname(path) === path) break;
  }
  for (const path of missing.reverse()) {
    try {
      mkdirSync(path);
    } catch (error) {
      if (isCode(error, 'EEXIST') && stat(dir, path)?.isDirectory()) continue;
      if (isCode(error, 'EEXIST')) throw notADirectory(dir, path);
      const at = path === dir ? '' : ` (making ${path})`;
      throw new DirectoryError(`${dir} cannot be created${at}: ${reasonOf(error, 'mkdir')}`);
    }
  }
}

/**
 * Checks that files can be made in `dir` by making one and removing it: `access(W_OK)` answers yes for
 * root on a directory whose mode says no, and knows nothing of a file system that refuses writes
 * (sysfs, a read-only mount seen through some layers).
 */
export function checkWritable(dir: string): void {
  const probe = join(dir, `.write-check-${process.pid}`);
  try {
    writeFileSync(probe, '');
  } catch (error) {
    throw new DirectoryError(`${dir} cannot be written: ${reasonOf(error, 'write')}`);
  }
  rmSync(probe, { force: true });
}

function stat(dir: string, path: string) {
  try {
    return statSync(path, { throwIfNoEntry: false });
  } catch (error) {
    // ENOTDIR (a file on the way), EACCES (a parent that cannot be searched), ELOOP.
    throw new DirectoryError(`${dir} cannot be used: ${reasonOf(error, 'stat')}`);
  }
}

function notADirectory(dir: string, path: string): DirectoryError {
  return new DirectoryError(
    path === dir
      ? `${dir} is a file, not a directory`
      : `${dir} cannot be created: ${path} is a file (or a broken symbolic link), not a directory`,
  );
}

const isCode = (error: unknown, code: string) => (error as NodeJS.ErrnoException).code === code;

/** The system's refusal in words, with its code for a search. */
function reasonOf(error: unknown, doing: 'mkdir' | 'write' | 'stat'): string {
  const { code, message } = error as NodeJS.ErrnoException;
  const words: Record<string, string> = {
    EACCES: 'permission denied',
    EPERM: 'operation not permitted',
    EROFS: 'the file system is read-only',
    ENOSPC: 'no space left on the device',
    EDQUOT: 'the disk quota is used up',
    ENOTDIR: 'a part of the path is a file, not a directory',
    ELOOP: 'too many symbolic links on the way',
    ENAMETOOLONG: 'the path is too long',
    // mkdir's ENOENT where the parent exists: a file system that takes no new directories (/proc).
    ENOENT: doing === 'mkdir' ? 'its parent does not take new directories' : 'no such file or directory',
  };
  const said = code === undefined ? undefined : words[code];
  return said === undefined ? message : `${said} (${code})`;
}
