/**
 * The one error type of the wire: every failure a client can cause maps to a code and an HTTP
 * status here, so the HTTP routes and the WebSocket handler report the same thing.
 */
export type ErrorCode =
  | "INVALID_JSON"
  | "VALIDATION_ERROR"
  | "UNKNOWN_TYPE"
  | "UNKNOWN_ENV"
  | "UNKNOWN_EPISODE"
  | "EPISODE_EXISTS"
  | "EPISODE_DONE"
  | "PAYLOAD_TOO_LARGE"
  | "CAPACITY_REACHED"
  | "OVERLOADED"
  | "UNAUTHORIZED"
  | "FORBIDDEN"
  | "UNSUPPORTED_MEDIA_TYPE"
  | "NOT_FOUND"
  | "METHOD_NOT_ALLOWED"
  | "EXECUTION_ERROR"
  | "INTERNAL_ERROR";

const STATUS: Record<ErrorCode, number> = {
  INVALID_JSON: 400,
  VALIDATION_ERROR: 400,
  UNKNOWN_TYPE: 400,
  UNKNOWN_ENV: 404,
  UNKNOWN_EPISODE: 404,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  EPISODE_EXISTS: 409,
  EPISODE_DONE: 409,
  PAYLOAD_TOO_LARGE: 413,
  // A JSON route sent a body that is not application/json (a form post, a text/plain fetch).
  UNSUPPORTED_MEDIA_TYPE: 415,
  CAPACITY_REACHED: 429,
  // The memory budget is used up: retry after a while (Retry-After), nothing was lost.
  OVERLOADED: 503,
  UNAUTHORIZED: 401,
  // A browser request from another origin, or a Host name that is not this server's (browser-guards.ts).
  FORBIDDEN: 403,
  // An environment's own code failed on this request (respond, reset, a generator): reported with
  // the code and logged with the stack, never a crash. Not 5xx: retrying the same request fails
  // the same way, and the episode is kept as it was.
  EXECUTION_ERROR: 422,
  INTERNAL_ERROR: 500,
};

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details: unknown;

  /** `options.cause`: the environment's own error, whose stack the server logs (never sent). */
  constructor(code: ErrorCode, message: string, details?: unknown, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "ApiError";
    this.code = code;
    // Environment code that ran out of time is a gateway timeout, not a server fault.
    this.status = code === "EXECUTION_ERROR" && reasonOf(details) === "TIMEOUT" ? 504 : STATUS[code];
    this.details = details;
  }

  /** The finer reason carried in details (`{reason: "TIMEOUT"}`), if any. */
  get reason(): string | undefined {
    return reasonOf(this.details);
  }

  toJSON(): { error: { code: ErrorCode; message: string; details?: unknown } } {
    return {
      error: {
        code: this.code,
        message: this.message,
        ...(this.details === undefined ? {} : { details: this.details }),
      },
    };
  }
}

function reasonOf(details: unknown): string | undefined {
  const r = details && typeof details === "object" ? (details as { reason?: unknown }).reason : undefined;
  return typeof r === "string" ? r : undefined;
}

/** Any thrown value as an ApiError; unknown failures become INTERNAL_ERROR without leaking stacks. */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new ApiError("INTERNAL_ERROR", message);
}
