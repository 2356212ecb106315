// Sessions, refresh tokens and access tokens as GoTrue issues them: claims in GoTrue's order, the
// custom access-token hook called inside the token transaction as supabase_auth_admin, HS256 with
// JWT_SECRET.
import { SignJWT } from 'jose'
import type { Tx } from '../../functions-shared/db/client.ts'
import type { Deps } from '../../functions-shared/deps.ts'
import { publicUrl } from '../../functions-shared/config.ts'
import { GoTrueError } from './errors.ts'
import type { UserRow } from './users.ts'
import { userWithIdentities } from './users.ts'

const REQUIRED_CLAIMS = ['aud', 'exp', 'iat', 'sub', 'email', 'phone', 'role', 'aal', 'session_id', 'is_anonymous'] as const
const TOKEN_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789'

export function randomToken(length = 40): string {
  const bytes = crypto.getRandomValues(new Uint8Array(length))
  return Array.from(bytes, (b) => TOKEN_ALPHABET[b % TOKEN_ALPHABET.length]).join('')
}

export function issuer(deps: Deps): string {
  return `${(deps.config.SUPABASE_URL ?? publicUrl(deps.config)).replace(/\/$/, '')}/auth/v1`
}

/** How a session began, as the token's amr names it. */
export type AuthMethod = 'password' | 'token_refresh' | 'recovery' | 'otp' | 'magiclink' | 'invite' | 'anonymous' | 'totp'

/** How a session can begin. */
export type FirstFactor = Exclude<AuthMethod, 'token_refresh' | 'totp'>

/** The methods that make a session aal2 (GoTrue's AAL2 claims). */
const SECOND_FACTORS = new Set(['totp', 'mfa/phone', 'mfa/webauthn'])

export interface SessionContext {
  user: UserRow
  sessionId: string
  /** when the session started: the amr timestamp */
  startedAt: number
  method: AuthMethod
  refreshToken: string
}

async function runHook(deps: Deps, tx: Tx, userId: string, claims: Record<string, unknown>, method: string): Promise<Record<string, unknown>> {
  if (!deps.config.AUTH_HOOK_ENABLED) return claims
  const [{ present }] = await tx<[{ present: boolean }]>`select to_regprocedure('public.custom_access_token_hook(jsonb)') is not null as present`
  if (!present) return claims
  const event = {
    metadata: { uuid: crypto.randomUUID(), time: new Date(deps.clock.now()).toISOString(), name: 'customize-access-token', ip_address: '' },
    user_id: userId,
    claims,
    authentication_method: method,
  }
  // as GoTrue: the hook runs as supabase_auth_admin with a 2 s statement timeout
  const [{ previous }] = await tx<[{ previous: string }]>`select current_setting('statement_timeout') as previous`
  await tx`select set_config('role', 'supabase_auth_admin', true), set_config('statement_timeout', '2000', true)`
  let output: Record<string, unknown>
  try {
    // the hook's jsonb, parsed; an object by the hook contract, checked field by field below
    const [row] = await tx<[{ output: Record<string, unknown> | null }]>`select public.custom_access_token_hook(${tx.json(event as never)}::jsonb) as output`
    output = row.output ?? {}
  } finally {
    await tx`select set_config('role', 'none', true), set_config('statement_timeout', ${previous}, true)`
  }
  const hookError = output.error as { http_code?: number; message?: string } | undefined
  if (hookError?.message) throw new GoTrueError(hookError.http_code ?? 500, 'unexpected_failure', hookError.message)
  const out = output.claims
  if (!out || typeof out !== 'object' || Array.isArray(out)) throw new GoTrueError(500, 'unexpected_failure', 'output claims field is missing')
  const missing = REQUIRED_CLAIMS.filter((k) => !(k in (out as Record<string, unknown>)))
  if (missing.length) throw new GoTrueError(500, 'unexpected_failure', `output claims do not conform to the expected schema: missing ${missing.join(', ')}`)
  return out as Record<string, unknown>
}

