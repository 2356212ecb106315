// The local auth server's shared parts: body and text checks, and the kit every endpoint uses (settings,
// rate limits, redirect policy, password and e-mail rules, and the bearer-token checks GoTrue applies).
import type { Context } from 'hono'
import { type JWTPayload, jwtVerify } from 'jose'
import type { Deps } from '../../functions-shared/deps.ts'
import { clientIp } from '../../functions-shared/deps.ts'
import { errors, GoTrueError } from './errors.ts'
import { findUser, normalizeEmail, type UserRow, UUID } from './users.ts'
import { findUnstorable, MAX_JSON_DEPTH, nestedDeeperThan } from '../../functions-shared/lib/text.ts'
import { redirectPolicy } from './redirects.ts'
import { authRateLimits } from './rate-limits.ts'
import { hashPassword } from './passwords.ts'

export type Body = Record<string, unknown>

export async function readBody(c: Context): Promise<Body> {
  const text = await c.req.text()
  if (text.trim() === '') return {}
  try {
    const body = JSON.parse(text) as unknown
    if (!body || typeof body !== 'object' || Array.isArray(body)) throw new Error('not an object')
    if (nestedDeeperThan(body, MAX_JSON_DEPTH)) throw errors.validation(`The request body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`)
    return checkText(body as Body)
  } catch (err) {
    if (err instanceof GoTrueError) throw err
    throw errors.badJson()
  }
}

/** Text PostgreSQL cannot store (NUL, unpaired surrogates) is bad input here too, not a database error. */
export function checkText<T>(value: T): T {
  const bad = findUnstorable(value)
  if (bad) throw errors.validation(`${bad.field} ${bad.message}`)
  return value
}

export const asObject = (v: unknown, field: string): Record<string, unknown> | undefined => {
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'object' || Array.isArray(v)) throw errors.validation(`${field} must be an object`)
  return checkMetadataSize(v as Record<string, unknown>, field)
}

/**
 * The most a user's metadata (user_metadata, app_metadata) may hold, as JSON: every access token carries
 * it, and every request sends the token. A sign-up with a megabyte of it was stored, and its tokens were
 * past what an HTTP header may hold; sign-ups of that size from one address grew the database by
 * gigabytes a day.
 */
export const METADATA_MAX_BYTES = 16_384

/** The metadata as it is, or a validation error when its JSON is past METADATA_MAX_BYTES. */
export function checkMetadataSize<T extends Record<string, unknown>>(metadata: T, field: string): T {
  const bytes = new TextEncoder().encode(JSON.stringify(metadata)).length
  if (bytes > METADATA_MAX_BYTES) throw errors.validation(`${field} is ${bytes} bytes as JSON, more than ${METADATA_MAX_BYTES}: every access token carries it`)
  return metadata
} /** What every endpoint of the local auth server uses: settings, limits, and the checks of GoTrue's middleware. */
export function authKit(deps: Deps) {
  const { sql, config } = deps
  const secret = new TextEncoder().encode(config.JWT_SECRET)
  const log = (c: Context) => c.get('log') ?? deps.logs.get('local-auth')
  const limits = authRateLimits(deps)
  const redirects = redirectPolicy(config.AUTH_SITE_URL, config.AUTH_ADDITIONAL_REDIRECT_URLS.split(',').map((u) => u.trim()).filter((u) => u !== ''))

  function checkPassword(password: unknown): string {
    if (typeof password !== 'string' || password === '') throw errors.validation('Signup requires a valid password')
    if (password.length > 72) throw errors.validation('Password cannot be longer than 72 characters')
    if (password.length < config.AUTH_MIN_PASSWORD_LENGTH) throw errors.weakPassword(config.AUTH_MIN_PASSWORD_LENGTH)
    return password
  }

  function emailOrFail(raw: unknown): string {
    const email = normalizeEmail(raw)
    if (!email) throw errors.validation(`Unable to validate email address: invalid format`)
    return email
  }

  // made before the transaction that stores it: the hash takes tens of milliseconds, the connection none of them
  const hash = (password: string) => hashPassword(password, config.AUTH_BCRYPT_COST)

  async function verifyToken(c: Context): Promise<JWTPayload> {
    const header = c.req.header('authorization')
    const token = header && /^Bearer\s+(\S+)$/i.exec(header)?.[1]
    if (!token) throw errors.noAuthorization()
    try {
      const { payload } = await jwtVerify(token, secret, { algorithms: ['HS256'], requiredClaims: ['exp'], currentDate: new Date(deps.clock.now()) })
      return payload
    } catch (err) {
      throw errors.badJwt((err as Error).message)
    }
  }

  /** The signed-in user and session behind the bearer token, as GoTrue's auth middleware checks them. */
  async function requireUser(c: Context): Promise<{ claims: JWTPayload; user: UserRow; sessionId: string | null }> {
    const claims = await verifyToken(c)
    if (typeof claims.sub !== 'string' || !UUID.test(claims.sub)) throw errors.badJwt('invalid claim: missing sub claim')
    const user = await findUser(sql, claims.sub)
    if (!user) throw new GoTrueError(403, 'user_not_found', 'User from sub claim in JWT does not exist')
    const sessionId = typeof claims.session_id === 'string' ? claims.session_id : null
    if (sessionId) {
      const [row] = await sql`select 1 from auth.sessions where id = ${UUID.test(sessionId) ? sessionId : null} and user_id = ${user.id}`
      if (!row) throw new GoTrueError(403, 'session_not_found', 'Session from session_id claim in JWT does not exist')
    }
    return { claims, user, sessionId }
  }

  async function requireServiceRole(c: Context): Promise<void> {
    const claims = await verifyToken(c)
    // GoTrue's admin roles (GOTRUE_JWT_ADMIN_ROLES: service_role and supabase_admin)
    if (claims.role !== 'service_role' && claims.role !== 'supabase_admin') throw errors.notAdmin()
  }

  const meta = (c: Context) => ({ userAgent: c.req.header('user-agent'), ip: clientIp(deps, c) })

  // ---- public
  return { sql, config, log, limits, redirects, checkPassword, emailOrFail, hash, verifyToken, requireUser, requireServiceRole, meta }
}

export type AuthKit = ReturnType<typeof authKit>
