// Accounts and profiles through the real app, supabase-js and the local auth server, on a real database.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { createTestApp, json, type TestApp } from './helpers/app.ts'
import { bearer } from './helpers/tokens.ts'
import { apiKey } from '../functions-shared/lib/keys.ts'
import { LOCAL_JWT_SECRET } from '../functions-shared/config.ts'

let db: TestDatabase
let t: TestApp
let service: Record<string, string>

beforeAll(async () => {
  db = await createTestDatabase()
  t = createTestApp({ sql: db.sql, env: { RATE_LIMIT_AUTH_PER_MINUTE: '1000' } })
  service = bearer(await apiKey(LOCAL_JWT_SECRET, 'service_role'))
})
afterAll(async () => db?.close())

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  t.request(path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })
const patch = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  t.request(path, { method: 'PATCH', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })
const claimsOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as Record<string, any>

async function signIn(email: string, password: string) {
  const res = await post('/auth/signin', { email, password })
  const body = await json(res)
  expect(res.status, JSON.stringify(body)).toBe(200)
  return body.data as { access_token: string; refresh_token: string; user: Record<string, unknown> }
}

describe('sign-up and sign-in', () => {
  it('creates a student account whose profile the trigger made, and signs in', async () => {
    const res = await post('/auth/signup', { email: 'Khadija@Example.MR', password: 'lycee-2026', full_name: 'Khadija Mint Brahim' })
    const body = await json(res)
    expect(res.status, JSON.stringify(body)).toBe(201)
    expect(body).toEqual({ success: true, data: { user_id: expect.stringMatching(/^[0-9a-f-]{36}$/), email: 'khadija@example.mr' } })

    const session = await signIn('khadija@example.mr', 'lycee-2026')
    expect(session.refresh_token.length).toBeGreaterThanOrEqual(12)
    expect(session.user).toMatchObject({ id: body.data.user_id, email: 'khadija@example.mr' })
    const claims = claimsOf(session.access_token)
    expect(claims).toMatchObject({
      sub: body.data.user_id,
      aud: 'authenticated',
      role: 'authenticated',
      app_metadata: { role: 'student' },
      aal: 'aal1',
      is_anonymous: false,
    })

    const me = await t.request('/me', { headers: bearer(session.access_token) })
    expect(await json(me)).toEqual({
      id: body.data.user_id,
      email: 'khadija@example.mr',
      full_name: 'Khadija Mint Brahim',
      role: 'student',
      hint_level: 3,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    })
  })

  it('ignores a role chosen at sign-up: the account is a student', async () => {
    // supabase-js puts options.data in user_metadata; our endpoint takes no role at all
    const res = await post('/auth/signup', { email: 'sneaky@example.mr', password: 'secret-123', full_name: 'Sneaky', role: 'admin' })
    expect(res.status).toBe(201)
    const session = await signIn('sneaky@example.mr', 'secret-123')
    expect(claimsOf(session.access_token).app_metadata.role).toBe('student')
  })
})

describe('PATCH /me', () => {
  it('changes the full name and returns the profile', async () => {
    await post('/auth/signup', { email: 'sidi@example.mr', password: 'secret-123', full_name: 'Sidi' })
    const { access_token } = await signIn('sidi@example.mr', 'secret-123')
    const res = await patch('/me', { full_name: '  Sidi Ould Mohamed ' }, bearer(access_token))
    const body = await json(res)
    expect(res.status).toBe(200)
    expect(body).toMatchObject({ full_name: 'Sidi Ould Mohamed', role: 'student' })
    expect(await json(await t.request('/me', { headers: bearer(access_token) }))).toMatchObject({ full_name: 'Sidi Ould Mohamed' })
  })
})

describe('logout', () => {
  it('revokes the session of the token sent, and always succeeds', async () => {
    await post('/auth/signup', { email: 'aicha@example.mr', password: 'secret-123', full_name: 'Aicha' })
    const { access_token, refresh_token } = await signIn('aicha@example.mr', 'secret-123')
    const res = await post('/auth/logout', {}, bearer(access_token))
    expect(await json(res)).toEqual({ success: true, data: { revoked: true } })
    // the session is gone: Supabase Auth refuses the token and the refresh token
    const user = await t.auth.request('/auth/v1/user', { headers: { ...bearer(access_token), 'X-Supabase-Api-Version': '2024-01-01' } })
    expect(user.status).toBe(403)
    expect(await json(user)).toMatchObject({ code: 'session_not_found' })
    const refresh = await t.auth.request('/auth/v1/token?grant_type=refresh_token', { method: 'POST', body: JSON.stringify({ refresh_token }) })
    expect(refresh.status).toBe(400)
    expect(await json(await post('/auth/logout', {}))).toEqual({ success: true, data: { revoked: false } })
    expect((await post('/auth/logout', {}, bearer('garbage.token.value'))).status).toBe(200)
  })
})

