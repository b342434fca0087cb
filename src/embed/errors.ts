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
