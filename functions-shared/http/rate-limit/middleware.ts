// Per-scope sliding-window limits (spec §8.1). 429 body as spec §7.1, plus Retry-After.
import type { Context, MiddlewareHandler } from 'hono'
import type { Clock } from '../../lib/clock.ts'
import { ApiError, ErrorCode } from '../errors.ts'
import { principalKey } from '../auth.ts'
import type { RateLimitStore } from './store.ts'
import '../context.ts'

export type RateLimitScope = 'chat' | 'wallet' | 'upload' | 'auth' | 'admin' | 'public' | 'profile' | 'rest' | 'turns'

export interface RateLimitOptions {
  scope: RateLimitScope
  limit: number
  windowMs: number
  store: RateLimitStore
  clock: Clock
  /** per user (after an auth guard) or per client IP */
  by: 'principal' | 'ip'
  clientIp: (c: Context) => string
}

export function windowLabel(windowMs: number): string {
  const seconds = Math.round(windowMs / 1000)
  return seconds % 60 === 0 ? `${seconds / 60}m` : `${seconds}s`
}

export function rateLimit(options: RateLimitOptions): MiddlewareHandler {
  const { scope, limit, windowMs, store, clock } = options
  const window = windowLabel(windowMs)
  return async function rateLimit(c, next) {
    const subject = options.by === 'ip' ? `ip:${options.clientIp(c)}` : principalKey(c.get('principal'))
    let decision
    try {
      decision = await store.hit(`${scope}:${subject}`, limit, windowMs, clock.now())
    } catch (err) {
      // The limiter failing must not take the API down with it: let the request through, loudly.
      c.get('log').error({ err: { message: (err as Error).message }, scope }, 'rate-limit store failed; request allowed')
      return next()
    }
    c.header('X-RateLimit-Limit', String(limit))
    c.header('X-RateLimit-Remaining', String(decision.remaining))
    if (!decision.allowed) {
      const retryAfter = Math.max(1, Math.ceil(decision.retryAfterMs / 1000))
      throw new ApiError(ErrorCode.RATE_LIMITED, `Too many requests: at most ${limit} per ${window} for ${scope} endpoints`, {
        details: { retry_after: retryAfter, limit, window },
        headers: { 'Retry-After': String(retryAfter) },
      })
    }
    await next()
  }
}
