// The local GoTrue-compatible auth server, served under /auth/v1 by the Node gateway in the embedded
// and server-PostgreSQL modes (on Supabase, Supabase Auth serves these paths). It implements what
// supabase-js uses, faithfully: sign-up, password and refresh-token grants, get/update user, logout,
// recover (+ verify), and the admin user endpoints.
import { Hono, type Context } from 'hono'
import { jwtVerify, type JWTPayload } from 'jose'
import type { Deps } from '../deps.ts'
import { clientIp } from '../deps.ts'
import type { Tx } from '../db/client.ts'
import { isPgError } from '../db/tx.ts'
import { GoTrueError, errors, goTrueErrorResponse } from './errors.ts'
import { findUser, findUserByEmail, mergeMetadata, normalizeEmail, userWithIdentities, UUID, type UserRow } from './users.ts'
import { issuer, randomToken, sessionResponse, startSession } from './sessions.ts'
import { findUnstorable } from '../lib/text.ts'
import { redirectPolicy, redirectTarget } from './redirects.ts'
import { authRateLimits } from './rate-limits.ts'

type Body = Record<string, unknown>

async function readBody(c: Context): Promise<Body> {
  const text = await c.req.text()
  if (text.trim() === '') return {}
  try {
    const body = JSON.parse(text) as unknown
    if (!body || typeof body !== 'object' || Array.isArray(body)) throw new Error('not an object')
    return checkText(body as Body)
  } catch (err) {
    if (err instanceof GoTrueError) throw err
    throw errors.badJson()
  }
}

/** Text PostgreSQL cannot store (NUL, unpaired surrogates) is bad input here too, not a database error. */
function checkText<T>(value: T): T {
  const bad = findUnstorable(value)
  if (bad) throw errors.validation(`${bad.field} ${bad.message}`)
  return value
}

const asObject = (v: unknown, field: string): Record<string, unknown> | undefined => {
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'object' || Array.isArray(v)) throw errors.validation(`${field} must be an object`)
  return v as Record<string, unknown>
}

