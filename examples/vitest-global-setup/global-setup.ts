/**
 * Starts one sandbox before any test file runs and stops it after the last: in-process, in memory,
 * on a free loopback port. Test files reach it through `inject('sandboxOrigin')`.
 */
import { startSandbox } from 'shipping-sandbox';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    sandboxOrigin: string;
  }
}

export default async function setup(project: TestProject) {
  const sandbox = await startSandbox();
  project.provide('sandboxOrigin', sandbox.origin);
  return () => sandbox.stop();
}