describe('reset-password', () => {
  it('answers the same whether or not the email exists, and writes the link only to the log', async () => {
    await post('/auth/signup', { email: 'mariem@example.mr', password: 'secret-123', full_name: 'Mariem' })
    const known = await post('/auth/reset-password', { email: 'mariem@example.mr' })
    const unknown = await post('/auth/reset-password', { email: 'nobody@example.mr' })
    expect(known.status).toBe(200)
    expect(unknown.status).toBe(200)
    const [a, b] = [await json(known), await json(unknown)]
    expect(a).toEqual(b)
    expect(JSON.stringify(a)).not.toContain('verify')
    // asked again within the minute: the same 429 for both, which says so rather than "sent"
    const [again, againUnknown] = [
      await post('/auth/reset-password', { email: 'mariem@example.mr' }),
      await post('/auth/reset-password', { email: 'nobody@example.mr' }),
    ]
    expect([again.status, againUnknown.status]).toEqual([429, 429])
    const [c, d] = [await json(again), await json(againUnknown)]
    expect({ ...c, request_id: null }).toEqual({ ...d, request_id: null })
    const line = t.logs.lines.find((l) => typeof l.recovery_link === 'string')
    expect(line?.recovery_link).toMatch(/\/auth\/v1\/verify\?token=[a-z0-9]{56}&type=recovery/)

    // the link signs the user in (recovery session) and lands on the site with the tokens
    const link = new URL(line!.recovery_link as string)
    const verify = await t.auth.request(`${link.pathname}${link.search}`)
    expect(verify.status).toBe(303)
    const fragment = new URLSearchParams(new URL(verify.headers.get('location')!).hash.slice(1))
    expect(fragment.get('type')).toBe('recovery')
    expect(claimsOf(fragment.get('access_token')!).amr[0].method).toBe('recovery')
    // and only once
    expect((await t.auth.request(`${link.pathname}${link.search}`)).status).toBe(403)
  })
})

