// Bearer-token verification and the requireUser / requireAdmin guards.
// Roles come from app_metadata.role (filled by the access-token hook). user_metadata.role is read only
// while app_metadata.role is absent, and never grants admin: users can write their own user_metadata.
import type { MiddlewareHandler } from 'hono'
import { createRemoteJWKSet, errors as joseErrors, type JWTPayload, jwtVerify, type JWTVerifyGetKey } from 'jose'
import { LRUCache } from 'lru-cache'
import { ApiError, ErrorCode } from './errors.ts'
import type { Clock } from '../lib/clock.ts'
import type { Principal, Role } from './context.ts'
import { ROLES } from '../domain/enums.ts'

export type { Role } from './context.ts'

export type { Principal } from './context.ts'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value)
}

function metadataRole(claims: JWTPayload, key: 'app_metadata' | 'user_metadata'): unknown {
  const meta = claims[key]
  return meta && typeof meta === 'object' ? (meta as Record<string, unknown>).role : undefined
}

export function roleFromClaims(claims: JWTPayload): Role {
  const appRole = metadataRole(claims, 'app_metadata')
  if (appRole !== undefined && appRole !== null) return isRole(appRole) ? appRole : 'student'
  const userRole = metadataRole(claims, 'user_metadata')
  return userRole === 'teacher' || userRole === 'student' ? userRole : 'student'
}

export interface TokenVerifier {
  /** Verifies signature, algorithm and expiry and classifies the token; throws ApiError 401 otherwise. */
  verify(token: string): Promise<Principal>
  /** Verifies signature, algorithm and expiry and returns the claims of any role (anon keys too). */
  claims(token: string): Promise<JWTPayload>
}

/**
 * The tokens whose signature a verifier has checked, kept by their whole text. A student sends the same
 * token with every request for up to its lifetime: its signature is checked once, and its expiry at each
 * use (a token is kept no longer than it lives). Only a token that passed every check is kept, so a
 * forged or altered one is checked, and refused, each time.
 */
export const VERIFIED_TOKENS = 4096

export function createTokenVerifier(options: { secret: string; jwksUrl?: string | undefined; clockToleranceSeconds: number; clock?: Clock }): TokenVerifier {
  const secret = new TextEncoder().encode(options.secret)
  const jwks = options.jwksUrl ? createRemoteJWKSet(new URL(options.jwksUrl)) : null
  const algorithms = ['HS256', ...(jwks ? ['RS256', 'ES256'] : [])]
  const key: JWTVerifyGetKey = async (header, input) => {
    if (header.alg === 'HS256') return secret
    if (!jwks) throw new joseErrors.JOSEAlgNotAllowed(`"${header.alg}" is not allowed`)
    return jwks(header, input)
  }
  const now = () => options.clock ? options.clock.now() : Date.now()
  const verified = new LRUCache<string, JWTPayload>({ max: VERIFIED_TOKENS })
  const claims = async (token: string): Promise<JWTPayload> => {
    const known = verified.get(token)
    if (known) {
      // jose's test: expired once exp is at or before now, less the tolerance
      if (known.exp! > Math.floor(now() / 1000) - options.clockToleranceSeconds) return known
      verified.delete(token)
      throw unauthorized('Access token has expired', 'expired')
    }
    try {
      const { payload } = await jwtVerify(token, key, {
        algorithms,
        requiredClaims: ['exp'],
        clockTolerance: options.clockToleranceSeconds,
        ...(options.clock ? { currentDate: new Date(options.clock.now()) } : {}),
      })
      // shared by every request that sends this token: read-only
      verified.set(token, frozen(payload))
      return payload
    } catch (err) {
      const expired = err instanceof joseErrors.JWTExpired
      throw unauthorized(expired ? 'Access token has expired' : 'Access token is invalid', expired ? 'expired' : 'invalid')
    }
  }
  return {
    claims,
    async verify(token) {
      const payload = await claims(token)
      if (payload.role === 'service_role') return { kind: 'service', token }
      const aud = Array.isArray(payload.aud) ? payload.aud : [payload.aud]
      if (payload.role === 'anon' || !aud.includes('authenticated')) throw unauthorized('A signed-in user token is required', 'invalid')
      if (typeof payload.sub !== 'string' || !UUID.test(payload.sub)) throw unauthorized('Access token has no valid subject', 'invalid')
      const email = typeof payload.email === 'string' && payload.email !== '' ? payload.email : null
      return { kind: 'user', userId: payload.sub, role: roleFromClaims(payload), email, claims: payload, token }
    },
  }
}

