/**
 * The one kind of error the API returns. Domain code throws these; the error handler in
 * `error-handler.ts` turns them (and anything unexpected) into the contract's body:
 * `{"error": {"code", "message", "field"?}}`.
 */
import type { ContentfulStatusCode } from 'hono/utils/http-status';

/** Any status with a body; the contract's own are 400, 401, 403, 404, 422, 429 and 500, faults add others. */
export type ErrorStatus = ContentfulStatusCode;

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
