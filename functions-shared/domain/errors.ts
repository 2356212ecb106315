// What services and the database's RPCs refuse, in the service's own terms: a code, a message, details,
// and when a retry may succeed. The HTTP layer maps each code to its status and error code in one place
// (http/errors.ts), so services and the database layer know nothing of HTTP.
export type DomainErrorCode =
  | 'validation_failed'
  | 'bad_request'
  | 'unauthorized'
  | 'invalid_credentials'
  | 'insufficient_balance'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'idempotency_key_reused'
  | 'unsupported_media_type'
  | 'rate_limited'
  | 'daily_limit_reached'
  | 'internal_error'
  | 'service_unavailable'

export interface DomainErrorOptions extends ErrorOptions {
  /** seconds after which the same request may succeed (a limit's window, a dependency's recovery) */
  retryAfter?: number
}

export class DomainError extends Error {
  override name = 'DomainError'
  readonly code: DomainErrorCode
  readonly details: Record<string, unknown>
  readonly retryAfter: number | undefined
  constructor(code: DomainErrorCode, message: string, details: Record<string, unknown> = {}, options: DomainErrorOptions = {}) {
    super(message, options)
    this.code = code
    this.details = details
    this.retryAfter = options.retryAfter
  }
}

/** The code of a refusal, or null for anything else (a bug, a dependency down). */
export const refusalCode = (err: unknown): DomainErrorCode | null => (err instanceof DomainError ? err.code : null)
