// Multi-factor authentication with TOTP factors, as GoTrue serves it: enroll (a secret, its otpauth URI
// and QR code), challenge, verify (a good code makes the session aal2, with a new refresh token, and ends
// the user's aal1 sessions), unenroll, and the admin factor endpoints. Phone and WebAuthn factors are
// off, as on a project that has not turned them on.
import type { Context, Hono } from 'hono'
import * as OTPAuth from 'otpauth'
import { renderSVG } from 'uqr'
import type { Sql, Tx } from '../../functions-shared/db/client.ts'
import type { Deps } from '../../functions-shared/deps.ts'
import { clientIp } from '../../functions-shared/deps.ts'
import { errors, GoTrueError } from './errors.ts'
import { type AuthKit, readBody } from './kit.ts'
import { addSessionMethod, randomToken, sessionResponse } from './sessions.ts'
import { factorJson, type FactorRow, factorsOf, findUser, type UserRow, UUID } from './users.ts'

/** GoTrue's MFA settings: challenges last 5 minutes, an unverified factor left unchallenged as long. */
const CHALLENGE_EXPIRY_SECONDS = 300
const FACTOR_EXPIRY_SECONDS = 300
const FACTOR_COLUMNS = 'id, user_id, friendly_name, factor_type::text, status::text, created_at, updated_at, last_challenged_at, phone, secret'

interface StoredFactor extends FactorRow {
  user_id: string
  secret: string | null
}

const totpOf = (secret: string, issuer: string, label: string) =>
  new OTPAuth.TOTP({ issuer, label, algorithm: 'SHA1', digits: 6, period: 30, secret: OTPAuth.Secret.fromBase32(secret) })

async function ownedFactor(tx: Sql | Tx, userId: string, factorId: string | undefined, lock = false): Promise<StoredFactor> {
  if (!factorId || !UUID.test(factorId)) throw new GoTrueError(404, 'validation_failed', 'factor_id must be an UUID')
  const [factor] = await tx.unsafe<StoredFactor[]>(
    `select ${FACTOR_COLUMNS} from auth.mfa_factors where id = $1 and user_id = $2 ${lock ? 'for update' : ''}`,
    [factorId, userId],
  )
  if (!factor) throw new GoTrueError(404, 'mfa_factor_not_found', 'Factor not found')
  return factor
}

/** A removed factor no longer counts for the sessions it raised (GoTrue's DowngradeSessionsToAAL1). */
async function downgradeSessions(tx: Tx, factor: StoredFactor): Promise<void> {
  await tx`delete from auth.mfa_amr_claims where authentication_method = 'totp'
             and session_id in (select id from auth.sessions where factor_id = ${factor.id})`
  await tx`update auth.sessions set aal = 'aal1', factor_id = null where user_id = ${factor.user_id} and factor_id = ${factor.id}`
}

