// What services and the database's RPCs refuse, in the service's own terms: a code and a message. The
// HTTP layer maps each code to its status and error code in one place (http/errors.ts), so services and
// the database layer know nothing of HTTP.
export type DomainErrorCode = 'validation_failed' | 'insufficient_balance' | 'forbidden' | 'not_found' | 'conflict' | 'idempotency_key_reused'

export class DomainError extends Error {
  override name = 'DomainError'
  readonly code: DomainErrorCode
  readonly details: Record<string, unknown>
  constructor(code: DomainErrorCode, message: string, details: Record<string, unknown> = {}, options?: ErrorOptions) {
    super(message, options)
    this.code = code
    this.details = details
  }
}

/** The code of a refusal, or null for anything else (a bug, a dependency down). */
export const refusalCode = (err: unknown): DomainErrorCode | null => (err instanceof DomainError ? err.code : null)
