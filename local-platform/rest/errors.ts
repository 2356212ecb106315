// Errors of the /rest/v1 subset in PostgREST's shape ({code, message, details, hint}) and codes:
// PGRST1xx for requests it cannot read or that are outside the subset, PGRST2xx for what is not in
// the schema, PGRST3xx for JWTs; PostgreSQL's SQLSTATE for what the database refused (42501 for
// privileges: 401 for anon, 403 for a signed-in role).
import { isPgError } from '../../functions-shared/db/tx.ts'

export class RestError extends Error {
  readonly status: number
  readonly code: string
  /** a sentence, or (PGRST201) the list of relationships PostgREST gives */
  readonly details: string | unknown[] | null
  readonly hint: string | null
  constructor(status: number, code: string, message: string, details: string | unknown[] | null = null, hint: string | null = null) {
    super(message)
    this.status = status
    this.code = code
    this.details = details
    this.hint = hint
  }
}

/** A request this gateway's subset does not serve: a clear 400 that says so. */
export const outsideSubset = (what: string) =>
  new RestError(
    400,
    'PGRST100',
    `${what} is outside the /rest/v1 subset of the local gateway`,
    null,
    'Hosted Supabase projects serve the whole of PostgREST; see docs/app-developers.md, "/rest/v1 locally"',
  )

export const badRequest = (message: string, details: string | null = null) => new RestError(400, 'PGRST100', message, details)

/** A database error as PostgREST answers it. */
export function fromDatabase(err: unknown, role: string): RestError {
  if (!isPgError(err)) throw err
  const e = err as Error & { code: string; detail?: string; hint?: string }
  const status = (() => {
    if (e.code === '42501') return role === 'anon' ? 401 : 403
    if (e.code === '23505' || e.code === '23503') return 409
    // a write in a read-only transaction (a function that writes, called by GET)
    if (e.code === '25006') return 405
    if (e.code === 'PT402') return 402
    if (e.code === 'PT404' || e.code === '42883' || e.code === '42P01') return 404
    if (e.code === 'PT409') return 409
    if (/^(22|23|42|P0|PT)/.test(e.code)) return 400
    return 500
  })()
  return new RestError(status, e.code, e.message, e.detail ?? null, e.hint ?? null)
}
