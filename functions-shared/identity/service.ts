// Accounts and profiles. Auth goes through supabase-js (the same code runs against the local auth server
// and hosted Supabase Auth); profiles are read and written with asUser so RLS guards them, or asService
// for admins.
import type { ServiceContext } from '../deps.ts'
import type { Principal, Role } from '../http/auth.ts'
import { asService, asUser } from '../db/tx.ts'
import type { TotalRow } from '../db/client.ts'
import { fromAuthError as refusalOf } from './errors.ts'
import { DomainError } from '../domain/errors.ts'

export interface Profile {
  id: string
  email: string | null
  full_name: string
  role: Role
  hint_level: number
  created_at: string
  updated_at: string
}

const PROFILE_COLUMNS = 'id, email, full_name, role, hint_level, created_at, updated_at'

/** The PROFILE_COLUMNS of public.profiles, as postgres.js reads them. */
interface ProfileRow {
  id: string
  email: string | null
  full_name: string
  role: Role
  hint_level: number
  created_at: Date
  updated_at: Date
}

function toProfile(row: ProfileRow): Profile {
  return {
    id: row.id,
    email: row.email,
    full_name: row.full_name,
    role: row.role,
    hint_level: Number(row.hint_level),
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  }
}

// ---- accounts

/** Auth's error as ours, naming the configured Auth limits when it is a 429. */
const fromAuthError = (error: Parameters<typeof refusalOf>[0], context: string, ctx?: ServiceContext) =>
  refusalOf(
    error,
    context,
    ctx
      ? {
        perFiveMinutes: ctx.deps.config.AUTH_RATE_LIMIT_SIGN_IN_SIGN_UPS,
        emailsPerHour: ctx.deps.config.AUTH_RATE_LIMIT_EMAIL_SENT,
        emailSpacingSeconds: ctx.deps.config.AUTH_EMAIL_MAX_FREQUENCY_SECONDS,
      }
      : undefined,
  )

export async function signUp({ ctx, input }: { ctx: ServiceContext; input: { email: string; password: string; full_name: string } }) {
  const client = await ctx.deps.supabase.anon(ctx.requestId, ctx.clientIp)
  const { data, error } = await client.auth.signUp({ email: input.email, password: input.password, options: { data: { full_name: input.full_name } } })
  if (error) throw fromAuthError(error, 'sign-up', ctx)
  if (!data.user) throw new DomainError('service_unavailable', 'Authentication service returned no user')
  return { user_id: data.user.id, email: data.user.email ?? input.email }
}

export async function signIn({ ctx, input }: { ctx: ServiceContext; input: { email: string; password: string } }) {
  const client = await ctx.deps.supabase.anon(ctx.requestId, ctx.clientIp)
  const { data, error } = await client.auth.signInWithPassword({ email: input.email, password: input.password })
  if (error) throw fromAuthError(error, 'sign-in', ctx)
  const { session, user } = data
  return {
    access_token: session.access_token,
    refresh_token: session.refresh_token,
    token_type: session.token_type,
    expires_in: session.expires_in,
    expires_at: session.expires_at ?? null,
    user,
  }
}

/** Revokes the caller's session when a token is sent; always succeeds (the client discards its tokens). */
export async function signOut({ ctx, input }: { ctx: ServiceContext; input: { accessToken: string | null } }) {
  if (!input.accessToken) return { revoked: false }
  const client = await ctx.deps.supabase.anon(ctx.requestId)
  const { error } = await client.auth.admin.signOut(input.accessToken, 'local')
  if (error) ctx.deps.logs.forRequest('identity', ctx.requestId).info({ code: error.code, status: error.status }, 'logout: session was not revoked')
  return { revoked: !error }
}

/** The same answer whether or not the email has an account. */
export async function requestPasswordReset({ ctx, input }: { ctx: ServiceContext; input: { email: string; redirect_to?: string | undefined } }) {
  const client = await ctx.deps.supabase.anon(ctx.requestId, ctx.clientIp)
  const { error } = await client.auth.resetPasswordForEmail(input.email, input.redirect_to ? { redirectTo: input.redirect_to } : {})
  if (error) {
    const mapped = fromAuthError(error, 'password reset', ctx)
    // a limit is said (429): the local auth server reaches it for any address, with an account or not
    if (mapped.code === 'service_unavailable' || mapped.code === 'rate_limited') throw mapped
    ctx.deps.logs.forRequest('identity', ctx.requestId).info({ code: error.code }, 'password reset not sent')
  }
}

// ---- own profile (RLS)

function userClaims(principal: Principal) {
  if (principal.kind !== 'user') throw new DomainError('forbidden', 'This endpoint needs a user token')
  return { ...principal.claims, sub: principal.userId }
}

