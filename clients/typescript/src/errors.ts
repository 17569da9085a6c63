/**
 * `SandboxError`: what every failed call throws.
 */

/** The HTTP status the API gives each error code (used for errors that
 * arrive inside a stream, after the 200 was sent). */
export const STATUS_OF_CODE: Readonly<Record<string, number>> = {
  invalid_argument: 400,
  usage: 400,
  unauthorized: 401,
  permission_denied: 403,
  denied: 403,
  path_not_found: 404,
  session_not_found: 404,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  precondition_failed: 412,
  too_large: 413,
  unsupported_media_type: 415,
  not_a_regular_file: 422,
  limit: 429,
  io_error: 500,
  node_unreachable: 503,
};

/**
 * A call the node refused or could not complete.
 *
 * - `status`: the HTTP status of the answer. For an error line inside an
 *   NDJSON stream (the 200 was already sent) it is the status the API gives
 *   that `code` (`STATUS_OF_CODE`, 500 when unknown). 0 when no answer came
 *   (the node could not be reached, or a stream ended early).
 * - `code`: the API's error code (`path_not_found`, `precondition_failed`,
 *   …); for failures of the client itself: `network_error` (no answer),
 *   `incomplete_stream` (a stream ended before its last line),
 *   `bad_response` (an answer that is not what the API says),
 *   `invalid_argument` (a path the client cannot put in a URL).
 * - `message`: the API's message.
 */
export class SandboxError extends Error {
  readonly status: number;
  readonly code: string;
  /** The parsed error body, when there was one. */
  readonly body: unknown;

  constructor(status: number, code: string, message: string, options?: { cause?: unknown; body?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'SandboxError';
    this.status = status;
    this.code = code;
    this.body = options?.body;
  }

  /** An error line of an NDJSON stream. */
  static fromStreamLine(line: { code?: unknown; message?: unknown }): SandboxError {
    const code = typeof line.code === 'string' ? line.code : 'io_error';
    const message = typeof line.message === 'string' ? line.message : code;
    return new SandboxError(STATUS_OF_CODE[code] ?? 500, code, message, { body: line });
  }
}