export function localAuthRouter(deps: Deps): Hono {
  const { sql, config } = deps
  const app = new Hono()
  const secret = new TextEncoder().encode(config.JWT_SECRET)
  const log = (c: Context) => c.get('log') ?? deps.logs.get('local-auth')
  const limits = authRateLimits(deps)
  const redirects = redirectPolicy(config.AUTH_SITE_URL, config.AUTH_ADDITIONAL_REDIRECT_URLS.split(',').map((u) => u.trim()).filter((u) => u !== ''))
  app.use('*', async function queryText(c, next) {
    checkText(c.req.queries())
    await next()
  })

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

  const hash = (tx: Tx, password: string) => tx`select extensions.crypt(${password}, extensions.gen_salt('bf', ${config.AUTH_BCRYPT_COST}::int)) as h`.then((r) => r[0]!.h as string)

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
    if (claims.role !== 'service_role') throw errors.notAdmin()
  }

  const meta = (c: Context) => ({ userAgent: c.req.header('user-agent'), ip: clientIp(deps, c) })

  // ---- public

  app.get('/health', (c) => c.json({ version: 'local', name: 'GoTrue (curriculum-tutor local auth)', description: 'GoTrue-compatible auth for local development' }))

  app.get('/settings', (c) =>
    c.json({ external: { email: true, phone: false }, disable_signup: false, mailer_autoconfirm: true, phone_autoconfirm: false, sms_provider: '', saml_enabled: false }),
  )

  // HMAC keys are never published; asymmetric keys would be listed here.
  app.get('/.well-known/jwks.json', (c) => c.json({ keys: [] }, 200, { 'Cache-Control': 'public, max-age=600' }))

  app.post('/signup', async (c) => {
    limits.check(c, 'sign_in_sign_ups')
    const body = await readBody(c)
    const email = emailOrFail(body.email)
    const password = checkPassword(body.password)
    const data = asObject(body.data, 'data') ?? {}
    try {
      const session = await sql.begin(async (tx) => {
        if (await findUserByEmail(tx, email)) throw new GoTrueError(422, 'user_already_exists', 'User already registered')
        const id = crypto.randomUUID()
        const encrypted = await hash(tx, password)
        // as GoTrue: insert with the sign-up data, then set role, confirm (autoconfirm) and record the identity
        await tx`insert into auth.users (instance_id, id, aud, role, email, encrypted_password, raw_app_meta_data, raw_user_meta_data, created_at, updated_at, is_anonymous)
                 values ('00000000-0000-0000-0000-000000000000', ${id}, 'authenticated', '', ${email}, ${encrypted},
                         ${tx.json({ provider: 'email', providers: ['email'] })}, ${tx.json(data as never)}, now(), now(), false)`
        const identityData = { sub: id, email, email_verified: true, phone_verified: false }
        await tx`update auth.users set role = 'authenticated', email_confirmed_at = now(),
                   raw_user_meta_data = raw_user_meta_data || ${tx.json(identityData)}::jsonb, updated_at = now() where id = ${id}`
        await tx`insert into auth.identities (provider_id, user_id, identity_data, provider, last_sign_in_at, created_at, updated_at)
                 values (${id}, ${id}, ${tx.json(identityData)}, 'email', now(), now(), now())`
        const user = (await findUser(tx, id))!
        return startSession(deps, tx, user, 'password', meta(c))
      })
      return c.json(session)
    } catch (err) {
      if (isPgError(err, '23505')) throw new GoTrueError(422, 'user_already_exists', 'User already registered')
      if (err instanceof GoTrueError) throw err
      log(c).error({ err: { message: (err as Error).message } }, 'local auth: sign-up failed in the database')
      throw new GoTrueError(500, 'unexpected_failure', 'Database error saving new user')
    }
  })

  app.post('/token', async (c) => {
    const grant = c.req.query('grant_type')
    limits.check(c, grant === 'refresh_token' ? 'token_refresh' : 'sign_in_sign_ups')
    const body = await readBody(c)
    if (grant === 'password') {
      const email = normalizeEmail(body.email)
      const password = typeof body.password === 'string' ? body.password : ''
      const session = await sql.begin(async (tx) => {
        const user = email ? await findUserByEmail(tx, email) : null
        if (!user || !user.encrypted_password || !password) throw errors.invalidCredentials()
        const [{ ok }] = (await tx`select extensions.crypt(${password}, ${user.encrypted_password}) = ${user.encrypted_password} as ok`) as unknown as [{ ok: boolean }]
        if (!ok) throw errors.invalidCredentials()
        if (!user.email_confirmed_at) throw new GoTrueError(400, 'email_not_confirmed', 'Email not confirmed')
        if (user.banned_until && new Date(user.banned_until).getTime() > deps.clock.now()) throw new GoTrueError(400, 'user_banned', 'User is banned')
        return startSession(deps, tx, user, 'password', meta(c))
      })
      return c.json(session)
    }
    if (grant === 'refresh_token') {
      const token = body.refresh_token
      if (typeof token !== 'string' || token === '') return c.json({ error: 'invalid_request', error_description: 'refresh_token required' }, 400)
      if (token.length < 12) throw errors.validation('Refresh token is not valid')
      const result = await sql.begin(async (tx) => {
        const [row] = await tx`select r.id, r.token, r.revoked, r.session_id, r.updated_at, s.user_id, s.created_at as session_created_at
                                 from auth.refresh_tokens r join auth.sessions s on s.id = r.session_id
                                where r.token = ${token} for update of r, s`
        if (!row) throw new GoTrueError(400, 'refresh_token_not_found', 'Invalid Refresh Token: Refresh Token Not Found')
        const user = await findUser(tx, row.user_id as string)
        if (!user) throw new GoTrueError(400, 'refresh_token_not_found', 'Invalid Refresh Token: Refresh Token Not Found')
        let refreshToken: string
        if (row.revoked) {
          // A replay inside the reuse interval (two tabs refreshing at once) gets the session's current
          // token; any later replay means the token leaked: the whole session is revoked.
          const [child] = await tx`select token, created_at from auth.refresh_tokens where parent = ${token} and session_id = ${row.session_id} and revoked = false order by id desc limit 1`
          const withinInterval = child && deps.clock.now() - new Date(child.created_at as Date).getTime() <= config.AUTH_REFRESH_REUSE_INTERVAL_SECONDS * 1000
          if (!withinInterval) {
            await tx`delete from auth.sessions where id = ${row.session_id}`
            return { reused: true } as const
          }
          refreshToken = child.token as string
        } else {
          refreshToken = randomToken()
          await tx`update auth.refresh_tokens set revoked = true, updated_at = now() where id = ${row.id}`
          await tx`insert into auth.refresh_tokens (token, user_id, revoked, session_id, parent, created_at, updated_at)
                   values (${refreshToken}, ${user.id}, false, ${row.session_id}, ${token}, ${new Date(deps.clock.now())}, now())`
          await tx`update auth.sessions set refreshed_at = now() at time zone 'utc', updated_at = now() where id = ${row.session_id}`
        }
        const session = await sessionResponse(deps, tx, {
          user,
          sessionId: row.session_id as string,
          startedAt: new Date(row.session_created_at as Date).getTime(),
          method: 'token_refresh',
          refreshToken,
        })
        return { reused: false, session } as const
      })
      // the revocation above is committed before the error goes out
      if (result.reused) throw new GoTrueError(400, 'refresh_token_already_used', 'Invalid Refresh Token: Already Used')
      return c.json(result.session)
    }
    throw new GoTrueError(400, 'invalid_credentials', 'unsupported_grant_type')
  })

  app.get('/user', async (c) => {
    const { user } = await requireUser(c)
    return c.json(await userWithIdentities(sql, user.id))
  })

  app.put('/user', async (c) => {
    limits.check(c, 'sign_in_sign_ups')
    const { user, sessionId } = await requireUser(c)
    const body = await readBody(c)
    if (body.app_metadata !== undefined) throw errors.notAdmin()
    const data = asObject(body.data, 'data')
    await sql.begin(async (tx) => {
      const current = (await findUser(tx, user.id, { lock: true }))!
      if (data) await tx`update auth.users set raw_user_meta_data = ${tx.json(mergeMetadata(current.raw_user_meta_data, data) as never)}, updated_at = now() where id = ${user.id}`
      if (body.email !== undefined) {
        const email = emailOrFail(body.email)
        if (email !== current.email) {
          const other = await findUserByEmail(tx, email)
          if (other) throw new GoTrueError(422, 'email_exists', 'A user with this email address has already been registered')
          await tx`update auth.users set email = ${email}, email_confirmed_at = now(), updated_at = now() where id = ${user.id}`
          await tx`update auth.identities set identity_data = identity_data || ${tx.json({ email })}::jsonb, updated_at = now() where user_id = ${user.id} and provider = 'email'`
        }
      }
      if (body.password !== undefined) {
        const password = checkPassword(body.password)
        const [{ same }] = (await tx`select encrypted_password is not null and extensions.crypt(${password}, encrypted_password) = encrypted_password as same from auth.users where id = ${user.id}`) as unknown as [{ same: boolean }]
        if (same) throw new GoTrueError(422, 'same_password', 'New password should be different from the old password.')
        await tx`update auth.users set encrypted_password = ${await hash(tx, password)}, updated_at = now() where id = ${user.id}`
        // a password change signs out every other session
        await tx`delete from auth.sessions where user_id = ${user.id} and id is distinct from ${sessionId}`
      }
    })
    return c.json(await userWithIdentities(sql, user.id))
  })

  app.post('/logout', async (c) => {
    const { user, sessionId } = await requireUser(c)
    const scope = c.req.query('scope') ?? 'global'
    if (scope === 'global') await sql`delete from auth.sessions where user_id = ${user.id}`
    else if (scope === 'local') await sql`delete from auth.sessions where id = ${sessionId}`
    else if (scope === 'others') await sql`delete from auth.sessions where user_id = ${user.id} and id is distinct from ${sessionId}`
    else throw errors.validation(`Unsupported logout scope "${scope}"`)
    return c.body(null, 204)
  })

  app.post('/recover', async (c) => {
    limits.check(c, 'sign_in_sign_ups')
    const body = await readBody(c)
    const email = emailOrFail(body.email)
    const user = await findUserByEmail(sql, email)
    if (user) {
      limits.check(c, 'email_sent')
      const token = randomToken(56)
      await sql`update auth.users set recovery_token = encode(extensions.digest(${token}, 'sha224'), 'hex'), recovery_sent_at = now() where id = ${user.id}`
      // as GoTrue: a redirect_to that is not the site, loopback or an allowed pattern becomes SITE_URL
      const redirect = redirectTarget(redirects, c.req.query('redirect_to'))
      const link = `${issuer(deps)}/verify?token=${token}&type=recovery&redirect_to=${encodeURIComponent(redirect)}`
      // No mail leaves the local stack: the link goes to the log, never into the response.
      log(c).info({ recovery_link: link, user_id: user.id }, 'local auth: password recovery link (open it to sign in and set a new password)')
    }
    return c.json({})
  })

  app.get('/verify', async (c) => {
    limits.check(c, 'token_verifications')
    const token = c.req.query('token') ?? ''
    if (c.req.query('type') !== 'recovery' || token.length < 12) throw errors.validation('Only recovery links are verified by the local auth server')
    // checked again here: the link may have been edited, and the tokens go in its fragment
    const redirect = redirectTarget(redirects, c.req.query('redirect_to'))
    const session = await sql.begin(async (tx) => {
      const [row] = await tx`select id from auth.users where recovery_token = encode(extensions.digest(${token}, 'sha224'), 'hex')
                               and recovery_sent_at > now() - interval '1 hour' for update`
      if (!row) throw new GoTrueError(403, 'otp_expired', 'Email link is invalid or has expired')
      await tx`update auth.users set recovery_token = '', updated_at = now() where id = ${row.id}`
      return startSession(deps, tx, (await findUser(tx, row.id as string))!, 'recovery', meta(c))
    })
    const fragment = new URLSearchParams({
      access_token: String(session.access_token),
      expires_at: String(session.expires_at),
      expires_in: String(session.expires_in),
      refresh_token: String(session.refresh_token),
      token_type: 'bearer',
      type: 'recovery',
    })
    return c.redirect(`${redirect}#${fragment}`, 303)
  })

  // ---- admin (service_role only)

  app.use('/admin/*', async (c, next) => {
    await requireServiceRole(c)
    await next()
  })

  app.get('/admin/users', async (c) => {
    const page = Math.max(1, Number.parseInt(c.req.query('page') || '1', 10) || 1)
    const perPage = Math.min(1000, Math.max(1, Number.parseInt(c.req.query('per_page') || '50', 10) || 50))
    const [{ total }] = (await sql`select count(*)::int as total from auth.users`) as unknown as [{ total: number }]
    const ids = await sql`select id from auth.users order by created_at desc, id limit ${perPage} offset ${(page - 1) * perPage}`
    const users = await Promise.all(ids.map((r) => userWithIdentities(sql, r.id as string)))
    const last = Math.max(1, Math.ceil(total / perPage))
    const base = new URL(c.req.url)
    const link = (p: number, rel: string) => `<${base.origin}${base.pathname}?page=${p}&per_page=${perPage}>; rel="${rel}"`
    const links = [...(page < last ? [link(page + 1, 'next')] : []), link(last, 'last')]
    return c.json({ users, aud: 'authenticated' }, 200, { 'X-Total-Count': String(total), Link: links.join(', ') })
  })

  app.post('/admin/users', async (c) => {
    const body = await readBody(c)
    if (body.email === undefined && body.phone === undefined) throw errors.validation('Unable to validate email address: missing email')
    if (body.phone !== undefined && body.phone !== null && body.phone !== '') throw errors.validation('Phone users are not supported by the local auth server')
    const email = emailOrFail(body.email)
    const userMeta = asObject(body.user_metadata, 'user_metadata') ?? {}
    const appMeta = asObject(body.app_metadata, 'app_metadata') ?? {}
    const password = typeof body.password === 'string' && body.password !== '' ? body.password : randomToken(64)
    if (password.length > 72) throw errors.validation('Password cannot be longer than 72 characters')
    const id = typeof body.id === 'string' && UUID.test(body.id) ? body.id : crypto.randomUUID()
    try {
      await sql.begin(async (tx) => {
        if (await findUserByEmail(tx, email)) throw new GoTrueError(422, 'email_exists', 'A user with this email address has already been registered')
        await tx`insert into auth.users (instance_id, id, aud, role, email, encrypted_password, raw_app_meta_data, raw_user_meta_data, created_at, updated_at, is_anonymous)
                 values ('00000000-0000-0000-0000-000000000000', ${id}, 'authenticated', '', ${email}, ${await hash(tx, password)},
                         ${tx.json({ provider: 'email', providers: ['email'] })}, ${tx.json(userMeta as never)}, now(), now(), false)`
        // as GoTrue: role, custom app_metadata and the confirmation come in a later UPDATE
        const confirm = body.email_confirm === true
        const userPatch = confirm ? { email_verified: true } : {}
        await tx`update auth.users set role = ${typeof body.role === 'string' && body.role ? body.role : 'authenticated'},
                   raw_app_meta_data = ${tx.json(mergeMetadata({ provider: 'email', providers: ['email'] }, appMeta) as never)},
                   raw_user_meta_data = raw_user_meta_data || ${tx.json(userPatch)}::jsonb,
                   email_confirmed_at = case when ${confirm} then now() else null end, updated_at = now()
                 where id = ${id}`
        await tx`insert into auth.identities (provider_id, user_id, identity_data, provider, created_at, updated_at)
                 values (${id}, ${id}, ${tx.json({ sub: id, email, email_verified: confirm, phone_verified: false })}, 'email', now(), now())`
      })
    } catch (err) {
      if (err instanceof GoTrueError) throw err
      if (isPgError(err, '23505')) throw new GoTrueError(422, 'email_exists', 'A user with this email address has already been registered')
      log(c).error({ err: { message: (err as Error).message } }, 'local auth: admin create failed in the database')
      throw new GoTrueError(500, 'unexpected_failure', 'Database error creating new user')
    }
    return c.json(await userWithIdentities(sql, id))
  })

  app.get('/admin/users/:id', async (c) => {
    const id = c.req.param('id')
    if (!UUID.test(id)) throw new GoTrueError(404, 'validation_failed', 'user_id must be an UUID')
    const user = await userWithIdentities(sql, id)
    if (!user) throw errors.userNotFound()
    return c.json(user)
  })

  app.put('/admin/users/:id', async (c) => {
    const id = c.req.param('id')
    if (!UUID.test(id)) throw new GoTrueError(404, 'validation_failed', 'user_id must be an UUID')
    const body = await readBody(c)
    await sql.begin(async (tx) => {
      const current = await findUser(tx, id, { lock: true })
      if (!current) throw errors.userNotFound()
      const appMeta = asObject(body.app_metadata, 'app_metadata')
      const userMeta = asObject(body.user_metadata, 'user_metadata')
      if (appMeta) await tx`update auth.users set raw_app_meta_data = ${tx.json(mergeMetadata(current.raw_app_meta_data, appMeta) as never)}, updated_at = now() where id = ${id}`
      if (userMeta) await tx`update auth.users set raw_user_meta_data = ${tx.json(mergeMetadata(current.raw_user_meta_data, userMeta) as never)}, updated_at = now() where id = ${id}`
      if (body.email !== undefined) {
        const email = emailOrFail(body.email)
        const other = await findUserByEmail(tx, email)
        if (other && other.id !== id) throw new GoTrueError(422, 'email_exists', 'A user with this email address has already been registered')
        await tx`update auth.users set email = ${email}, updated_at = now() where id = ${id}`
      }
      if (body.email_confirm === true) await tx`update auth.users set email_confirmed_at = coalesce(email_confirmed_at, now()) where id = ${id}`
      if (body.password !== undefined) {
        const password = checkPassword(body.password)
        await tx`update auth.users set encrypted_password = ${await hash(tx, password)}, updated_at = now() where id = ${id}`
        // an admin password change signs out every session
        await tx`delete from auth.sessions where user_id = ${id}`
      }
      if (typeof body.ban_duration === 'string') {
        const match = /^(\d+)h$/.exec(body.ban_duration)
        if (body.ban_duration !== 'none' && !match) throw errors.validation('ban_duration must be "none" or a number of hours such as "24h"')
        const until = match ? new Date(deps.clock.now() + Number(match[1]) * 3_600_000) : null
        await tx`update auth.users set banned_until = ${until}, updated_at = now() where id = ${id}`
        if (until) await tx`delete from auth.sessions where user_id = ${id}`
      }
    })
    return c.json(await userWithIdentities(sql, id))
  })

  app.delete('/admin/users/:id', async (c) => {
    const id = c.req.param('id')
    if (!UUID.test(id)) throw new GoTrueError(404, 'validation_failed', 'user_id must be an UUID')
    const body = await readBody(c)
    if (body.should_soft_delete === true) throw errors.validation('Soft deletion is not supported by the local auth server')
    const deleted = await sql`delete from auth.users where id = ${id} returning id`.catch((err: unknown) => {
      log(c).error({ err: { message: (err as Error).message } }, 'local auth: delete failed in the database')
      throw new GoTrueError(500, 'unexpected_failure', 'Database error deleting user')
    })
    if (deleted.length === 0) throw errors.userNotFound()
    return c.json({})
  })

  app.onError(goTrueErrorResponse)
  return app
}
