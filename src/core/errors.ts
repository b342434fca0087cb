/**
 * The one kind of error the API returns. Domain code throws these; the HTTP layer turns them (and
 * anything unexpected) into the contract's body: `{"error": {"code", "message", "field"?}}`.
 */

/** An HTTP status from 400 to 599: the contract's own, and whatever an injected fault asks for. */
export type ErrorStatus = number;

export class ApiError extends Error {
  readonly status: ErrorStatus;
  readonly code: string;
  readonly field: string | undefined;
  /** Extra response headers, for example `Retry-After` on a 429. */
  readonly headers: Record<string, string>;

  constructor(
    status: ErrorStatus,
    code: string,
    message: string,
    options: { field?: string; headers?: Record<string, string> } = {},
  ) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.field = options.field;
    this.headers = options.headers ?? {};
  }

  toBody(): ErrorBody {
    return {
      error: {
        code: this.code,
        message: this.message,
        ...(this.field === undefined ? {} : { field: this.field }),
      },
    };
  }
}

export interface ErrorBody {
  error: { code: string; message: string; field?: string };
}

export const notFound = (what: string, id: string): ApiError =>
  new ApiError(404, 'not_found', `No ${what} with id '${id}' exists in this account.`);

export const invalidField = (field: string, message: string): ApiError =>
  new ApiError(422, 'invalid_field', message, { field });

export const missingField = (field: string): ApiError =>
  new ApiError(422, 'missing_field', `'${field}' is required.`, { field });

export const invalidParameter = (field: string, message: string): ApiError =>
  new ApiError(400, 'invalid_parameter', message, { field });

/** A setting (a flag, a variable, a file it names) that the sandbox cannot start with. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}
