// Supabase Auth's errors (from supabase-js) as the service's refusals.
import { DomainError } from '../domain/errors.ts'

interface AuthErrorLike {
  name?: string
  message: string
  status?: number
  code?: string
}

/** Auth's configured limits, named in a 429. */
export interface AuthLimits {
  /** sign-ins and sign-ups per client, per five minutes */
  perFiveMinutes: number
  /** emails per client, per hour */
  emailsPerHour: number
  /** the spacing of two emails to one address, in seconds (GoTrue's SMTP_MAX_FREQUENCY) */
  emailSpacingSeconds: number
}

/**
 * The 429 of one of Auth's limits, each with its own window and wait: the spacing of emails to one
 * address (Auth says the seconds left: "you can only request this after 42 seconds"), the emails a client
 * may ask for per hour, the requests per five minutes. The two budgets are token buckets that refill
 * evenly: one more request is allowed at the latest after the window divided by the limit.
 */
function rateLimited(error: AuthErrorLike, context: string, limits: AuthLimits): DomainError {
  const code = error.code ?? ''
  const after = /after (\d+) seconds?/.exec(error.message)
  const [retryAfter, limit, window] = after && code === 'over_email_send_rate_limit'
    ? [Number(after[1]), 1, `${limits.emailSpacingSeconds}s`]
    : code === 'over_email_send_rate_limit'
    ? [Math.ceil(3600 / Math.max(1, limits.emailsPerHour)), limits.emailsPerHour, '1h']
    : [Math.ceil(300 / Math.max(1, limits.perFiveMinutes)), limits.perFiveMinutes, '5m']
  const what = after ? `${context} for this address` : `${context} attempts from this address`
  return new DomainError('rate_limited', `Too many ${what}; retry in ${retryAfter} s`, { retry_after: retryAfter, limit, window, auth_error: code }, {
    retryAfter,
  })
}

export function fromAuthError(
  error: AuthErrorLike,
  context: string,
  limits: AuthLimits = { perFiveMinutes: 30, emailsPerHour: 30, emailSpacingSeconds: 60 },
): DomainError {
  const code = error.code ?? ''
  switch (code) {
    case 'user_already_exists':
    case 'email_exists':
      return new DomainError('conflict', 'An account with this email already exists')
    case 'weak_password':
      return new DomainError('validation_failed', error.message, { fields: [{ field: 'password', message: error.message }] })
    case 'validation_failed':
    case 'email_address_invalid':
      return new DomainError('validation_failed', error.message)
    case 'invalid_credentials':
      return new DomainError('invalid_credentials', 'Invalid email or password')
    case 'email_not_confirmed':
      return new DomainError('forbidden', 'Email not confirmed')
    case 'user_banned':
      return new DomainError('forbidden', 'This account is suspended')
    case 'user_not_found':
      return new DomainError('not_found', 'User not found')
  }
  const status = error.status ?? 0
  if (status === 429) return rateLimited(error, context, limits)
  if (error.name === 'AuthRetryableFetchError' || status === 0 || status >= 500) {
    return new DomainError('service_unavailable', `Authentication service unavailable (${context}), please retry`, {}, { retryAfter: 5 })
  }
  return new DomainError('bad_request', error.message || `${context} failed`)
}
