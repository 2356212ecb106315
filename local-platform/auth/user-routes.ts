// The local auth server's public and user endpoints: health, settings, JWKS, sign-up, the password and
// refresh-token grants, get/update user, logout, recover and verify, as GoTrue answers them.
import type { Context, Hono } from 'hono'
import type { MailFlows } from './mail-flows.ts'
import { unservedGrant } from './disabled-features.ts'
import type { Deps } from '../../functions-shared/deps.ts'
import { isPgError } from '../../functions-shared/db/tx.ts'
import { emailTaken, errors, GoTrueError } from './errors.ts'
import { findUser, findUserByEmail, mergeMetadata, normalizeEmail, passwordOf, userWithIdentities } from './users.ts'
import { randomToken, sessionResponse, startSession } from './sessions.ts'
import { redirectTarget } from './redirects.ts'
import { asObject, type AuthKit, checkMetadataSize, readBody } from './kit.ts'
import { verifyPassword } from './passwords.ts'

/**
 * A refresh token with its session. The shim's columns are nullable as GoTrue's are; this server writes
 * every one of these with each token and session, and the join and the match on token make them present.
 */
interface RefreshRow {
  id: string
  token: string
  revoked: boolean
  session_id: string
  updated_at: Date
  user_id: string
  session_created_at: Date
}

