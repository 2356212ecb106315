// Supabase Auth's errors (from supabase-js) as our API errors.
import { ApiError, ErrorCode } from '../http/errors.ts'

interface AuthErrorLike {
  name?: string
  message: string
  status?: number
  code?: string
}

/** `limits`: Auth's configured limits, named in a 429 (sign-ins and sign-ups per 5 minutes, emails per hour). */
export function fromAuthError(error: AuthErrorLike, context: string, limits: { perFiveMinutes: number; emailsPerHour: number } = { perFiveMinutes: 30, emailsPerHour: 30 }): ApiError {
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
  if (status === 429) {
    // Auth's own per-client limit (its window is five minutes, or an hour for emails)
    const email = code === 'over_email_send_rate_limit'
    const retryAfter = email ? 3600 : 60
    return new ApiError(ErrorCode.RATE_LIMITED, `Too many ${context} attempts from this address; retry later`, {
      details: { retry_after: retryAfter, limit: email ? limits.emailsPerHour : limits.perFiveMinutes, window: email ? '1h' : '5m', auth_error: code },
      headers: { 'Retry-After': String(retryAfter) },
    })
  }
  if (error.name === 'AuthRetryableFetchError' || status === 0 || status >= 500) {
    return new ApiError(ErrorCode.SERVICE_UNAVAILABLE, `Authentication service unavailable (${context}), please retry`, { headers: { 'Retry-After': '5' } })
  }
  return new ApiError(ErrorCode.BAD_REQUEST, error.message || `${context} failed`)
}
