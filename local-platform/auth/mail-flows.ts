// The local auth server's flows that go through a mailbox, as GoTrue runs them: a six-digit code and a
// link per email, stored as GoTrue stores them (the SHA-224 of address and code, hex: the link's
// token_hash), good for AUTH_OTP_EXPIRY_SECONDS, used once. Sign-up confirmation (when
// AUTH_ENABLE_CONFIRMATIONS), magic links and email codes (/otp), their verification (/verify, by code or
// by token_hash, POST for a session, GET for a redirect with it), /resend, invitations (/invite), admin
// links (/admin/generate_link, which sends nothing), /reauthenticate. The mail goes to the local mailbox.
import type { Context, Hono } from 'hono'
import { sha224 } from '@noble/hashes/sha2.js'
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js'
import type { Deps } from '../../functions-shared/deps.ts'
import type { Tx } from '../../functions-shared/db/client.ts'
import { errors, GoTrueError } from './errors.ts'
import { findUser, findUserByEmail, userWithIdentities } from './users.ts'
import { type FirstFactor, issuer, startSession } from './sessions.ts'
import { redirectTarget } from './redirects.ts'
import { asObject, type AuthKit, readBody } from './kit.ts'
import { mailboxOf } from './mailbox.ts'

export type Verification = 'signup' | 'invite' | 'magiclink' | 'recovery' | 'email'
const TYPES = new Set<Verification>(['signup', 'invite', 'magiclink', 'recovery', 'email'])

/** GoTrue's stored form of an emailed code: hex SHA-224 of the address and the code. */
export const tokenHash = (email: string, code: string) => bytesToHex(sha224(utf8ToBytes(`${email}${code}`)))
const newCode = () => String(crypto.getRandomValues(new Uint32Array(1))[0]! % 1_000_000).padStart(6, '0')

/** The column a verification's token is kept in: a confirmation's, or a recovery's (magic links included). */
const column = (type: Verification, confirmed: boolean) =>
  type === 'signup' || type === 'invite' || (type === 'email' && !confirmed) ? 'confirmation' : 'recovery'

const expired = () => new GoTrueError(403, 'otp_expired', 'Token has expired or is invalid')

const SUBJECTS: Record<string, string> = {
  confirmation: 'Confirm Your Signup',
  magiclink: 'Your Magic Link',
  recovery: 'Reset Your Password',
  invite: 'You have been invited',
  reauthentication: 'Confirm reauthentication',
}