export function userRoutes(app: Hono, deps: Deps, kit: AuthKit, flows: MailFlows): void {
  const banned = (user: { banned_until: Date | null }) => user.banned_until !== null && new Date(user.banned_until).getTime() > deps.clock.now()
  const { sql, config, log, limits, redirects, checkPassword, emailOrFail, hash, requireUser, meta } = kit
  // a bcrypt hash of no one's password, at the stored ones' cost, that an unknown email is checked against
  let decoy: Promise<string> | undefined
  const unknownUserHash = () => (decoy ??= hash(crypto.randomUUID()).catch((err: unknown) => {
    decoy = undefined
    throw err
  }))
  app.get(
    '/health',
    (c) => c.json({ version: 'local', name: 'GoTrue (curriculum-tutor local auth)', description: 'GoTrue-compatible auth for local development' }),
  )

  app.get(
    '/settings',
    (c) =>
      c.json({
        external: { email: true, phone: false, anonymous_users: config.AUTH_ANONYMOUS_SIGN_INS },
        disable_signup: false,
        mailer_autoconfirm: !config.AUTH_ENABLE_CONFIRMATIONS,
        phone_autoconfirm: false,
        sms_provider: '',
        saml_enabled: false,
      }),
  )

  // HMAC keys are never published; asymmetric keys would be listed here.
  app.get('/.well-known/jwks.json', (c) => c.json({ keys: [] }, 200, { 'Cache-Control': 'public, max-age=600' }))

  app.post('/signup', async (c) => {
    limits.check(c, 'sign_in_sign_ups')
    const body = await readBody(c)
    // no email and no phone: an anonymous sign-in (supabase-js's signInAnonymously), when enabled
    if ((body.email === undefined || body.email === '') && (body.phone === undefined || body.phone === '')) {
      return anonymous(c, asObject(body.data, 'data') ?? {})
    }
    if (body.phone !== undefined && body.phone !== '' && (body.email === undefined || body.email === '')) {
      throw new GoTrueError(400, 'phone_provider_disabled', 'Unsupported phone provider')
    }
    const email = emailOrFail(body.email)
    const password = checkPassword(body.password)
    const data = asObject(body.data, 'data') ?? {}
    // hashed before the transaction, as every password here: bcrypt holds no connection
    const encrypted = await hash(password)
    try {
      const session = await sql.begin(async (tx) => {
        if (await findUserByEmail(tx, email)) throw new GoTrueError(422, 'user_already_exists', 'User already registered')
        const id = crypto.randomUUID()
        // as GoTrue: insert with the sign-up data, then set role, confirm (autoconfirm) and record the identity
        await tx`insert into auth.users (instance_id, id, aud, role, email, encrypted_password, raw_app_meta_data, raw_user_meta_data, created_at, updated_at, is_anonymous)
                 values ('00000000-0000-0000-0000-000000000000', ${id}, 'authenticated', '', ${email}, ${encrypted},
                         ${tx.json({ provider: 'email', providers: ['email'] })}, ${tx.json(data as never)}, now(), now(), false)`
        // with confirmations on, the address is confirmed by the emailed link or code, and no session yet
        const confirm = !config.AUTH_ENABLE_CONFIRMATIONS
        const identityData = { sub: id, email, email_verified: confirm, phone_verified: false }
        await tx`update auth.users set role = 'authenticated', email_confirmed_at = ${confirm ? new Date() : null},
                   raw_user_meta_data = raw_user_meta_data || ${tx.json(identityData)}::jsonb, updated_at = now() where id = ${id}`
        await tx`insert into auth.identities (provider_id, user_id, identity_data, provider, last_sign_in_at, created_at, updated_at)
                 values (${id}, ${id}, ${tx.json(identityData)}, 'email', ${confirm ? new Date() : null}, now(), now())`
        if (!confirm) {
          const redirect = redirectTarget(redirects, c.req.query('redirect_to'))
          await flows.sendConfirmation(c, tx, email, redirect)
          return { user: await userWithIdentities(tx, id) }
        }
        const user = (await findUser(tx, id))!
        return startSession(deps, tx, user, 'password', meta(c))
      })
      // GoTrue answers a sign-up that waits for its confirmation with the user alone
      return c.json('access_token' in session ? session : session.user)
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
      const found = email ? await findUserByEmail(sql, email) : null
      // an unknown email costs the same bcrypt as a known one: the time of the answer does not tell
      // which emails have accounts. The check holds no connection (passwords.ts)
      const stored = found?.encrypted_password || (await unknownUserHash())
      const ok = await verifyPassword(password, stored)
      if (!found || !found.encrypted_password || !password || !ok) throw errors.invalidCredentials()
      const session = await sql.begin(async (tx) => {
        // the account as it is now: a password changed while this one was checked is not this one
        const user = await findUserByEmail(tx, email!)
        if (!user || user.id !== found.id || user.encrypted_password !== found.encrypted_password) throw errors.invalidCredentials()
        if (!user.email_confirmed_at) throw new GoTrueError(400, 'email_not_confirmed', 'Email not confirmed')
        if (banned(user)) throw new GoTrueError(400, 'user_banned', 'User is banned')
        return startSession(deps, tx, user, 'password', meta(c))
      })
      return c.json(session)
    }
    if (grant === 'refresh_token') {
      const token = body.refresh_token
      if (typeof token !== 'string' || token === '') return c.json({ error: 'invalid_request', error_description: 'refresh_token required' }, 400)
      if (token.length < 12) throw errors.validation('Refresh token is not valid')
      const result = await sql.begin(async (tx) => {
        const [row] = await tx<RefreshRow[]>`select r.id, r.token, r.revoked, r.session_id, r.updated_at, s.user_id, s.created_at as session_created_at
                                 from auth.refresh_tokens r join auth.sessions s on s.id = r.session_id
                                where r.token = ${token} for update of r, s`
        if (!row) throw new GoTrueError(400, 'refresh_token_not_found', 'Invalid Refresh Token: Refresh Token Not Found')
        const user = await findUser(tx, row.user_id)
        if (!user) throw new GoTrueError(400, 'refresh_token_not_found', 'Invalid Refresh Token: Refresh Token Not Found')
        // as GoTrue: a ban ends the refreshes of every session, however it was started
        if (banned(user)) throw new GoTrueError(400, 'user_banned', 'Invalid Refresh Token: User Banned')
        let refreshToken: string
        if (row.revoked) {
          // A replay inside the reuse interval (two tabs refreshing at once) gets the session's current
          // token; any later replay means the token leaked: the whole session is revoked.
          const [child] = await tx<
            { token: string; created_at: Date }[]
          >`select token, created_at from auth.refresh_tokens where parent = ${token} and session_id = ${row.session_id} and revoked = false order by id desc limit 1`
          const withinInterval = child && deps.clock.now() - child.created_at.getTime() <= config.AUTH_REFRESH_REUSE_INTERVAL_SECONDS * 1000
          if (!withinInterval) {
            await tx`delete from auth.sessions where id = ${row.session_id}`
            return { reused: true } as const
          }
          refreshToken = child.token
        } else {
          refreshToken = randomToken()
          await tx`update auth.refresh_tokens set revoked = true, updated_at = now() where id = ${row.id}`
          await tx`insert into auth.refresh_tokens (token, user_id, revoked, session_id, parent, created_at, updated_at)
                   values (${refreshToken}, ${user.id}, false, ${row.session_id}, ${token}, ${new Date(deps.clock.now())}, now())`
          await tx`update auth.sessions set refreshed_at = now() at time zone 'utc', updated_at = now() where id = ${row.session_id}`
        }
        const session = await sessionResponse(deps, tx, {
          user,
          sessionId: row.session_id,
          startedAt: row.session_created_at.getTime(),
          method: 'token_refresh',
          refreshToken,
        })
        return { reused: false, session } as const
      })
      // the revocation above is committed before the error goes out
      if (result.reused) throw new GoTrueError(400, 'refresh_token_already_used', 'Invalid Refresh Token: Already Used')
      return c.json(result.session)
    }
    throw unservedGrant(grant, body)
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
    // a new password is checked against the current one and hashed before the transaction (passwords.ts)
    let encrypted: string | undefined
    if (body.password !== undefined) {
      const password = checkPassword(body.password)
      const current = await passwordOf(sql, user.id)
      if (current && (await verifyPassword(password, current))) {
        throw new GoTrueError(422, 'same_password', 'New password should be different from the old password.')
      }
      encrypted = await hash(password)
    }
    await sql.begin(async (tx) => {
      const current = (await findUser(tx, user.id, { lock: true }))!
      if (data) {
        await tx`update auth.users set raw_user_meta_data = ${
          tx.json(checkMetadataSize(mergeMetadata(current.raw_user_meta_data, data), 'data') as never)
        }, updated_at = now() where id = ${user.id}`
      }
      if (body.email !== undefined) {
        const email = emailOrFail(body.email)
        if (email !== current.email) {
          const other = await findUserByEmail(tx, email)
          if (other) throw new GoTrueError(422, 'email_exists', 'A user with this email address has already been registered')
          // another account taking the address at the same moment passes the check too: the unique index decides
          await tx`update auth.users set email = ${email}, email_confirmed_at = now(), updated_at = now() where id = ${user.id}`.catch(emailTaken)
          await tx`update auth.identities set identity_data = identity_data || ${
            tx.json({ email })
          }::jsonb, updated_at = now() where user_id = ${user.id} and provider = 'email'`
        }
      }
      if (encrypted !== undefined) {
        await tx`update auth.users set encrypted_password = ${encrypted}, updated_at = now() where id = ${user.id}`
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
    // the same limits whether or not the address has an account: a 429 says nothing of it
    limits.check(c, 'email_sent')
    limits.checkAddress(email)
    const user = await findUserByEmail(sql, email)
    if (user) {
      // as GoTrue: a redirect_to that is not the site, loopback or an allowed pattern becomes SITE_URL.
      // No mail leaves the local stack: the link and its code go to the local mailbox and the log, never
      // into the response.
      const redirect = redirectTarget(redirects, c.req.query('redirect_to'))
      await sql.begin((tx) => flows.sendRecovery(c, tx, email, redirect))
    }
    return c.json({})
  })

  /** An anonymous user and its session, as GoTrue makes them (no email, no identity, is_anonymous). */
  async function anonymous(c: Context, data: Record<string, unknown>): Promise<Response> {
    if (!config.AUTH_ANONYMOUS_SIGN_INS) throw new GoTrueError(422, 'anonymous_provider_disabled', 'Anonymous sign-ins are disabled')
    const session = await sql.begin(async (tx) => {
      const id = crypto.randomUUID()
      await tx`insert into auth.users (instance_id, id, aud, role, email, raw_app_meta_data, raw_user_meta_data, created_at, updated_at, is_anonymous)
               values ('00000000-0000-0000-0000-000000000000', ${id}, 'authenticated', 'authenticated', null, ${tx.json({})}, ${
        tx.json(data as never)
      }, now(), now(), true)`
      return startSession(deps, tx, (await findUser(tx, id))!, 'anonymous', meta(c))
    })
    return c.json(session)
  }
}
