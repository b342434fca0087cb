/** The sandbox refused a helper's call: the contract's error body, with the status it came with. */
export class SandboxError extends Error {
  override name = 'SandboxError';

  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

/** The JSON a route answered, or its error body thrown as a SandboxError. */
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