/** The access token and the session JSON for a session whose rows already exist. */
export async function sessionResponse(deps: Deps, tx: Tx, ctx: SessionContext): Promise<Record<string, unknown>> {
  const now = Math.floor(deps.clock.now() / 1000)
  const exp = now + deps.config.JWT_EXPIRY_SECONDS
  const u = ctx.user
  // the session's methods, most recent first, as GoTrue reads them from mfa_amr_claims
  const claimed = await tx<{ method: string; at: Date }[]>`select authentication_method as method, updated_at as at
    from auth.mfa_amr_claims where session_id = ${ctx.sessionId}
    order by updated_at desc, authentication_method in ('totp', 'mfa/phone', 'mfa/webauthn') desc`
  const amr = claimed.length
    ? claimed.map((c) => ({ method: c.method, timestamp: Math.floor(c.at.getTime() / 1000) }))
    : [{ method: ctx.method === 'token_refresh' ? 'password' : ctx.method, timestamp: Math.floor(ctx.startedAt / 1000) }]
  const baseClaims: Record<string, unknown> = {
    iss: issuer(deps),
    sub: u.id,
    aud: 'authenticated',
    exp,
    iat: now,
    email: u.email ?? '',
    phone: u.phone ?? '',
    app_metadata: u.raw_app_meta_data ?? {},
    user_metadata: u.raw_user_meta_data ?? {},
    role: u.role || 'authenticated',
    aal: amr.some((a) => SECOND_FACTORS.has(a.method)) ? 'aal2' : 'aal1',
    amr,
    session_id: ctx.sessionId,
    is_anonymous: u.is_anonymous,
  }
  const claims = await runHook(deps, tx, u.id, baseClaims, ctx.method)
  const accessToken = await new SignJWT(claims).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(new TextEncoder().encode(deps.config.JWT_SECRET))
  const user = await userWithIdentities(tx, u.id)
  return {
    access_token: accessToken,
    token_type: 'bearer',
    expires_in: exp - now,
    expires_at: exp,
    refresh_token: ctx.refreshToken,
    user,
  }
}

/** A new session with its first refresh token. */
export async function startSession(deps: Deps, tx: Tx, user: UserRow, method: FirstFactor, meta: { userAgent?: string; ip?: string }) {
  const sessionId = crypto.randomUUID()
  const refreshToken = randomToken()
  const ip = meta.ip && /^[0-9a-f:.]+$/i.test(meta.ip) ? meta.ip : null
  await tx`insert into auth.sessions (id, user_id, created_at, updated_at, aal, user_agent, ip)
           values (${sessionId}, ${user.id}, now(), now(), 'aal1', ${meta.userAgent ?? null}, ${ip}::inet)`
  await tx`insert into auth.refresh_tokens (token, user_id, revoked, session_id, created_at, updated_at)
           values (${refreshToken}, ${user.id}, false, ${sessionId}, now(), now())`
  await addSessionMethod(deps, tx, sessionId, method)
  await tx`update auth.users set last_sign_in_at = now(), updated_at = now() where id = ${user.id}`
  await tx`update auth.identities set last_sign_in_at = now() where user_id = ${user.id}`
  const fresh = { ...user, last_sign_in_at: new Date() }
  return sessionResponse(deps, tx, { user: fresh, sessionId, startedAt: deps.clock.now(), method, refreshToken })
}

/** Records that the session was authenticated by `method` now (GoTrue's AddClaimToSession). */
export async function addSessionMethod(deps: Deps, tx: Tx, sessionId: string, method: string): Promise<void> {
  const at = new Date(deps.clock.now())
  await tx`insert into auth.mfa_amr_claims (id, session_id, created_at, updated_at, authentication_method)
           values (${crypto.randomUUID()}, ${sessionId}, ${at}, ${at}, ${method})
           on conflict on constraint mfa_amr_claims_session_id_authentication_method_pkey do update set updated_at = excluded.updated_at`
}
