/**
 * How the control commands talk to a running sandbox: one small helper over `fetch`, so that the
 * typed client (`src/client/`) can take its place in this one file.
 */

/** Where the sandbox is and who calls it (`--url`, `--key`). */
export interface Connection {
  /** The sandbox's origin, `http://127.0.0.1:4010`; a `/v1` at the end is dropped. */
  url: string;
  key: string;
}

/** An answer: the parsed document, and its text exactly as the sandbox sent it (for `--json`). */
export interface Answer<T> {
  status: number;
  data: T;
  text: string;
}

/** The contract's error body. */
export interface ErrorBody {
  error: { code: string; message: string; field?: string };
}

/** The sandbox answered with an error: its status and the contract's body. */
export class SandboxError extends Error {
  constructor(
    readonly status: number,
    readonly body: ErrorBody,
    readonly text: string,
  ) {
    super(body.error.message);
  }

  /** `404 not_found`, `422 invalid_field, field by`: what a script greps for. */
  get summary(): string {
    const { code, field } = this.body.error;
    return `${this.status} ${code}${field === undefined ? '' : `, field ${field}`}`;
  }
}

/** Nothing answered at the URL, or something that is not the sandbox did. */
export class UnreachableError extends Error {}

export class SandboxApi {
  readonly origin: string;

  constructor(private readonly connection: Connection) {
    this.origin = originOf(connection.url);
  }

  get<T>(path: string): Promise<Answer<T>> {
    return this.call<T>('GET', path);
  }

  post<T>(path: string, body: unknown = {}, options: { bearer?: string | null } = {}): Promise<Answer<T>> {
    return this.call<T>('POST', path, body, options.bearer);
  }

  delete<T>(path: string): Promise<Answer<T>> {
    return this.call<T>('DELETE', path);
  }

  /**
   * A stream of server-sent events (`GET /_sandbox/requests/stream`): the answer, open, once the
   * sandbox has accepted the key; its body is the stream. `signal` ends it.
   */
  async stream(path: string, signal?: AbortSignal): Promise<Response> {
    const response = await this.send('GET', path, { accept: 'text/event-stream' }, undefined, signal);
    const mediaType = response.headers.get('content-type')?.split(';')[0]?.trim();
    if (response.ok && mediaType === 'text/event-stream') return response;
    // A refusal is the contract's JSON error: read as any other answer.
    await this.read(response, 'GET', path);
    throw new UnreachableError(
      `${this.origin} answered GET ${path} with ${response.status} and no event stream: is --url the sandbox's address?`,
    );
  }

  /**
   * `bearer` replaces the key (the admin token that creating accounts may need); `null` sends none.
   */
  private async call<T>(
    method: string,
    path: string,
    body?: unknown,
    bearer?: string | null,
  ): Promise<Answer<T>> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const response = await this.send(method, path, headers, body, undefined, bearer);
    return this.read<T>(response, method, path);
  }

  private async send(
    method: string,
    path: string,
    headers: Record<string, string>,
    body?: unknown,
    signal?: AbortSignal,
    bearer?: string | null,
  ): Promise<Response> {
    const token = bearer === undefined ? this.connection.key : bearer;
    try {
      return await fetch(`${this.origin}${path}`, {
        method,
        headers: token === null ? headers : { ...headers, authorization: `Bearer ${token}` },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal,
      });
    } catch (error) {
      if (signal?.aborted) throw error;
      const reason = (error as { cause?: { code?: string; message?: string } }).cause;
      throw new UnreachableError(
        `cannot reach the sandbox at ${this.origin} (${reason?.code ?? reason?.message ?? (error as Error).message}); ` +
          'is it running? Start one with `shipping-sandbox`, or point --url (SHIPPING_SANDBOX_URL) at yours.',
      );
    }
  }

  /** The answer's JSON, or the sandbox's refusal as a SandboxError. */
  private async read<T>(response: Response, method: string, path: string): Promise<Answer<T>> {
    const text = await response.text();
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch {
      throw new UnreachableError(
        `${this.origin} answered ${method} ${path} with ${response.status} and no JSON: is --url the sandbox's address?`,
      );
    }
    if (!response.ok) {
      if (isErrorBody(data)) throw new SandboxError(response.status, data, text);
      throw new UnreachableError(
        `${this.origin} answered ${method} ${path} with ${response.status} and no error body: is --url the sandbox's address?`,
      );
    }
    return { status: response.status, data: data as T, text };
  }
}

/** `http://127.0.0.1:4010/v1/` (the banner's API line) and `http://127.0.0.1:4010` are both the origin. */
export function originOf(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new TypeError(`'${url}' is not a URL (such as http://127.0.0.1:4010)`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw new TypeError(`'${url}' is not an http or https URL`);
  return `${parsed.origin}${parsed.pathname.replace(/\/+$/, '').replace(/\/v1$/, '')}`;
}

function isErrorBody(data: unknown): data is ErrorBody {
  const error = (data as ErrorBody | null)?.error;
  return typeof error?.code === 'string' && typeof error.message === 'string';
}
