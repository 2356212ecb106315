// One error class, one code-to-status table, one body shape:
// {"error": "<code>", "message": "...", "request_id": "...", ...details}
import type { Context } from 'hono'
import { HTTPException } from 'hono/http-exception'
import { DomainError, type DomainErrorCode } from '../domain/errors.ts'

export const ErrorCode = {
  VALIDATION_FAILED: 'validation_failed',
  BAD_REQUEST: 'bad_request',
  UNAUTHORIZED: 'unauthorized',
  INVALID_CREDENTIALS: 'invalid_credentials',
  INSUFFICIENT_BALANCE: 'insufficient_balance',
  FORBIDDEN: 'forbidden',
  NOT_FOUND: 'not_found',
  METHOD_NOT_ALLOWED: 'method_not_allowed',
  CONFLICT: 'conflict',
  IDEMPOTENCY_KEY_REUSED: 'idempotency_key_reused',
  PAYLOAD_TOO_LARGE: 'payload_too_large',
  UNSUPPORTED_MEDIA_TYPE: 'unsupported_media_type',
  RATE_LIMITED: 'rate_limited',
  DAILY_LIMIT_REACHED: 'daily_limit_reached',
  INTERNAL_ERROR: 'internal_error',
  SERVICE_UNAVAILABLE: 'service_unavailable',
} as const
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode]

export type ErrorStatus = 400 | 401 | 402 | 403 | 404 | 405 | 409 | 413 | 415 | 422 | 429 | 500 | 503

export function statusOf(code: ErrorCode): ErrorStatus {
  switch (code) {
    case ErrorCode.VALIDATION_FAILED:
    case ErrorCode.BAD_REQUEST:
      return 400
    case ErrorCode.UNAUTHORIZED:
    case ErrorCode.INVALID_CREDENTIALS:
      return 401
    case ErrorCode.INSUFFICIENT_BALANCE:
      return 402
    case ErrorCode.FORBIDDEN:
      return 403
    case ErrorCode.NOT_FOUND:
      return 404
    case ErrorCode.METHOD_NOT_ALLOWED:
      return 405
    case ErrorCode.CONFLICT:
      return 409
    case ErrorCode.IDEMPOTENCY_KEY_REUSED:
      return 422
    case ErrorCode.PAYLOAD_TOO_LARGE:
      return 413
    case ErrorCode.UNSUPPORTED_MEDIA_TYPE:
      return 415
    case ErrorCode.RATE_LIMITED:
    case ErrorCode.DAILY_LIMIT_REACHED:
      return 429
    case ErrorCode.INTERNAL_ERROR:
      return 500
    case ErrorCode.SERVICE_UNAVAILABLE:
      return 503
    default: {
      const unreachable: never = code
      return unreachable
    }
  }
}

export class ApiError extends Error {
  override name = 'ApiError'
  readonly code: ErrorCode
  readonly status: ErrorStatus
  readonly details: Record<string, unknown>
  readonly headers: Record<string, string>
  constructor(code: ErrorCode, message: string, options: { details?: Record<string, unknown>; headers?: Record<string, string>; cause?: unknown } = {}) {
    super(message, { cause: options.cause })
    this.code = code
    this.status = statusOf(code)
    this.details = options.details ?? {}
    this.headers = options.headers ?? {}
  }
}

export function errorBody(c: Context, code: string, message: string, details: Record<string, unknown> = {}) {
  return { error: code, message, request_id: c.get('requestId') ?? null, ...details }
}

/** The one place a domain refusal becomes an HTTP error: its code decides the status (the codes are the API's own). */
const DOMAIN_CODES: Record<DomainErrorCode, ErrorCode> = {
  validation_failed: ErrorCode.VALIDATION_FAILED,
  bad_request: ErrorCode.BAD_REQUEST,
  unauthorized: ErrorCode.UNAUTHORIZED,
  invalid_credentials: ErrorCode.INVALID_CREDENTIALS,
  insufficient_balance: ErrorCode.INSUFFICIENT_BALANCE,
  forbidden: ErrorCode.FORBIDDEN,
  not_found: ErrorCode.NOT_FOUND,
  conflict: ErrorCode.CONFLICT,
  idempotency_key_reused: ErrorCode.IDEMPOTENCY_KEY_REUSED,
  unsupported_media_type: ErrorCode.UNSUPPORTED_MEDIA_TYPE,
  rate_limited: ErrorCode.RATE_LIMITED,
  daily_limit_reached: ErrorCode.DAILY_LIMIT_REACHED,
  internal_error: ErrorCode.INTERNAL_ERROR,
  service_unavailable: ErrorCode.SERVICE_UNAVAILABLE,
}

/** An ApiError as is, a DomainError as the ApiError of its code (Retry-After from its retryAfter); null for anything else. */
export function toApiError(err: unknown): ApiError | null {
  if (err instanceof ApiError) return err
  if (err instanceof DomainError) {
    const headers: Record<string, string> = err.retryAfter === undefined ? {} : { 'Retry-After': String(err.retryAfter) }
    return new ApiError(DOMAIN_CODES[err.code], err.message, { details: err.details, headers, cause: err })
  }
  return null
}

