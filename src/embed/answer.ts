import { SandboxError } from './errors.js';

/**
 * The JSON a route answered, or its error body thrown as a SandboxError. Apart from errors.ts, whose
 * declarations the package ships: this one names the web `Response`, which not every merchant's
 * TypeScript setup declares.
 */
export async function answerOf<T>(response: Response): Promise<T> {
  const answer = (await response.json()) as T & { error?: { code: string; message: string; field?: string } };
  if (response.ok) return answer;
  const error = answer.error;
  throw new SandboxError(
    response.status,
    error?.code ?? 'internal_error',
    error?.message ?? `The sandbox answered ${response.status}.`,
    error?.field,
  );
}