export function mailFlows(
  app: Hono,
  deps: Deps,
  kit: AuthKit,
): {
  sendConfirmation: (c: Context, tx: Tx, email: string, redirect: string) => Promise<void>
  sendRecovery: (c: Context, tx: Tx, email: string, redirect: string) => Promise<void>
} {
  const { sql, config, limits, redirects, emailOrFail, hash, requireUser, requireServiceRole, meta, log } = kit
  const mailbox = mailboxOf(deps)

  /** A new code for `email` in its column, and the link that verifies it; the mail when `send`. */
  async function issue(
    c: Context | null,
    tx: Tx,
    email: string,
    type: Verification | 'reauthentication',
    kind: keyof typeof SUBJECTS,
    redirect: string,
    send: boolean,
    confirmed = false,
  ) {
    const code = newCode()
    const hashed = tokenHash(email, code)
    if (type === 'reauthentication') await tx`update auth.users set reauthentication_token = ${hashed}, reauthentication_sent_at = now() where email = ${email}`
    else if (column(type, confirmed) === 'confirmation') {
      await tx`update auth.users set confirmation_token = ${hashed}, confirmation_sent_at = now() where email = ${email}`
    } else await tx`update auth.users set recovery_token = ${hashed}, recovery_sent_at = now() where email = ${email}`
    const link = type === 'reauthentication'
      ? null
      : `${issuer(deps)}/verify?token=${hashed}&type=${type === 'email' ? (confirmed ? 'magiclink' : 'signup') : type}&redirect_to=${
        encodeURIComponent(redirect)
      }`
    if (send) {
      const text = link ? `Follow this link, or enter the code ${code}:\n${link}` : `Enter the code: ${code}`
      mailbox.send(email, SUBJECTS[kind]!, text, { code, ...(link ? { link } : {}) }) // the link in the log too (a recovery's as recovery_link), as the local stack always logged it
      ;(c ? log(c) : deps.logs.get('local-auth')).info(
        { to: email, kind, ...(kind === 'recovery' ? { recovery_link: link } : { link }) },
        'local auth: mail kept in the local mailbox (/mail)',
      )
    }
    return { code, hashed, link }
  }

  const sendConfirmation = async (c: Context, tx: Tx, email: string, redirect: string) => {
    await issue(c, tx, email, 'signup', 'confirmation', redirect, true)
  }
  const sendRecovery = async (c: Context, tx: Tx, email: string, redirect: string) => {
    await issue(c, tx, email, 'recovery', 'recovery', redirect, true, true)
  }

  /** The user a code or token_hash of `type` belongs to, its token cleared; otp_expired otherwise. */
  async function redeem(tx: Tx, type: Verification, by: { email: string; code: string } | { hashed: string }) {
    const within = `${config.AUTH_OTP_EXPIRY_SECONDS} seconds`
    for (const col of type === 'email' ? (['confirmation', 'recovery'] as const) : ([column(type, true)] as const)) {
      const hashed = 'hashed' in by ? by.hashed : tokenHash(by.email, by.code)
      const rows = col === 'confirmation'
        ? await tx<{ id: string }[]>`select id from auth.users where confirmation_token = ${hashed} and confirmation_sent_at > now() - ${within}::interval ${
          'email' in by ? tx`and email = ${by.email}` : tx``
        } for update`
        : await tx<{ id: string }[]>`select id from auth.users where recovery_token = ${hashed} and recovery_sent_at > now() - ${within}::interval ${
          'email' in by ? tx`and email = ${by.email}` : tx``
        } for update`
      const row = rows[0]
      if (!row) continue
      if (col === 'confirmation') {
        await tx`update auth.users set confirmation_token = '', email_confirmed_at = coalesce(email_confirmed_at, now()), updated_at = now() where id = ${row.id}`
      } else {await tx`update auth.users set recovery_token = '', email_confirmed_at = coalesce(email_confirmed_at, now()), updated_at = now() where id = ${row.id}`}
      const user = (await findUser(tx, row.id))!
      if (user.banned_until && new Date(user.banned_until).getTime() > deps.clock.now()) {
        throw new GoTrueError(403, 'user_banned', 'User is banned')
      }
      return user
    }
    throw expired()
  }

  const amr: Record<Verification, FirstFactor> = { signup: 'otp', email: 'otp', magiclink: 'magiclink', invite: 'invite', recovery: 'recovery' }
  const typeOf = (raw: unknown): Verification => {
    // a phone code or an email change: none is ever issued here, so none is valid (GoTrue's answer to a wrong one)
    if (raw === 'sms' || raw === 'phone_change' || raw === 'email_change') throw expired()
    if (typeof raw !== 'string' || !TYPES.has(raw as Verification)) {
      throw errors.validation(`Unsupported verification type${typeof raw === 'string' ? ` "${raw}"` : ''}`)
    }
    return raw as Verification
  }

  app.post('/otp', async (c) => {
    limits.check(c, 'sign_in_sign_ups')
    const body = await readBody(c)
    if (body.phone) throw new GoTrueError(400, 'phone_provider_disabled', 'Unsupported phone provider')
    const email = emailOrFail(body.email)
    const create = body.create_user !== false
    const data = asObject(body.data, 'data') ?? {}
    const redirect = redirectTarget(redirects, typeof body.redirect_to === 'string' ? body.redirect_to : c.req.query('redirect_to'))
    limits.check(c, 'email_sent')
    limits.checkAddress(email)
    await sql.begin(async (tx) => {
      let user = await findUserByEmail(tx, email)
      if (!user) {
        if (!create) throw new GoTrueError(422, 'otp_disabled', 'Signups not allowed for otp')
        await createUser(tx, email, await hash(crypto.randomUUID()), data, false)
        user = await findUserByEmail(tx, email)
      }
      const confirmed = user!.email_confirmed_at !== null
      await issue(c, tx, email, 'email', confirmed ? 'magiclink' : 'confirmation', redirect, true, confirmed)
    })
    return c.json({})
  })

  app.post('/verify', async (c) => {
    limits.check(c, 'token_verifications')
    const body = await readBody(c)
    if (typeof body.phone === 'string' && body.phone !== '' && !/^\+?[1-9]\d{1,14}$/.test(body.phone.replace(/[\s()-]/g, ''))) {
      throw errors.validation('Invalid phone number format (E.164 required)')
    }
    const type = typeOf(body.type)
    const tokenHashGiven = typeof body.token_hash === 'string' && body.token_hash !== ''
    if (!tokenHashGiven && (typeof body.token !== 'string' || body.token === '')) throw errors.validation('Verify requires a token or a token hash')
    const session = await sql.begin(async (tx) => {
      const user = tokenHashGiven
        ? await redeem(tx, type, { hashed: String(body.token_hash) })
        : await redeem(tx, type, { email: emailOrFail(body.email), code: String(body.token) })
      return startSession(deps, tx, user, amr[type], meta(c))
    })
    return c.json(session)
  })

  app.get('/verify', async (c) => {
    limits.check(c, 'token_verifications')
    const type = typeOf(c.req.query('type'))
    const token = c.req.query('token') ?? ''
    // checked again here: the link may have been edited, and the tokens go in its fragment
    const redirect = redirectTarget(redirects, c.req.query('redirect_to'))
    if (token.length < 12) throw expired()
    const session = await sql.begin(async (tx) => startSession(deps, tx, await redeem(tx, type, { hashed: token }), amr[type], meta(c)))
    const fragment = new URLSearchParams({
      access_token: String(session.access_token),
      expires_at: String(session.expires_at),
      expires_in: String(session.expires_in),
      refresh_token: String(session.refresh_token),
      token_type: 'bearer',
      type,
    })
    return c.redirect(`${redirect}#${fragment}`, 303)
  })

  app.post('/resend', async (c) => {
    limits.check(c, 'sign_in_sign_ups')
    const body = await readBody(c)
    if (body.type === 'sms' || body.type === 'phone_change') throw new GoTrueError(400, 'phone_provider_disabled', 'Unsupported phone provider')
    if (body.type !== 'signup') {
      throw errors.validation(
        body.type === 'email_change'
          ? 'Resending email_change is not served by the local auth server'
          : 'Missing one of these types: signup, email_change, sms, phone_change',
      )
    }
    const email = emailOrFail(body.email)
    limits.check(c, 'email_sent')
    limits.checkAddress(email)
    const redirect = redirectTarget(
      redirects,
      typeof body.options === 'object' && body.options && typeof (body.options as Record<string, unknown>).emailRedirectTo === 'string'
        ? String((body.options as Record<string, unknown>).emailRedirectTo)
        : undefined,
    )
    await sql.begin(async (tx) => {
      const user = await findUserByEmail(tx, email)
      // a confirmed or unknown address gets nothing, and the answer does not say which
      if (user && !user.email_confirmed_at) await issue(c, tx, email, 'signup', 'confirmation', redirect, true)
    })
    return c.json({})
  })

  app.get('/reauthenticate', async (c) => {
    const { user } = await requireUser(c)
    if (!user.email) throw errors.validation('Reauthentication requires the user to have an email or a phone number')
    limits.check(c, 'email_sent')
    await sql.begin((tx) => issue(c, tx, user.email!, 'reauthentication', 'reauthentication', '', true))
    return c.json({})
  })

  async function createUser(tx: Tx, email: string, encrypted: string | null, data: Record<string, unknown>, invited: boolean): Promise<string> {
    const id = crypto.randomUUID()
    await tx`insert into auth.users (instance_id, id, aud, role, email, encrypted_password, raw_app_meta_data, raw_user_meta_data, created_at, updated_at, invited_at, is_anonymous)
             values ('00000000-0000-0000-0000-000000000000', ${id}, 'authenticated', 'authenticated', ${email}, ${encrypted},
                     ${tx.json({ provider: 'email', providers: ['email'] })}, ${tx.json(data as never)},
                     now(), now(), ${invited ? new Date() : null}, false)`
    await tx`insert into auth.identities (provider_id, user_id, identity_data, provider, last_sign_in_at, created_at, updated_at)
             values (${id}, ${id}, ${tx.json({ sub: id, email, email_verified: false, phone_verified: false })}, 'email', null, now(), now())`
    return id
  }

  app.post('/invite', async (c) => {
    await requireServiceRole(c)
    const body = await readBody(c)
    const email = emailOrFail(body.email)
    const data = asObject(body.data, 'data') ?? {}
    const redirect = redirectTarget(redirects, c.req.query('redirect_to'))
    const id = await sql.begin(async (tx) => {
      const found = await findUserByEmail(tx, email)
      if (found?.email_confirmed_at) throw new GoTrueError(422, 'email_exists', 'A user with this email address has already been registered')
      const userId = found?.id ?? (await createUser(tx, email, null, data, true))
      if (found) await tx`update auth.users set invited_at = now() where id = ${found.id}`
      await issue(c, tx, email, 'invite', 'invite', redirect, true)
      return userId
    })
    return c.json(await userWithIdentities(sql, id))
  })

  app.post('/admin/generate_link', async (c) => {
    await requireServiceRole(c)
    const body = await readBody(c)
    const type = String(body.type ?? '')
    if (!['signup', 'invite', 'magiclink', 'recovery'].includes(type)) {
      throw errors.validation(
        type.startsWith('email_change') ? 'Generating email change links is not served by the local auth server' : 'Invalid email action link type requested',
      )
    }
    const email = emailOrFail(body.email)
    const data = asObject(body.data, 'data') ?? {}
    const redirect = redirectTarget(redirects, typeof body.redirect_to === 'string' ? body.redirect_to : undefined)
    const password = typeof body.password === 'string' && body.password !== '' ? kit.checkPassword(body.password) : null
    const encrypted = password ? await hash(password) : null
    const result = await sql.begin(async (tx) => {
      let user = await findUserByEmail(tx, email)
      let verification = type as Verification
      if (!user) {
        if (type === 'recovery') throw new GoTrueError(404, 'user_not_found', 'User with this email not found')
        // a magic link for an address with no account makes one, as a sign-up
        if (type === 'magiclink') verification = 'signup'
        await createUser(tx, email, encrypted ?? (await hash(crypto.randomUUID())), data, type === 'invite')
        user = await findUserByEmail(tx, email)
      } else if ((type === 'signup' || type === 'invite') && user.email_confirmed_at) {
        throw new GoTrueError(422, 'email_exists', 'A user with this email address has already been registered')
      }
      const issued = await issue(
        c,
        tx,
        email,
        verification,
        verification === 'signup' ? 'confirmation' : verification,
        redirect,
        false,
        verification === 'magiclink' || verification === 'recovery',
      )
      return { id: user!.id, verification, ...issued }
    })
    return c.json({
      ...(await userWithIdentities(sql, result.id)),
      action_link: result.link,
      email_otp: result.code,
      hashed_token: result.hashed,
      verification_type: result.verification,
      redirect_to: redirect,
    })
  })

  return { sendConfirmation, sendRecovery }
}

export type MailFlows = ReturnType<typeof mailFlows>