function frozen<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const v of Object.values(value)) frozen(v)
  }
  return value
}

function unauthorized(message: string, reason: 'missing' | 'invalid' | 'expired'): ApiError {
  const challenge = reason === 'missing' ? 'Bearer' : `Bearer error="invalid_token"`
  return new ApiError(ErrorCode.UNAUTHORIZED, message, { headers: { 'WWW-Authenticate': challenge } })
}

function bearerToken(header: string | undefined): string | null {
  if (!header) return null
  const match = /^Bearer[ ]+([A-Za-z0-9._~+/=-]+)$/i.exec(header.trim())
  return match?.[1] ?? null
}

async function principalFromBearer(verifier: TokenVerifier, header: string | undefined): Promise<Principal> {
  if (!header) throw unauthorized('Missing Authorization header', 'missing')
  const token = bearerToken(header)
  if (!token) throw unauthorized('Authorization header must be "Bearer <token>"', 'invalid')
  return verifier.verify(token)
}

/** Accepts a signed-in user's token; sets the `principal` variable. */
export function requireUser(options: { verifier: TokenVerifier }): MiddlewareHandler {
  return async function requireUser(c, next) {
    const principal = await principalFromBearer(options.verifier, c.req.header('authorization'))
    if (principal.kind !== 'user') throw new ApiError(ErrorCode.FORBIDDEN, 'This endpoint needs a user token')
    c.set('principal', principal)
    await next()
  }
}

async function digest(value: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(value)))
}

/** Compares two secrets in time independent of where they differ. */
export async function secretsEqual(a: string, b: string): Promise<boolean> {
  const [x, y] = await Promise.all([digest(a), digest(b)])
  let diff = 0
  for (let i = 0; i < x.length; i++) diff |= x[i]! ^ y[i]!
  return diff === 0
}

/**
 * Accepts an admin's token, a service-role token (as Supabase does), or the deprecated X-Admin-Key
 * header when ADMIN_API_KEY is set (a warning is logged, without the key, and `Deprecation: true` added).
 */
export function requireAdmin(options: {
  verifier: TokenVerifier
  adminApiKey: string
  /**
   * Whether the user is an admin now, in a session that is still open: a token outlives a demotion, a
   * password reset and a sign-out by up to its lifetime (an hour); its admin rights must not outlive them
   */
  stillAdmin?: (userId: string, sessionId: string | null) => Promise<boolean>
}): MiddlewareHandler {
  return async function requireAdmin(c, next) {
    const key = c.req.header('x-admin-key')
    if (key !== undefined && options.adminApiKey !== '') {
      if (!(await secretsEqual(key, options.adminApiKey))) throw new ApiError(ErrorCode.UNAUTHORIZED, 'X-Admin-Key is not valid')
      c.get('log').warn({ auth: 'x-admin-key', deprecated: true }, 'X-Admin-Key is deprecated and will be removed; use an admin access token')
      c.header('Deprecation', 'true')
      c.set('principal', { kind: 'admin_key' })
      return next()
    }
    const principal = await principalFromBearer(options.verifier, c.req.header('authorization'))
    if (principal.kind === 'user' && principal.role !== 'admin') throw new ApiError(ErrorCode.FORBIDDEN, 'Admin role required')
    if (principal.kind === 'user' && options.stillAdmin) {
      const session = typeof principal.claims.session_id === 'string' ? principal.claims.session_id : null
      if (!(await options.stillAdmin(principal.userId, session))) {
        throw new ApiError(ErrorCode.FORBIDDEN, "Admin role required: this token's admin role or session has ended; sign in again")
      }
    }
    c.set('principal', principal)
    await next()
  }
}

/** A stable key for per-user limits and audit rows. */
export function principalKey(principal: Principal): string {
  switch (principal.kind) {
    case 'user':
      return `user:${principal.userId}`
    case 'service':
      return 'service'
    case 'admin_key':
      return 'admin-key'
  }
}