export function mfaRoutes(app: Hono, deps: Deps, kit: AuthKit): void {
  const { sql, config } = deps
  const ip = (c: Context) => {
    const address = clientIp(deps, c)
    return /^[0-9a-f:.]+$/i.test(address) ? address : '0.0.0.0'
  }

  /** The signed-in user with the session of the token; GoTrue needs both for every factor request. */
  async function withSession(c: Context): Promise<{ user: UserRow; sessionId: string; aal: string }> {
    const { user, sessionId } = await kit.requireUser(c)
    if (!sessionId) throw new GoTrueError(500, 'unexpected_failure', 'A valid session and a registered user are required to enroll a factor')
    const [session] = await sql<{ aal: string | null }[]>`select aal::text from auth.sessions where id = ${sessionId}`
    return { user, sessionId, aal: session?.aal ?? 'aal1' }
  }

  app.post('/factors', async (c) => {
    const { user, aal } = await withSession(c)
    const body = await readBody(c)
    const type = body.factor_type
    if (type === 'phone') throw new GoTrueError(422, 'mfa_phone_enroll_not_enabled', 'MFA enroll is disabled for Phone')
    if (type === 'webauthn') throw new GoTrueError(422, 'mfa_webauthn_enroll_not_enabled', 'MFA enroll is disabled for WebAuthn')
    if (type !== 'totp') throw errors.validation('factor_type needs to be totp, phone, or webauthn')
    if (!config.AUTH_MFA_TOTP_ENABLED) throw new GoTrueError(422, 'mfa_totp_enroll_not_enabled', 'MFA enroll is disabled for TOTP')
    const name = typeof body.friendly_name === 'string' ? body.friendly_name : ''
    const issuer = typeof body.issuer === 'string' && body.issuer !== '' ? body.issuer : new URL(config.AUTH_SITE_URL).host
    const secret = new OTPAuth.Secret({ size: 20 }).base32
    const uri = totpOf(secret, issuer, user.email ?? '').toString()
    const id = crypto.randomUUID()
    await sql.begin(async (tx) => {
      // one enrollment at a time per user, so the limits below count what is there
      await tx`select 1 from auth.users where id = ${user.id} for update`
      await tx`delete from auth.mfa_factors where status <> 'verified' and created_at + make_interval(secs => ${FACTOR_EXPIRY_SECONDS}) < now()
                 and not exists (select 1 from auth.mfa_challenges ch where ch.factor_id = mfa_factors.id)`
      const factors = await tx<
        { friendly_name: string | null; status: string }[]
      >`select friendly_name, status::text from auth.mfa_factors where user_id = ${user.id}`
      if (factors.some((f) => (f.friendly_name ?? '') === name)) {
        throw new GoTrueError(422, 'mfa_factor_name_conflict', `A factor with the friendly name "${name}" for this user already exists`)
      }
      const verified = factors.filter((f) => f.status === 'verified').length
      if (factors.length >= config.AUTH_MFA_MAX_ENROLLED_FACTORS) {
        throw new GoTrueError(422, 'too_many_enrolled_mfa_factors', 'Maximum number of verified factors reached, unenroll to continue')
      }
      if (verified > 0 && aal !== 'aal2') throw new GoTrueError(403, 'insufficient_aal', 'AAL2 required to enroll a new factor')
      await tx`insert into auth.mfa_factors (id, user_id, friendly_name, factor_type, status, created_at, updated_at, secret)
               values (${id}, ${user.id}, ${name}, 'totp', 'unverified', now(), now(), ${secret})`
    })
    return c.json({ id, type: 'totp', friendly_name: name, totp: { qr_code: renderSVG(uri), secret, uri } })
  })

  app.post('/factors/:id/challenge', async (c) => {
    kit.limits.check(c, 'mfa_challenge')
    const { user } = await withSession(c)
    const factor = await ownedFactor(sql, user.id, c.req.param('id'))
    if (!config.AUTH_MFA_TOTP_ENABLED) throw new GoTrueError(422, 'mfa_totp_verify_not_enabled', 'MFA verification is disabled for TOTP')
    const id = crypto.randomUUID()
    const now = new Date(deps.clock.now())
    await sql.begin(async (tx) => {
      await tx`insert into auth.mfa_challenges (id, factor_id, created_at, ip_address) values (${id}, ${factor.id}, ${now}, ${ip(c)}::inet)`
      await tx`update auth.mfa_factors set last_challenged_at = ${now} where id = ${factor.id}`
    })
    return c.json({ id, type: 'totp', expires_at: Math.floor(now.getTime() / 1000) + CHALLENGE_EXPIRY_SECONDS })
  })

  app.post('/factors/:id/verify', async (c) => {
    kit.limits.check(c, 'mfa_verify')
    const { user, sessionId } = await withSession(c)
    const body = await readBody(c)
    const factorId = c.req.param('id')
    const code = typeof body.code === 'string' ? body.code : ''
    if (code === '') throw errors.validation('Code needs to be non-empty')
    if (typeof body.challenge_id !== 'string' || !UUID.test(body.challenge_id)) throw errors.validation('challenge_id must be an UUID')
    const challengeId = body.challenge_id
    if (!config.AUTH_MFA_TOTP_ENABLED) throw new GoTrueError(422, 'mfa_totp_verify_not_enabled', 'MFA verification is disabled for TOTP')
    const result = await sql.begin(async (tx) => {
      const factor = await ownedFactor(tx, user.id, factorId, true)
      const [challenge] = await tx<{ id: string; created_at: Date; verified_at: Date | null; same_ip: boolean }[]>`
        select id, created_at, verified_at, ip_address = ${
        ip(c)
      }::inet as same_ip from auth.mfa_challenges where id = ${challengeId} and factor_id = ${factor.id} for update`
      if (!challenge) throw new GoTrueError(422, 'mfa_factor_not_found', 'MFA factor with the provided challenge ID not found')
      if (challenge.verified_at || !challenge.same_ip) throw new GoTrueError(422, 'mfa_ip_address_mismatch', 'Challenge and verify IP addresses mismatch.')
      if (deps.clock.now() > challenge.created_at.getTime() + CHALLENGE_EXPIRY_SECONDS * 1000) {
        await tx`delete from auth.mfa_challenges where id = ${challenge.id}`
        return { expired: challenge.id } as const
      }
      const valid = totpOf(factor.secret ?? '', 'local', user.email ?? '').validate({ token: code, window: 1, timestamp: deps.clock.now() }) !== null
      if (!valid) throw new GoTrueError(422, 'mfa_verification_failed', 'Invalid TOTP code entered')
      await tx`update auth.mfa_challenges set verified_at = now() where id = ${challenge.id}`
      if (factor.status !== 'verified') await tx`update auth.mfa_factors set status = 'verified', updated_at = now() where id = ${factor.id}`
      await addSessionMethod(deps, tx, sessionId, 'totp')
      await tx`update auth.sessions set aal = 'aal2', factor_id = ${factor.id}, updated_at = now() where id = ${sessionId}`
      // the aal1 refresh tokens of this session can no longer give it tokens: the client takes the new one
      await tx`update auth.refresh_tokens set revoked = true, updated_at = now() where session_id = ${sessionId} and revoked = false`
      const refreshToken = randomToken()
      await tx`insert into auth.refresh_tokens (token, user_id, revoked, session_id, created_at, updated_at)
               values (${refreshToken}, ${user.id}, false, ${sessionId}, now(), now())`
      await tx`delete from auth.sessions where user_id = ${user.id} and aal < 'aal2'`
      await tx`delete from auth.mfa_factors where user_id = ${user.id} and status = 'unverified' and factor_type = 'totp'`
      const [session] = await tx<{ created_at: Date }[]>`select created_at from auth.sessions where id = ${sessionId}`
      const fresh = (await findUser(tx, user.id))!
      return {
        session: await sessionResponse(deps, tx, { user: fresh, sessionId, startedAt: session!.created_at.getTime(), method: 'totp', refreshToken }),
      } as const
    })
    // the expired challenge's deletion is committed before the error goes out
    if ('expired' in result) {
      throw new GoTrueError(
        422,
        'mfa_challenge_expired',
        `MFA challenge ${result.expired} has expired, verify against another challenge or create a new challenge.`,
      )
    }
    return c.json(result.session)
  })

  app.delete('/factors/:id', async (c) => {
    const { user, aal } = await withSession(c)
    const id = await sql.begin(async (tx) => {
      const factor = await ownedFactor(tx, user.id, c.req.param('id'), true)
      if (factor.status === 'verified' && aal !== 'aal2') throw new GoTrueError(422, 'insufficient_aal', 'AAL2 required to unenroll verified factor')
      await downgradeSessions(tx, factor)
      await tx`delete from auth.mfa_factors where id = ${factor.id}`
      return factor.id
    })
    return c.json({ id })
  })

  // ---- admin
  async function adminUser(c: Context): Promise<UserRow> {
    await kit.requireServiceRole(c)
    const user = await findUser(sql, c.req.param('id') ?? '')
    if (!user) throw new GoTrueError(404, 'user_not_found', 'User not found')
    return user
  }
  app.get('/admin/users/:id/factors', async (c) => c.json(await factorsOf(sql, (await adminUser(c)).id)))
  app.delete('/admin/users/:id/factors/:factor', async (c) => {
    const user = await adminUser(c)
    const factor = await sql.begin(async (tx) => {
      const f = await ownedFactor(tx, user.id, c.req.param('factor'), true)
      await downgradeSessions(tx, f)
      await tx`delete from auth.mfa_factors where id = ${f.id}`
      return f
    })
    return c.json(factorJson(factor))
  })
  app.put('/admin/users/:id/factors/:factor', async (c) => {
    const user = await adminUser(c)
    const body = await readBody(c)
    const factor = await sql.begin(async (tx) => {
      const f = await ownedFactor(tx, user.id, c.req.param('factor'), true)
      if (typeof body.friendly_name === 'string' && body.friendly_name !== '') {
        const [updated] = await tx.unsafe<StoredFactor[]>(
          `update auth.mfa_factors set friendly_name = $1, updated_at = now() where id = $2 returning ${FACTOR_COLUMNS}`,
          [body.friendly_name, f.id],
        )
        return updated!
      }
      return f
    })
    return c.json(factorJson(factor))
  })
}
