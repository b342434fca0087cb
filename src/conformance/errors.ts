/**
 * `conformance()` could not compare anything: the target did not answer its first call, or refused
 * the key there. (The command exits with 2.) Apart from the rest, as its declaration ships.
 */
export class ConformanceError extends Error {
  override name = 'ConformanceError';

  constructor(
    /** `unreachable`: no answer at all; `key_refused`: the first call was answered 401 or 403. */
    readonly reason: 'unreachable' | 'key_refused',
    message: string,
  ) {
    super(message);
  }
}
