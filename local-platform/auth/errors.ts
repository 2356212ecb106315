// Errors as GoTrue writes them: with `X-Supabase-Api-Version: 2024-01-01` (supabase-js always sends
// it) the header is echoed and the body is {code, message}; without it, the legacy shape. Client errors
// are never 5xx, because supabase-js retries 5xx.
import type { Context } from 'hono'
import { isPgError } from '../../functions-shared/db/tx.ts'

export class GoTrueError extends Error {
  override name = 'GoTrueError'
  readonly status: number
  readonly code: string
  readonly extra: Record<string, unknown>
  readonly headers: Record<string, string>
  constructor(status: number, code: string, message: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
    super(message)
    this.status = status
    this.code = code
    this.extra = extra
    this.headers = headers
  }
}

const API_VERSION = '2024-01-01'

export function goTrueErrorResponse(err: Error, c: Context): Response {
  const known = err instanceof GoTrueError
  if (!known) c.get('log')?.error({ err: { name: err.name, message: err.message, stack: err.stack } }, 'local auth: unexpected error')
  const status = known ? err.status : 500
  const code = known ? err.code : 'unexpected_failure'
  const message = known ? err.message : 'Unexpected failure, please check server logs for more information'
  const extra = known ? err.extra : {}
  const headers: Record<string, string> = { 'x-sb-error-code': code, ...(known ? err.headers : {}) }
  const version = c.req.header('x-supabase-api-version')
  if (version && version >= API_VERSION) {
    headers['X-Supabase-Api-Version'] = API_VERSION
    return c.json({ code, message, ...extra }, status as 400, headers)
  }
  return c.json({ code: status, error_code: code, msg: message, ...extra }, status as 400, headers)
}

export const errors = {
  badJson: () => new GoTrueError(400, 'bad_json', 'Could not parse request body as JSON'),
  validation: (message: string) => new GoTrueError(400, 'validation_failed', message),
  invalidCredentials: () => new GoTrueError(400, 'invalid_credentials', 'Invalid login credentials'),
  noAuthorization: () => new GoTrueError(401, 'no_authorization', 'This endpoint requires a valid Bearer token'),
  badJwt: (detail: string) => new GoTrueError(403, 'bad_jwt', `invalid JWT: unable to parse or verify signature, ${detail}`),
  notAdmin: () => new GoTrueError(403, 'not_admin', 'User not allowed'),
  userNotFound: () => new GoTrueError(404, 'user_not_found', 'User not found'),
  weakPassword: (min: number) =>
    new GoTrueError(422, 'weak_password', `Password should be at least ${min} characters.`, { weak_password: { reasons: ['length'] } }),
}

/**
 * A unique violation on auth.users.email as 422 email_exists: another account took the address between
 * the check and the write (two requests at once), which the unique index decides; any other error as is.
 */
export function emailTaken(err: unknown): never {
  if (isPgError(err, '23505')) throw new GoTrueError(422, 'email_exists', 'A user with this email address has already been registered')
  throw err
}
