// Supabase Auth's errors (from supabase-js) as our API errors.
import { ApiError, ErrorCode } from '../http/errors.ts'

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
function rateLimited(error: AuthErrorLike, context: string, limits: AuthLimits): ApiError {
  const code = error.code ?? ''
  const after = /after (\d+) seconds?/.exec(error.message)
  const [retryAfter, limit, window] = after && code === 'over_email_send_rate_limit'
    ? [Number(after[1]), 1, `${limits.emailSpacingSeconds}s`]
    : code === 'over_email_send_rate_limit'
    ? [Math.ceil(3600 / Math.max(1, limits.emailsPerHour)), limits.emailsPerHour, '1h']
    : [Math.ceil(300 / Math.max(1, limits.perFiveMinutes)), limits.perFiveMinutes, '5m']
  const what = after ? `${context} for this address` : `${context} attempts from this address`
  return new ApiError(ErrorCode.RATE_LIMITED, `Too many ${what}; retry in ${retryAfter} s`, {
    details: { retry_after: retryAfter, limit, window, auth_error: code },
    headers: { 'Retry-After': String(retryAfter) },
  })
}

export function fromAuthError(
  error: AuthErrorLike,
  context: string,
  limits: AuthLimits = { perFiveMinutes: 30, emailsPerHour: 30, emailSpacingSeconds: 60 },
): ApiError {
  const code = error.code ?? ''
  switch (code) {
    case 'user_already_exists':
    case 'email_exists':
      return new ApiError(ErrorCode.CONFLICT, 'An account with this email already exists')
    case 'weak_password':
      return new ApiError(ErrorCode.VALIDATION_FAILED, error.message, { details: { fields: [{ field: 'password', message: error.message }] } })
    case 'validation_failed':
    case 'email_address_invalid':
      return new ApiError(ErrorCode.VALIDATION_FAILED, error.message)
    case 'invalid_credentials':
      return new ApiError(ErrorCode.INVALID_CREDENTIALS, 'Invalid email or password')
    case 'email_not_confirmed':
      return new ApiError(ErrorCode.FORBIDDEN, 'Email not confirmed')
    case 'user_banned':
      return new ApiError(ErrorCode.FORBIDDEN, 'This account is suspended')
    case 'user_not_found':
      return new ApiError(ErrorCode.NOT_FOUND, 'User not found')
  }
  const status = error.status ?? 0
  if (status === 429) return rateLimited(error, context, limits)
  if (error.name === 'AuthRetryableFetchError' || status === 0 || status >= 500) {
    return new ApiError(ErrorCode.SERVICE_UNAVAILABLE, `Authentication service unavailable (${context}), please retry`, { headers: { 'Retry-After': '5' } })
  }
  return new ApiError(ErrorCode.BAD_REQUEST, error.message || `${context} failed`)
}
