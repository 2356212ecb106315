// The local auth server's admin endpoints (service_role only): list, create, get, update and delete users.
import type { Hono } from 'hono'
import type { Deps } from '../../functions-shared/deps.ts'
import { isPgError } from '../../functions-shared/db/tx.ts'
import type { TotalRow } from '../../functions-shared/db/client.ts'
import { emailTaken, errors, GoTrueError } from './errors.ts'
import { findUser, findUserByEmail, mergeMetadata, userWithIdentities, UUID } from './users.ts'
import { randomToken } from './sessions.ts'
import { asObject, type AuthKit, checkMetadataSize, readBody } from './kit.ts'

/** The longest ban: Go's time.Duration, in whole hours, as GoTrue reads ban_duration. */
const MAX_BAN_HOURS = 2_562_047

export function adminRoutes(app: Hono, deps: Deps, kit: AuthKit): void {
  const { sql, log, checkPassword, emailOrFail, hash, requireServiceRole } = kit
  app.use('/admin/*', async (c, next) => {
    await requireServiceRole(c)
    await next()
  })

  app.get('/admin/users', async (c) => {
    // as GoTrue: page and per_page are unsigned whole numbers, or 400
    const whole = (name: string, fallback: number) => {
      const raw = c.req.query(name)
      if (raw === undefined || raw === '') return fallback
      if (!/^\d{1,15}$/.test(raw)) throw errors.validation(`Bad Pagination Parameters: strconv.ParseUint: parsing "${raw}": invalid syntax`)
      return Number(raw)
    }
    const page = Math.max(1, whole('page', 1))
    const perPage = Math.min(1000, Math.max(1, whole('per_page', 50)))
    // a page whose first row is past what a number holds exactly (or PostgreSQL's bigint) was a 500 from
    // the database; GoTrue answers its own overflow of the page number with a 400 too
    if (!Number.isSafeInteger((page - 1) * perPage)) throw errors.validation('Bad Pagination Parameters: page is out of range')
    const [{ total }] = await sql<[TotalRow]>`select count(*)::int as total from auth.users`
    const ids = await sql<{ id: string }[]>`select id from auth.users order by created_at desc, id limit ${perPage} offset ${(page - 1) * perPage}`
    const users = await Promise.all(ids.map((r) => userWithIdentities(sql, r.id)))
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
    const encrypted = await hash(password)
    try {
      await sql.begin(async (tx) => {
        if (await findUserByEmail(tx, email)) throw new GoTrueError(422, 'email_exists', 'A user with this email address has already been registered')
        await tx`insert into auth.users (instance_id, id, aud, role, email, encrypted_password, raw_app_meta_data, raw_user_meta_data, created_at, updated_at, is_anonymous)
                 values ('00000000-0000-0000-0000-000000000000', ${id}, 'authenticated', '', ${email}, ${encrypted},
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
    // the new password's hash is made before the transaction: bcrypt holds no connection (passwords.ts)
    const encrypted = body.password !== undefined ? await hash(checkPassword(body.password)) : undefined
    await sql.begin(async (tx) => {
      const current = await findUser(tx, id, { lock: true })
      if (!current) throw errors.userNotFound()
      const appMeta = asObject(body.app_metadata, 'app_metadata')
      const userMeta = asObject(body.user_metadata, 'user_metadata')
      if (appMeta) {
        await tx`update auth.users set raw_app_meta_data = ${
          tx.json(checkMetadataSize(mergeMetadata(current.raw_app_meta_data, appMeta), 'app_metadata') as never)
        }, updated_at = now() where id = ${id}`
      }
      if (userMeta) {
        await tx`update auth.users set raw_user_meta_data = ${
          tx.json(checkMetadataSize(mergeMetadata(current.raw_user_meta_data, userMeta), 'user_metadata') as never)
        }, updated_at = now() where id = ${id}`
      }
      if (body.email !== undefined) {
        const email = emailOrFail(body.email)
        const other = await findUserByEmail(tx, email)
        if (other && other.id !== id) throw new GoTrueError(422, 'email_exists', 'A user with this email address has already been registered')
        await tx`update auth.users set email = ${email}, updated_at = now() where id = ${id}`.catch(emailTaken)
      }
      if (body.email_confirm === true) await tx`update auth.users set email_confirmed_at = coalesce(email_confirmed_at, now()) where id = ${id}`
      if (encrypted !== undefined) {
        await tx`update auth.users set encrypted_password = ${encrypted}, updated_at = now() where id = ${id}`
        // an admin password change signs out every session
        await tx`delete from auth.sessions where user_id = ${id}`
      }
      if (typeof body.ban_duration === 'string') {
        const match = /^(\d+)h$/.exec(body.ban_duration)
        // GoTrue parses a Go duration, whose longest is 2562047h (about 292 years); a longer one is 400 there
        // too (and past about 2.4e11 hours the date itself stops being one)
        if ((body.ban_duration !== 'none' && !match) || (match && Number(match[1]) > MAX_BAN_HOURS)) {
          throw errors.validation(`ban_duration must be "none" or a number of hours up to ${MAX_BAN_HOURS} such as "24h"`)
        }
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
}