/** The app's onError: our errors, then Hono's HTTPException, then a logged 500 without internals. */
export function handleError(raw: Error, c: Context): Response {
  const err = toApiError(raw) ?? raw
  if (err instanceof ApiError) {
    for (const [k, v] of Object.entries(err.headers)) c.header(k, v)
    if (err.status >= 500) c.get('log')?.error({ err: { code: err.code, message: err.message } }, 'request failed')
    return c.json(errorBody(c, err.code, err.message, err.details), err.status)
  }
  if (isDataException(err)) {
    // a value the database refused (class 22: bad text, out-of-range number, malformed uuid...) that no
    // check caught first: still the client's input, so a 400, logged so that the missing check is added
    c.get('log')?.warn({ err: { code: err.code, message: err.message } }, 'input refused by the database')
    return c.json(errorBody(c, ErrorCode.VALIDATION_FAILED, 'A value in the request cannot be stored'), 400)
  }
  if (isRolledBack(err)) {
    // PostgreSQL ended the request's transaction for a concurrent one (a deadlock, or a serialization
    // failure): nothing of it was kept, and the same request can simply be sent again
    c.get('log')?.warn({ err: { code: err.code, message: err.message } }, 'transaction rolled back by a concurrent one')
    c.header('Retry-After', '1')
    return c.json(errorBody(c, ErrorCode.CONFLICT, 'The request met a concurrent change to the same data and nothing of it was kept; send it again'), 409)
  }
  if (err instanceof HTTPException) {
    const status = err.status
    const code = status === 413
      ? ErrorCode.PAYLOAD_TOO_LARGE
      : status === 415
      ? ErrorCode.UNSUPPORTED_MEDIA_TYPE
      : status === 401
      ? ErrorCode.UNAUTHORIZED
      : status === 404
      ? ErrorCode.NOT_FOUND
      : status < 500
      ? ErrorCode.BAD_REQUEST
      : ErrorCode.INTERNAL_ERROR
    // a JSON route's body of another type (text/plain, none): say what the route takes
    const message = status === 413
      ? 'Request body is too large'
      : status === 415
      ? `Unsupported Media Type: send the body as JSON (Content-Type: application/json), not ${c.req.header('content-type') || 'a body without a Content-Type'}`
      : err.message || 'Request failed'
    return c.json(errorBody(c, code, message), status)
  }
  c.get('log')?.error({ err: { name: err.name, message: err.message, stack: err.stack } }, 'unexpected error')
  return c.json(errorBody(c, ErrorCode.INTERNAL_ERROR, 'Internal server error'), 500)
}

/** PostgreSQL's class 40 (transaction rollback): 40001 serialization failure, 40P01 deadlock detected. */
function isRolledBack(err: Error): err is Error & { code: string } {
  const code = (err as { code?: unknown }).code
  return (code === '40001' || code === '40P01') && err.name === 'PostgresError'
}

/**
 * PostgreSQL's class 22 (data exception), raised by a value rather than by the service's state; not its
 * bare 22000, which pgvector raises for vectors of another dimension than the stored ones (a server
 * configured for another embedding model): the server's fault, a 500.
 */
function isDataException(err: Error): err is Error & { code: string } {
  const code = (err as { code?: unknown }).code
  return typeof code === 'string' && /^22[0-9A-Z]{3}$/.test(code) && code !== '22000' && err.name === 'PostgresError'
}

/** A route's path as a pattern: `:param` (with or without its own pattern) one segment, `*` anything. */
const routePattern = (path: string) =>
  new RegExp(
    `^${
      path.replace(/[.+?^${}()|[\]\\]/g, (ch) => (ch === '{' || ch === '}' ? ch : `\\${ch}`)).replace(/:[A-Za-z_][A-Za-z0-9_]*(\{[^}]*\})?\\?\??/g, '[^/]+')
        .replace(/\*/g, '.*')
    }/?$`,
  )

/**
 * No route for this method and path: 404, or 405 with Allow when the path has routes for other methods
 * (supabase-js's functions.invoke POSTs unless told `{ method: 'GET' }`, which then says so).
 */
export function notFound(c: Context, routes: readonly { method: string; path: string }[] = []): Response {
  const path = new URL(c.req.url).pathname
  const allowed = [...new Set(routes.filter((r) => r.method !== 'ALL' && routePattern(r.path).test(path)).map((r) => r.method))]
  if (allowed.length > 0 && !allowed.includes(c.req.method)) {
    c.header('Allow', allowed.join(', '))
    const name = path.replace(/^.*?\/functions\/v1\//, '').replace(/^\//, '')
    const hint = allowed.includes('GET') ? `; with supabase-js: functions.invoke('${name}', { method: 'GET' })` : ''
    return c.json(errorBody(c, ErrorCode.METHOD_NOT_ALLOWED, `${path} takes ${allowed.join(', ')}, not ${c.req.method}${hint}`, { allowed }), 405)
  }
  return c.json(errorBody(c, ErrorCode.NOT_FOUND, `No route for ${c.req.method} ${path}`), 404)
}