export async function getOwnProfile({ ctx, principal }: { ctx: ServiceContext; principal: Principal }): Promise<Profile> {
  const rows = await asUser(
    ctx.deps.sql,
    userClaims(principal),
    (tx) => tx.unsafe<ProfileRow[]>(`select ${PROFILE_COLUMNS} from public.profiles where id = (select auth.uid())`),
  )
  if (!rows[0]) throw new DomainError('not_found', 'No profile for this account')
  return toProfile(rows[0])
}

export async function updateOwnProfile(
  { ctx, principal, input }: { ctx: ServiceContext; principal: Principal; input: { full_name: string } },
): Promise<Profile> {
  const rows = await asUser(
    ctx.deps.sql,
    userClaims(principal),
    (tx) => tx.unsafe<ProfileRow[]>(`update public.profiles set full_name = $1 where id = (select auth.uid()) returning ${PROFILE_COLUMNS}`, [input.full_name]),
  )
  if (!rows[0]) throw new DomainError('not_found', 'No profile for this account')
  return toProfile(rows[0])
}

// ---- administration

async function profileById(ctx: ServiceContext, id: string): Promise<Profile | null> {
  const rows = await asService(ctx.deps.sql, (tx) => tx.unsafe<ProfileRow[]>(`select ${PROFILE_COLUMNS} from public.profiles where id = $1`, [id]))
  return rows[0] ? toProfile(rows[0]) : null
}

export async function listProfiles({ ctx, input }: { ctx: ServiceContext; input: { limit: number; offset: number } }) {
  return asService(ctx.deps.sql, async (tx) => {
    const [{ total }] = await tx<[TotalRow]>`select count(*)::int as total from public.profiles`
    const rows = await tx.unsafe<ProfileRow[]>(`select ${PROFILE_COLUMNS} from public.profiles order by created_at desc, id limit $1 offset $2`, [
      input.limit,
      input.offset,
    ])
    return { items: rows.map(toProfile), total, limit: input.limit, offset: input.offset }
  })
}

export async function createUser(
  { ctx, input }: { ctx: ServiceContext; input: { email: string; password: string; full_name: string; role: Role } },
): Promise<Profile> {
  const client = await ctx.deps.supabase.admin(ctx.requestId)
  const { data, error } = await client.auth.admin.createUser({
    email: input.email,
    password: input.password,
    email_confirm: true,
    // as the spec says, full_name and role are user metadata; the role also goes to app_metadata, the
    // only place the profile trigger trusts it
    user_metadata: { full_name: input.full_name, role: input.role },
    app_metadata: { role: input.role },
  })
  if (error) throw fromAuthError(error, 'create user')
  const profile = await profileById(ctx, data.user.id)
  if (!profile) throw new DomainError('internal_error', 'The account was created but its profile is missing')
  return profile
}

export async function setUserRole({ ctx, input }: { ctx: ServiceContext; input: { user_id: string; role: Role } }): Promise<Profile> {
  if (!(await profileById(ctx, input.user_id))) throw new DomainError('not_found', `User ${input.user_id} not found`)
  const client = await ctx.deps.supabase.admin(ctx.requestId)
  // app_metadata is the trusted channel: a trigger carries it to the profile, the hook into the next token
  const { error } = await client.auth.admin.updateUserById(input.user_id, { app_metadata: { role: input.role } })
  if (error) throw fromAuthError(error, 'set role')
  return (await profileById(ctx, input.user_id))!
}

export async function setHintLevel({ ctx, input }: { ctx: ServiceContext; input: { user_id: string; hint_level: number } }): Promise<Profile> {
  const rows = await asService(
    ctx.deps.sql,
    (tx) => tx.unsafe<ProfileRow[]>(`update public.profiles set hint_level = $2 where id = $1 returning ${PROFILE_COLUMNS}`, [input.user_id, input.hint_level]),
  )
  if (!rows[0]) throw new DomainError('not_found', `User ${input.user_id} not found`)
  return toProfile(rows[0])
}

/** As the spec orders it: the profile row, then the authentication account. Safe to retry. */
export async function deleteUser({ ctx, input }: { ctx: ServiceContext; input: { user_id: string } }) {
  const deleted = await asService(ctx.deps.sql, (tx) => tx`delete from public.profiles where id = ${input.user_id} returning id`)
  const client = await ctx.deps.supabase.admin(ctx.requestId)
  const { error } = await client.auth.admin.deleteUser(input.user_id)
  if (error) {
    if (error.code === 'user_not_found' && deleted.length === 0) throw new DomainError('not_found', `User ${input.user_id} not found`)
    if (error.code !== 'user_not_found') throw fromAuthError(error, 'delete user')
  }
  return { status: 'deleted' as const, user_id: input.user_id, profile_deleted: deleted.length > 0 }
}

export async function resetUserPassword({ ctx, input }: { ctx: ServiceContext; input: { user_id: string; new_password: string } }) {
  const client = await ctx.deps.supabase.admin(ctx.requestId)
  const { error } = await client.auth.admin.updateUserById(input.user_id, { password: input.new_password })
  if (error) throw fromAuthError(error, 'reset password')
  return { success: true as const, user_id: input.user_id }
}
