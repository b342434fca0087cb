import { readlinkSync } from 'node:fs';
import { constants, setPriority } from 'node:os';

/**
 * Lowers the calling thread's CPU priority to the lowest (nice 19), so that the scheduler gives it
 * only the time that every other thread of the machine leaves. Linux only, where each thread has its
 * own nice value and `/proc/thread-self` names the thread; elsewhere the call would act on the whole
 * process, so nothing is done. Answers whether the priority was lowered.
 */
export function lowerThreadPriority(): boolean {
  if (process.platform !== 'linux') return false;
  try {
    // `<pid>/task/<tid>`
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (!Number.isInteger(tid) || tid <= 0) return false;
    setPriority(tid, constants.priority.PRIORITY_LOW);
    return true;
  } catch {
    // No /proc (a restricted container): the thread keeps its priority, and its renders still run.
    return false;
  }
}
