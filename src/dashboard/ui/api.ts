/**
 * The dashboard's client of the sandbox: the same `/v1` and `/_sandbox` routes any client calls,
 * with the signed-in key as a Bearer token, so the dashboard can do nothing that key cannot.
 */

/** An answer that was not a success: the contract's error body, or what stood for it. */
export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field?: string,
  ) {
    super(message);
    this.name = 'ApiFailure';
  }

  /** The key itself was refused: unknown, revoked, or never given. */
  get keyRefused(): boolean {
    return this.status === 401;
  }
}

/** A failure in the words the dashboard shows: the code, the message and the field to blame. */
export function describeFailure(error: unknown): string {
  if (error instanceof ApiFailure) {
    const field = error.field ? ` (${error.field})` : '';
    return `${error.message}${field} [${error.status} ${error.code}]`;
  }
  return error instanceof Error ? error.message : String(error);
}

/** Reads an answer's error body; anything else (a proxy's page, a dropped connection) still becomes a failure. */
export async function failureOf(response: Response): Promise<ApiFailure> {
  let body: unknown;
  try {
    body = await response.json();
  } catch {
    body = undefined;
  }
  const error = (body as { error?: { code?: unknown; message?: unknown; field?: unknown } } | undefined)
    ?.error;
  if (error && typeof error.code === 'string' && typeof error.message === 'string') {
    return new ApiFailure(
      response.status,
      error.code,
      error.message,
      typeof error.field === 'string' ? error.field : undefined,
    );
  }
  return new ApiFailure(response.status, 'unexpected_answer', `The sandbox answered ${response.status}.`);
}

export type Fetch = (input: string, init: RequestInit) => Promise<Response>;

export class Api {
  /**
   * @param base the sandbox's address as the page sees it (the page's folder), so the dashboard works
   *   behind a proxy that serves the sandbox under a path
   * @param key the signed-in key
   * @param onKeyRefused told when an answer says the key no longer works (revoked, say)
   */
  constructor(
    private readonly base: string,
    readonly key: string,
    private readonly onKeyRefused: (failure: ApiFailure) => void = () => {},
    private readonly fetcher: Fetch = (input, init) => fetch(input, init),
  ) {}

  get<T>(path: string): Promise<T> {
    return this.json<T>('GET', path);
  }

  post<T>(path: string, body?: unknown): Promise<T> {
    return this.json<T>('POST', path, body);
  }

  patch<T>(path: string, body: unknown): Promise<T> {
    return this.json<T>('PATCH', path, body);
  }

  delete<T>(path: string): Promise<T> {
    return this.json<T>('DELETE', path);
  }

  /** A file (a label's PNG preview) as a blob, fetched with the key like everything else. */
  async blob(path: string): Promise<Blob> {
    return (await this.send('GET', path)).blob();
  }

  private async json<T>(method: string, path: string, body?: unknown): Promise<T> {
    return (await (await this.send(method, path, body)).json()) as T;
  }

  private async send(method: string, path: string, body?: unknown): Promise<Response> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.key}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const response = await this.fetcher(new URL(path.replace(/^\//, ''), this.base).href, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store',
    });
    if (response.ok) return response;
    const failure = await failureOf(response);
    if (failure.keyRefused) this.onKeyRefused(failure);
    throw failure;
  }
}
