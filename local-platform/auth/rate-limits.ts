// The local auth server's rate limits, as GoTrue applies them: a token bucket per client IP for each kind
// of request (sign-in and sign-up, token refresh, verification; MFA challenges and verifications per minute), refilled at the configured number per
// five minutes with a burst of 30, and the recovery emails per hour. Differences, on purpose: GoTrue
// counts password sign-ins with token refreshes (150 per 5 minutes); here they count with sign-ups (30),
// as Supabase documents `sign_in_sign_ups` — the stricter reading against guessing. GoTrue counts the
// emails for the whole project, and only those it sends (to an address with an account): one client
// could use up the hour's emails for everyone, and a 429 for an address, where an unknown one got 200,
// said that it has an account. Here the emails are counted per client IP, and an address gets one every
// AUTH_EMAIL_MAX_FREQUENCY_SECONDS (GoTrue's SMTP_MAX_FREQUENCY), whether it has an account or not. The client IP is the
// socket's (or X-Forwarded-For's with TRUST_PROXY); GoTrue's Sb-Forwarded-For is believed only from the
// service's own identity endpoints, which call in process and forward their client's address.
import type { Context } from 'hono'
import { LRUCache } from 'lru-cache'
import type { Deps } from '../../functions-shared/deps.ts'
import { clientIp } from '../../functions-shared/deps.ts'
import { clientKey } from '../../functions-shared/net/client.ts'
import { GoTrueError } from './errors.ts'

export type AuthLimit = 'sign_in_sign_ups' | 'token_refresh' | 'token_verifications' | 'email_sent' | 'mfa_challenge' | 'mfa_verify'

/** The Hono env of a request made in process by the service itself (see scripts/lib/gateway.ts). */
export const TRUSTED_CALLER = 'curriculumTutorTrustedCaller'

interface Bucket {
  tokens: number
  at: number
}

const MINUTE = 60_000
const FIVE_MINUTES = 300_000
const HOUR = 3_600_000
/** GoTrue's burst for the per-five-minute limiters */
const BURST = 30

function parseIp(value: string | undefined): string | null {
  const first = value?.split(',')[0]?.trim()
  return first && /^[0-9a-fA-F:.]+$/.test(first) ? first : null
}

/** The client a request is limited as: its address, an IPv6 one by its /64 and loopback as one (net/client.ts). */
export function authClientIp(deps: Deps, c: Context): string {
  const trusted = (c.env as Record<string, unknown> | undefined)?.[TRUSTED_CALLER] === true
  return clientKey((trusted && parseIp(c.req.header('sb-forwarded-for'))) || clientIp(deps, c))
}

export function authRateLimits(deps: Deps) {
  const { config, clock } = deps
  const rules: Record<AuthLimit, { perWindow: number; windowMs: number; burst: number }> = {
    sign_in_sign_ups: {
      perWindow: config.AUTH_RATE_LIMIT_SIGN_IN_SIGN_UPS,
      windowMs: FIVE_MINUTES,
      burst: Math.min(BURST, config.AUTH_RATE_LIMIT_SIGN_IN_SIGN_UPS),
    },
    token_refresh: { perWindow: config.AUTH_RATE_LIMIT_TOKEN_REFRESH, windowMs: FIVE_MINUTES, burst: Math.min(BURST, config.AUTH_RATE_LIMIT_TOKEN_REFRESH) },
    token_verifications: {
      perWindow: config.AUTH_RATE_LIMIT_TOKEN_VERIFICATIONS,
      windowMs: FIVE_MINUTES,
      burst: Math.min(BURST, config.AUTH_RATE_LIMIT_TOKEN_VERIFICATIONS),
    },
    // GoTrue's burst of 30; a limit set higher raises the burst with it
    mfa_challenge: { perWindow: config.AUTH_RATE_LIMIT_MFA, windowMs: MINUTE, burst: Math.max(BURST, config.AUTH_RATE_LIMIT_MFA) },
    mfa_verify: { perWindow: config.AUTH_RATE_LIMIT_MFA, windowMs: MINUTE, burst: Math.max(BURST, config.AUTH_RATE_LIMIT_MFA) },
    email_sent: { perWindow: config.AUTH_RATE_LIMIT_EMAIL_SENT, windowMs: HOUR, burst: config.AUTH_RATE_LIMIT_EMAIL_SENT },
  }
  // idle buckets are forgotten after an hour (they are full by then), as GoTrue's limiters expire
  const buckets = new LRUCache<string, Bucket>({ max: 100_000, ttl: HOUR })
  // when each address was last sent a recovery email
  const sentTo = new LRUCache<string, number>({ max: 100_000, ttl: HOUR })

  /** Takes one token for `key` under `limit`; the seconds until one is back when there is none. */
  function take(limit: AuthLimit, key: string): number | null {
    const rule = rules[limit]
    const now = clock.now()
    const id = `${limit}:${key}`
    const rate = rule.perWindow / rule.windowMs // tokens per ms
    const b = buckets.get(id) ?? { tokens: rule.burst, at: now }
    b.tokens = Math.min(rule.burst, b.tokens + (now - b.at) * rate)
    b.at = now
    if (b.tokens < 1) {
      buckets.set(id, b)
      return Math.max(1, Math.ceil((1 - b.tokens) / rate / 1000))
    }
    b.tokens -= 1
    buckets.set(id, b)
    return null
  }

  return {
    /** Refuses the request (GoTrue's 429) when the client's bucket for `limit` is empty. */
    check(c: Context, limit: AuthLimit): void {
      const retryAfter = take(limit, authClientIp(deps, c))
      if (retryAfter === null) return
      if (limit === 'email_sent') {
        throw new GoTrueError(429, 'over_email_send_rate_limit', 'email rate limit exceeded', {}, { 'Retry-After': String(retryAfter) })
      }
      throw new GoTrueError(429, 'over_request_rate_limit', 'Request rate limit reached', {}, { 'Retry-After': String(retryAfter) })
    },
    /** Refuses a second email to one address within AUTH_EMAIL_MAX_FREQUENCY_SECONDS (GoTrue's 429). */
    checkAddress(email: string): void {
      const spacing = config.AUTH_EMAIL_MAX_FREQUENCY_SECONDS * 1000
      if (spacing === 0) return
      const now = clock.now()
      const last = sentTo.get(email)
      if (last !== undefined && now - last < spacing) {
        const seconds = Math.max(1, Math.ceil((spacing - (now - last)) / 1000))
        throw new GoTrueError(429, 'over_email_send_rate_limit', `For security purposes, you can only request this after ${seconds} seconds.`, {}, {
          'Retry-After': String(seconds),
        })
      }
      sentTo.set(email, now)
    },
  }
}