describe('administration of users', () => {
  it('creates a pre-confirmed account with full_name and role in its metadata and the role in the profile', async () => {
    const res = await post('/admin/users', { email: 'prof.ba@example.mr', password: 'enseigner', full_name: 'Oumar Ba', role: 'teacher' }, service)
    const profile = await json(res)
    expect(res.status, JSON.stringify(profile)).toBe(201)
    expect(profile).toMatchObject({ email: 'prof.ba@example.mr', full_name: 'Oumar Ba', role: 'teacher', hint_level: 3 })
    const [row] = await db.sql`select email_confirmed_at, raw_user_meta_data, raw_app_meta_data from auth.users where id = ${profile.id}`
    expect(row!.email_confirmed_at).not.toBeNull()
    expect(row!.raw_user_meta_data).toMatchObject({ full_name: 'Oumar Ba', role: 'teacher' })
    expect(row!.raw_app_meta_data).toMatchObject({ role: 'teacher' })
    const session = await signIn('prof.ba@example.mr', 'enseigner')
    expect(claimsOf(session.access_token).app_metadata.role).toBe('teacher')
  })

  it('defaults the role to student', async () => {
    const res = await post('/admin/users', { email: 'eleve.defaut@example.mr', password: 'secret-123', full_name: 'Eleve' }, service)
    expect(await json(res)).toMatchObject({ role: 'student' })
  })

  it('lists profiles with items and total, newest first, paginated', async () => {
    const page1 = await json(await t.request('/admin/users?limit=2&offset=0', { headers: service }))
    const page2 = await json(await t.request('/admin/users?limit=2&offset=2', { headers: service }))
    expect(page1.items).toHaveLength(2)
    expect(page1.total).toBeGreaterThanOrEqual(4)
    expect(page1.total).toBe(page2.total)
    expect(page1.items[0].id).not.toBe(page2.items[0].id)
    expect(new Date(page1.items[0].created_at) >= new Date(page1.items[1].created_at)).toBe(true)
    const all = await json(await t.request('/admin/users', { headers: service }))
    expect(all.limit).toBe(50)
  })

  it('changes a role; the change reaches the user at their next token', async () => {
    await post('/auth/signup', { email: 'promu@example.mr', password: 'secret-123', full_name: 'Promu' })
    const before = await signIn('promu@example.mr', 'secret-123')
    const id = before.user.id as string
    const res = await patch(`/admin/users/${id}/role`, { role: 'teacher' }, service)
    expect(await json(res)).toMatchObject({ id, role: 'teacher' })
    expect(claimsOf(before.access_token).app_metadata.role).toBe('student') // the old token is unchanged
    // next token, by refresh as supabase-js does it
    const refreshed = await t.auth.request('/auth/v1/token?grant_type=refresh_token', {
      method: 'POST',
      body: JSON.stringify({ refresh_token: before.refresh_token }),
    })
    expect(claimsOf((await json(refreshed)).access_token).app_metadata.role).toBe('teacher')
    // and by sign-in
    expect(claimsOf((await signIn('promu@example.mr', 'secret-123')).access_token).app_metadata.role).toBe('teacher')
  })

  it('makes an admin whose token then opens admin routes', async () => {
    await post('/auth/signup', { email: 'chef@example.mr', password: 'secret-123', full_name: 'Chef' })
    const { user } = await signIn('chef@example.mr', 'secret-123')
    await patch(`/admin/users/${user.id}/role`, { role: 'admin' }, service)
    const { access_token } = await signIn('chef@example.mr', 'secret-123')
    const res = await t.request('/admin/test-role', { headers: bearer(access_token) })
    expect(await json(res)).toEqual({ success: true, role: 'admin', via: 'token' })
    // an admin's token also reads every profile through RLS
    const rows = await import('../functions-shared/db/tx.ts').then(({ asUser }) =>
      asUser(db.sql, claimsOf(access_token) as never, (tx) => tx`select count(*)::int as n from public.profiles`)
    )
    expect(rows[0]!.n).toBeGreaterThan(1)
  })

  it("ends an admin token's rights with the admin role or the session, not an hour later when the token expires", async () => {
    const profiles = (token: string) =>
      import('../functions-shared/db/tx.ts').then(({ asUser }) =>
        asUser(db.sql, claimsOf(token) as never, (tx) => tx`select count(*)::int as n from public.profiles`)
      ).then((r) => r[0]!.n as number)
    await post('/auth/signup', { email: 'ex-chef@example.mr', password: 'secret-123', full_name: 'Ex chef' })
    const { user } = await signIn('ex-chef@example.mr', 'secret-123')
    await patch(`/admin/users/${user.id}/role`, { role: 'admin' }, service)
    const demoted = (await signIn('ex-chef@example.mr', 'secret-123')).access_token
    const reset = (await signIn('ex-chef@example.mr', 'secret-123')).access_token
    expect((await t.request('/admin/test-role', { headers: bearer(demoted) })).status).toBe(200)
    expect(await profiles(demoted)).toBeGreaterThan(1)
    // demoted: the token still says admin, the profile no longer does
    await patch(`/admin/users/${user.id}/role`, { role: 'student' }, service)
    expect(claimsOf(demoted).app_metadata.role).toBe('admin')
    const refused = await t.request('/admin/users', { headers: bearer(demoted) })
    expect(refused.status).toBe(403)
    expect(await json(refused)).toMatchObject({ error: 'forbidden', request_id: expect.any(String) })
    expect((await post('/admin/users', { email: 'porte@example.mr', password: 'secret-123', full_name: 'Porte', role: 'admin' }, bearer(demoted))).status).toBe(
      403,
    )
    expect(await profiles(demoted)).toBe(1) // RLS: its own profile only
    // an admin again, then a password reset: the sessions end, and the admin rights of their tokens
    await patch(`/admin/users/${user.id}/role`, { role: 'admin' }, service)
    expect((await t.request('/admin/test-role', { headers: bearer(reset) })).status).toBe(200)
    await post(`/admin/users/${user.id}/reset-password`, { new_password: 'nouveau-123' }, service)
    expect((await t.request('/admin/test-role', { headers: bearer(reset) })).status).toBe(403)
    expect(await profiles(reset)).toBe(1)
    const fresh = (await signIn('ex-chef@example.mr', 'nouveau-123')).access_token
    expect((await t.request('/admin/test-role', { headers: bearer(fresh) })).status).toBe(200)
  })

  it('sets the hint level', async () => {
    const created = await json(await post('/admin/users', { email: 'indice@example.mr', password: 'secret-123', full_name: 'Indice' }, service))
    const res = await t.request(`/admin/users/${created.id}/hint-level?hint_level=5`, { method: 'PATCH', headers: service })
    expect(await json(res)).toMatchObject({ id: created.id, hint_level: 5 })
  })

  it('resets a password: the old one stops working, the new one works, sessions end', async () => {
    await post('/auth/signup', { email: 'oubli@example.mr', password: 'ancien-mdp', full_name: 'Oubli' })
    const old = await signIn('oubli@example.mr', 'ancien-mdp')
    const res = await post(`/admin/users/${old.user.id}/reset-password`, { new_password: 'nouveau-mdp' }, service)
    expect(await json(res)).toEqual({ success: true, user_id: old.user.id })
    expect((await post('/auth/signin', { email: 'oubli@example.mr', password: 'ancien-mdp' })).status).toBe(401)
    await signIn('oubli@example.mr', 'nouveau-mdp')
    expect((await t.auth.request('/auth/v1/user', { headers: bearer(old.access_token) })).status).toBe(403)
  })

  it('deletes the profile, then the account', async () => {
    const created = await json(await post('/admin/users', { email: 'depart@example.mr', password: 'secret-123', full_name: 'Depart' }, service))
    const res = await t.request(`/admin/users/${created.id}`, { method: 'DELETE', headers: service })
    expect(await json(res)).toEqual({ status: 'deleted', user_id: created.id, profile_deleted: true })
    const left = await db
      .sql`select (select count(*)::int from auth.users where id = ${created.id}) as users, (select count(*)::int from public.profiles where id = ${created.id}) as profiles`
    expect(left[0]).toEqual({ users: 0, profiles: 0 })
    expect((await post('/auth/signin', { email: 'depart@example.mr', password: 'secret-123' })).status).toBe(401)
    expect((await t.request(`/admin/users/${created.id}`, { method: 'DELETE', headers: service })).status).toBe(404)
  })
})
