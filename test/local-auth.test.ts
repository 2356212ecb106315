// The local auth server speaks GoTrue's HTTP API: shapes, errors, rotation, reuse detection, admin paging.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { createTestApp, json, type TestApp } from './helpers/app.ts'
import { bearer, studentToken } from './helpers/tokens.ts'
import { apiKey } from '../functions-shared/lib/keys.ts'
import { LOCAL_JWT_SECRET } from '../functions-shared/config.ts'
import { BCRYPT_CONCURRENCY } from '../local-platform/auth/passwords.ts'

let db: TestDatabase
let t: TestApp
let service: Record<string, string>
const V = { 'X-Supabase-Api-Version': '2024-01-01' }

beforeAll(async () => {
  db = await createTestDatabase()
  // GoTrue's behaviour, not its rate limits (local-auth.security.test.ts): one client makes every call here
  t = createTestApp({ sql: db.sql, env: { AUTH_RATE_LIMIT_SIGN_IN_SIGN_UPS: '100000', AUTH_RATE_LIMIT_TOKEN_VERIFICATIONS: '100000' } })
  service = bearer(await apiKey(LOCAL_JWT_SECRET, 'service_role'))
})
afterAll(async () => db?.close())

const gotrue = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
  const res = await t.auth.request(`/auth/v1${path}`, {
    method,
    headers: { 'content-type': 'application/json;charset=UTF-8', ...V, ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  const text = await res.text()
  return { status: res.status, headers: res.headers, body: text ? (JSON.parse(text) as Record<string, any>) : null }
}
const claimsOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as Record<string, any>
let n = 0
const newEmail = () => `user${n++}-${crypto.randomUUID().slice(0, 6)}@example.mr`

async function signUp(email = newEmail(), password = 'secret-123', data: Record<string, unknown> = {}) {
  const res = await gotrue('POST', '/signup', { email, password, data })
  expect(res.status, JSON.stringify(res.body)).toBe(200)
  return res.body!
}

describe('POST /signup', () => {
  it("returns a session (autoconfirm) with GoTrue's session and user shapes", async () => {
    const s = await signUp('Fatimetou@Example.MR', 'secret-123', { full_name: 'Fatimetou' })
    expect(Object.keys(s).sort()).toEqual(['access_token', 'expires_at', 'expires_in', 'refresh_token', 'token_type', 'user'])
    expect(s).toMatchObject({ token_type: 'bearer', expires_in: 3600 })
    expect(s.expires_at).toBe(claimsOf(s.access_token).exp)
    expect(s.user).toMatchObject({
      aud: 'authenticated',
      role: 'authenticated',
      email: 'fatimetou@example.mr',
      phone: '',
      is_anonymous: false,
      user_metadata: { full_name: 'Fatimetou', email: 'fatimetou@example.mr', email_verified: true, phone_verified: false, sub: s.user.id },
    })
    expect(s.user.app_metadata).toEqual({ provider: 'email', providers: ['email'] })
    expect(s.user.identities).toHaveLength(1)
    expect(s.user.identities[0]).toMatchObject({ provider: 'email', user_id: s.user.id, id: s.user.id })
    expect(s.user.email_confirmed_at).toEqual(expect.any(String))
    expect(s.user).not.toHaveProperty('encrypted_password')
  })

  it("gives the profile the metadata's name trimmed and cut to 200 characters", async () => {
    for (const [given, stored] of [['  Mohamed Lemine  ', 'Mohamed Lemine'], ['ا'.repeat(500), 'ا'.repeat(200)], [`${'a'.repeat(199)} b`, 'a'.repeat(199)]]) {
      const s = await signUp(newEmail(), 'secret-123', { full_name: given })
      const [row] = await db.sql`select full_name from public.profiles where id = ${s.user.id}`
      expect(row!.full_name).toBe(stored)
    }
  })

  it("issues access tokens with GoTrue's claims, app_metadata.role set by the hook", async () => {
    const s = await signUp()
    const claims = claimsOf(s.access_token)
    for (
      const k of ['iss', 'sub', 'aud', 'exp', 'iat', 'email', 'phone', 'app_metadata', 'user_metadata', 'role', 'aal', 'amr', 'session_id', 'is_anonymous']
    ) expect(claims).toHaveProperty(k)
    expect(claims).toMatchObject({
      aud: 'authenticated',
      role: 'authenticated',
      aal: 'aal1',
      amr: [{ method: 'password' }],
      app_metadata: { role: 'student' },
      iss: 'http://127.0.0.1:54321/auth/v1',
    })
    expect(JSON.parse(Buffer.from(s.access_token.split('.')[0], 'base64url').toString())).toEqual({ alg: 'HS256', typ: 'JWT' })
    const [row] = await db.sql`select count(*)::int as n from auth.sessions where id = ${claims.session_id}`
    expect(row!.n).toBe(1)
  })

  it('refuses a duplicate (422 user_already_exists), a short password (422 weak_password) and a bad email (400)', async () => {
    const email = newEmail()
    await signUp(email)
    expect(await gotrue('POST', '/signup', { email: email.toUpperCase(), password: 'secret-123' })).toMatchObject({
      status: 422,
      body: { code: 'user_already_exists', message: 'User already registered' },
    })
    const weak = await gotrue('POST', '/signup', { email: newEmail(), password: '12345' })
    expect(weak).toMatchObject({
      status: 422,
      body: { code: 'weak_password', message: 'Password should be at least 6 characters.', weak_password: { reasons: ['length'] } },
    })
    expect(weak.headers.get('x-supabase-api-version')).toBe('2024-01-01')
    expect(weak.headers.get('x-sb-error-code')).toBe('weak_password')
    expect(await gotrue('POST', '/signup', { email: 'nope', password: 'secret-123' })).toMatchObject({ status: 400, body: { code: 'validation_failed' } })
  })

  it('validates an address as GoTrue does (ASCII, no unseen character or empty domain label: 400) and takes one written in capitals as the same account (422)', async () => {
    // an app of its own: these requests would use up the burst of sign-ups the other tests share
    const own = createTestApp({ sql: db.sql, env: { AUTH_RATE_LIMIT_SIGN_IN_SIGN_UPS: '100000' } })
    const call = async (method: string, path: string, body: unknown, headers: Record<string, string> = {}) => {
      const res = await own.auth.request(`/auth/v1${path}`, {
        method,
        headers: { 'content-type': 'application/json', ...V, ...headers },
        body: JSON.stringify(body),
      })
      return { status: res.status, body: (await res.json()) as Record<string, any> }
    }
    const email = `e-${crypto.randomUUID().slice(0, 8)}@example.mr`
    expect((await call('POST', '/signup', { email, password: 'secret-123' })).status).toBe(200)
    expect(await call('POST', '/signup', { email: email.toUpperCase(), password: 'secret-123' })).toMatchObject({
      status: 422,
      body: { code: 'user_already_exists' },
    })
    expect((await call('POST', '/token?grant_type=password', { email: email.toUpperCase(), password: 'secret-123' })).status).toBe(200)
    // GoTrue's format check (checkmail): what it refuses is refused here too, never stored as another account
    for (const refused of [`é${email}`, `e\u0301${email}`, email.replace('example', 'ｅｘａｍｐｌｅ'), 'xx:;x@x.x', 'a b@example.mr', 'a@exa_mple.mr']) {
      expect(await call('POST', '/signup', { email: refused, password: 'secret-123' }), refused).toMatchObject({
        status: 400,
        body: { code: 'validation_failed', message: 'Unable to validate email address: invalid format' },
      })
    }
    // the same domain with a dot at its end or a label left empty is no address: refused
    for (const dotted of [`${email}.`, email.replace('.mr', '..mr'), email.replace('@', '@.')]) {
      expect(await call('POST', '/signup', { email: dotted, password: 'secret-123' }), dotted).toMatchObject({
        status: 400,
        body: { code: 'validation_failed' },
      })
    }
    for (const unseen of ['\u200b', '\u200e', '\u00ad', '\u00a0', '\u3000', '\u0007']) {
      const hidden = email.replace('@', `@${unseen}`)
      expect(await call('POST', '/signup', { email: hidden, password: 'secret-123' }), JSON.stringify(hidden)).toMatchObject({
        status: 400,
        body: { code: 'validation_failed' },
      })
    }
    const other = await call('POST', '/signup', { email: newEmail(), password: 'secret-123' })
    const token = { authorization: `Bearer ${other.body.access_token}` }
    expect(await call('PUT', '/user', { email: `a\u200b${email}` }, token)).toMatchObject({ status: 400, body: { code: 'validation_failed' } })
    expect(await call('PUT', '/user', { email: email.toUpperCase() }, token)).toMatchObject({ status: 422, body: { code: 'email_exists' } })
  })

  it('refuses an address longer than 255 characters once lower-cased (400), as sign-up, update and admin create, never 500', async () => {
    // 244 characters as sent, 484 in lower case: auth.users.email is varchar(255)
    const email = `${'İ'.repeat(120)}@${'İ'.repeat(120)}.mr`
    expect(email.toLowerCase().length).toBeGreaterThan(255)
    expect(await gotrue('POST', '/signup', { email, password: 'secret-123' })).toMatchObject({ status: 400, body: { code: 'validation_failed' } })
    const s = await signUp()
    expect(await gotrue('PUT', '/user', { email }, bearer(s.access_token))).toMatchObject({ status: 400, body: { code: 'validation_failed' } })
    expect(await gotrue('POST', '/admin/users', { email, password: 'secret-123' }, service)).toMatchObject({ status: 400, body: { code: 'validation_failed' } })
    expect(await gotrue('PUT', `/admin/users/${s.user.id}`, { email }, service)).toMatchObject({ status: 400, body: { code: 'validation_failed' } })
    expect(await gotrue('POST', '/token?grant_type=password', { email, password: 'secret-123' })).toMatchObject({
      status: 400,
      body: { code: 'invalid_credentials' },
    })
  })

  it('writes the legacy error shape without the API version header', async () => {
    const res = await gotrue('POST', '/signup', { email: 'nope', password: 'secret-123' }, { 'X-Supabase-Api-Version': '' })
    expect(res.body).toEqual({ code: 400, error_code: 'validation_failed', msg: expect.any(String) })
    expect(res.headers.get('x-supabase-api-version')).toBeNull()
  })

  it('answers bad JSON with 400 bad_json, never 5xx', async () => {
    const res = await t.auth.request('/auth/v1/signup', { method: 'POST', headers: V, body: '{"email":' })
    expect(res.status).toBe(400)
    expect(await json(res)).toMatchObject({ code: 'bad_json' })
  })

  it('refuses a body nested deeper than 512 levels with 400, never 5xx (deeper metadata overflowed the stack on its way to the database)', async () => {
    const nest = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`
    const raw = (method: string, path: string, body: string, headers: Record<string, string> = {}) =>
      t.auth.request(`/auth/v1${path}`, { method, headers: { 'content-type': 'application/json', ...V, ...headers }, body })
    const s = await signUp()
    const user = bearer(s.access_token)
    for (const depth of [10_000, 100_000]) {
      const signup = await raw('POST', '/signup', `{"email":"${newEmail()}","password":"secret-123","data":{"x":${nest(depth)}}}`)
      expect(signup.status, `sign-up ${depth}`).toBe(400)
      expect(await json(signup)).toMatchObject({ code: 'validation_failed', message: 'The request body nests arrays and objects deeper than 512 levels' })
      const update = await raw('PUT', '/user', `{"data":{"x":${nest(depth)}}}`, user)
      expect(update.status, `update ${depth}`).toBe(400)
      const admin = await raw('PUT', `/admin/users/${s.user.id}`, `{"user_metadata":{"x":${nest(depth)}}}`, service)
      expect(admin.status, `admin update ${depth}`).toBe(400)
    }
    // 512 levels in all (the body's own object included) are kept as sent
    const kept = await raw('PUT', '/user', `{"data":{"x":${nest(510)}}}`, user)
    expect(kept.status).toBe(200)
    expect(JSON.stringify((await json(kept)).user_metadata.x)).toBe(nest(510))
    expect((await raw('PUT', '/user', `{"data":{"x":${nest(511)}}}`, user)).status).toBe(400)
  })
})

describe('POST /token', () => {
  it('password grant: 400 invalid_credentials for a wrong password or unknown email', async () => {
    const email = newEmail()
    await signUp(email)
    expect(await gotrue('POST', '/token?grant_type=password', { email, password: 'wrong-one' })).toMatchObject({
      status: 400,
      body: { code: 'invalid_credentials', message: 'Invalid login credentials' },
    })
    expect(await gotrue('POST', '/token?grant_type=password', { email: newEmail(), password: 'secret-123' })).toMatchObject({
      status: 400,
      body: { code: 'invalid_credentials' },
    })
    expect((await gotrue('POST', '/token?grant_type=password', { email, password: 'secret-123' })).status).toBe(200)
  })

  it('refresh grant rotates the token and keeps the session', async () => {
    const s = await signUp()
    const r = await gotrue('POST', '/token?grant_type=refresh_token', { refresh_token: s.refresh_token })
    expect(r.status).toBe(200)
    expect(r.body!.refresh_token).not.toBe(s.refresh_token)
    expect(claimsOf(r.body!.access_token).session_id).toBe(claimsOf(s.access_token).session_id)
    const [parent] = await db.sql`select parent from auth.refresh_tokens where token = ${r.body!.refresh_token}`
    expect(parent!.parent).toBe(s.refresh_token)
  })

  it('replaying a used refresh token after the reuse interval revokes the whole family', async () => {
    const s = await signUp()
    const first = await gotrue('POST', '/token?grant_type=refresh_token', { refresh_token: s.refresh_token })
    t.clock.advance(11_000) // past AUTH_REFRESH_REUSE_INTERVAL_SECONDS (10)
    const replay = await gotrue('POST', '/token?grant_type=refresh_token', { refresh_token: s.refresh_token })
    expect(replay).toMatchObject({ status: 400, body: { code: 'refresh_token_already_used', message: 'Invalid Refresh Token: Already Used' } })
    // the legitimate holder's newer token died with the family
    const next = await gotrue('POST', '/token?grant_type=refresh_token', { refresh_token: first.body!.refresh_token })
    expect(next).toMatchObject({ status: 400, body: { code: 'refresh_token_not_found' } })
    expect((await gotrue('GET', '/user', undefined, bearer(first.body!.access_token))).status).toBe(403)
  })

  it('a replay inside the reuse interval (two tabs) gets the current token, not a revocation', async () => {
    const s = await signUp()
    const first = await gotrue('POST', '/token?grant_type=refresh_token', { refresh_token: s.refresh_token })
    const again = await gotrue('POST', '/token?grant_type=refresh_token', { refresh_token: s.refresh_token })
    expect(again.status).toBe(200)
    expect(again.body!.refresh_token).toBe(first.body!.refresh_token)
  })

  it('refuses unknown, short and missing refresh tokens, and unknown grants', async () => {
    expect(await gotrue('POST', '/token?grant_type=refresh_token', { refresh_token: 'abcdefghijklmnop' })).toMatchObject({
      status: 400,
      body: { code: 'refresh_token_not_found' },
    })
    expect(await gotrue('POST', '/token?grant_type=refresh_token', { refresh_token: 'short' })).toMatchObject({
      status: 400,
      body: { code: 'validation_failed' },
    })
    expect(await gotrue('POST', '/token?grant_type=refresh_token', {})).toMatchObject({ status: 400, body: { error: 'invalid_request' } })
    expect(await gotrue('POST', '/token?grant_type=magic', {})).toMatchObject({ status: 400, body: { code: 'invalid_credentials' } })
  })
})

describe('GET and PUT /user', () => {
  it('needs a bearer token: 401 no_authorization, 403 bad_jwt, 403 for an expired one', async () => {
    expect(await gotrue('GET', '/user')).toMatchObject({ status: 401, body: { code: 'no_authorization' } })
    expect(await gotrue('GET', '/user', undefined, bearer('x.y.z'))).toMatchObject({ status: 403, body: { code: 'bad_jwt' } })
    const s = await signUp()
    t.clock.advance(3601_000)
    try {
      expect(await gotrue('GET', '/user', undefined, bearer(s.access_token))).toMatchObject({ status: 403, body: { code: 'bad_jwt' } })
    } finally {
      t.clock.advance(-3601_000)
    }
    expect(await gotrue('GET', '/user', undefined, bearer(await studentToken()))).toMatchObject({ status: 403, body: { code: 'user_not_found' } })
  })

  it("holds a user's metadata to 16 KB of JSON, sent at once or merged over updates, as every token carries it", async () => {
    // an app of its own: its rate limits are not the file's (the clock is fake, so nothing refills them)
    const own = createTestApp({ sql: db.sql, env: { AUTH_RATE_LIMIT_SIGN_IN_SIGN_UPS: '100000' } })
    const call = async (method: string, path: string, body: unknown, headers: Record<string, string> = {}) => {
      const res = await own.auth.request(`/auth/v1${path}`, {
        method,
        headers: { 'content-type': 'application/json', ...V, ...headers },
        body: JSON.stringify(body),
      })
      return { status: res.status, body: (await res.json()) as Record<string, any> }
    }
    const big = { notes: 'x'.repeat(20_000) }
    const refused = await call('POST', '/signup', { email: newEmail(), password: 'secret-123', data: big })
    expect(refused).toMatchObject({
      status: 400,
      body: { code: 'validation_failed', message: expect.stringMatching(/^data is 2\d{4} bytes as JSON, more than 16384/) },
    })
    const s = (await call('POST', '/signup', { email: newEmail(), password: 'secret-123', data: { notes: 'x'.repeat(10_000) } })).body
    expect(s.user.user_metadata.notes).toHaveLength(10_000)
    // a second key of 10 KB makes the merged metadata too large: refused, and the first kept
    const user = bearer(s.access_token)
    expect(await call('PUT', '/user', { data: { more: 'y'.repeat(10_000) } }, user)).toMatchObject({ status: 400, body: { code: 'validation_failed' } })
    expect((await call('PUT', '/user', { data: { city: 'Atar' } }, user)).body.user_metadata).toMatchObject({ notes: 'x'.repeat(10_000), city: 'Atar' })
    expect(await call('PUT', `/admin/users/${s.user.id}`, { user_metadata: { more: 'y'.repeat(10_000) } }, service)).toMatchObject({ status: 400 })
    expect(await call('PUT', `/admin/users/${s.user.id}`, { app_metadata: big }, service)).toMatchObject({ status: 400 })
  })

  it('merges user metadata (null deletes a key) and refuses app_metadata', async () => {
    const s = await signUp(newEmail(), 'secret-123', { full_name: 'A', grade: '7C' })
    const res = await gotrue('PUT', '/user', { data: { grade: null, city: 'Nouakchott' } }, bearer(s.access_token))
    expect(res.body!.user_metadata).toMatchObject({ full_name: 'A', city: 'Nouakchott' })
    expect(res.body!.user_metadata).not.toHaveProperty('grade')
    expect(await gotrue('PUT', '/user', { app_metadata: { role: 'admin' } }, bearer(s.access_token))).toMatchObject({
      status: 403,
      body: { code: 'not_admin' },
    })
  })

  it('changes the password, refuses the same one, and signs out the other sessions', async () => {
    const email = newEmail()
    const a = await signUp(email)
    const b = (await gotrue('POST', '/token?grant_type=password', { email, password: 'secret-123' })).body!
    expect(await gotrue('PUT', '/user', { password: 'secret-123' }, bearer(a.access_token))).toMatchObject({ status: 422, body: { code: 'same_password' } })
    expect((await gotrue('PUT', '/user', { password: 'another-456' }, bearer(a.access_token))).status).toBe(200)
    expect((await gotrue('GET', '/user', undefined, bearer(a.access_token))).status).toBe(200)
    expect(await gotrue('GET', '/user', undefined, bearer(b.access_token))).toMatchObject({ status: 403, body: { code: 'session_not_found' } })
    expect((await gotrue('POST', '/token?grant_type=password', { email, password: 'another-456' })).status).toBe(200)
  })
  it('two users taking one new address at once: one gets it, the other 422 email_exists (never a 500)', async () => {
    // an app of its own: its rate limits are not the file's (the clock is fake, so nothing refills them)
    const own = createTestApp({ sql: db.sql, env: { AUTH_RATE_LIMIT_SIGN_IN_SIGN_UPS: '100000' } })
    const call = async (method: string, path: string, body: unknown, headers: Record<string, string>) => {
      const res = await own.auth.request(`/auth/v1${path}`, {
        method,
        headers: { 'content-type': 'application/json', ...V, ...headers },
        body: JSON.stringify(body),
      })
      return { status: res.status, body: (await res.json()) as Record<string, any> }
    }
    const users = await Promise.all(
      Array.from({ length: 6 }, async () => (await call('POST', '/signup', { email: newEmail(), password: 'secret-123' }, {})).body),
    )
    const target = newEmail()
    const results = await Promise.all(users.map((u) => call('PUT', '/user', { email: target }, bearer(u.access_token))))
    expect(results.filter((r) => r.status === 200)).toHaveLength(1)
    for (const r of results.filter((x) => x.status !== 200)) expect(r).toMatchObject({ status: 422, body: { code: 'email_exists' } })
    const admins = await Promise.all(users.map((u) => call('PUT', `/admin/users/${u.user.id}`, { email: `${target}.other` }, service)))
    expect(admins.filter((r) => r.status === 200)).toHaveLength(1)
    for (const r of admins.filter((x) => x.status !== 200)) expect(r).toMatchObject({ status: 422, body: { code: 'email_exists' } })
  })
})

describe('POST /logout', () => {
  it('scopes: local ends this session, others the rest, global all (204)', async () => {
    const email = newEmail()
    const a = await signUp(email)
    const login = async () => (await gotrue('POST', '/token?grant_type=password', { email, password: 'secret-123' })).body!
    const [b, c] = [await login(), await login()]
    const alive = async (s: Record<string, any>) => (await gotrue('GET', '/user', undefined, bearer(s.access_token))).status === 200
    const others = await gotrue('POST', '/logout?scope=others', undefined, bearer(a.access_token))
    expect(others.status).toBe(204)
    expect([await alive(a), await alive(b), await alive(c)]).toEqual([true, false, false])
    const d = await login()
    expect((await gotrue('POST', '/logout?scope=local', undefined, bearer(d.access_token))).status).toBe(204)
    expect([await alive(a), await alive(d)]).toEqual([true, false])
    const e = await login()
    expect((await gotrue('POST', '/logout', undefined, bearer(e.access_token))).status).toBe(204)
    expect([await alive(a), await alive(e)]).toEqual([false, false])
  })
})

describe('POST /recover', () => {
  it('answers 200 {} whether or not the email exists', async () => {
    const email = newEmail()
    await signUp(email)
    expect(await gotrue('POST', '/recover', { email })).toMatchObject({ status: 200, body: {} })
    expect(await gotrue('POST', '/recover', { email: newEmail() })).toMatchObject({ status: 200, body: {} })
  })
})

describe('admin endpoints', () => {
  it('need a service_role token: 401 without, 403 not_admin for a user', async () => {
    expect(await gotrue('GET', '/admin/users')).toMatchObject({ status: 401, body: { code: 'no_authorization' } })
    const s = await signUp()
    expect(await gotrue('GET', '/admin/users', undefined, bearer(s.access_token))).toMatchObject({ status: 403, body: { code: 'not_admin' } })
    expect(await gotrue('GET', '/admin/users', undefined, bearer(await apiKey(LOCAL_JWT_SECRET, 'anon')))).toMatchObject({
      status: 403,
      body: { code: 'not_admin' },
    })
  })

  it('create: user_metadata as given, app_metadata merged, email confirmed; duplicate 422 email_exists', async () => {
    const email = newEmail()
    const res = await gotrue('POST', '/admin/users', {
      email,
      password: 'secret-123',
      email_confirm: true,
      user_metadata: { full_name: 'Prof' },
      app_metadata: { role: 'teacher' },
    }, service)
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({
      email,
      user_metadata: { full_name: 'Prof', email_verified: true },
      app_metadata: { provider: 'email', providers: ['email'], role: 'teacher' },
    })
    expect(res.body!.email_confirmed_at).toEqual(expect.any(String))
    const [p] = await db.sql`select role from public.profiles where id = ${res.body!.id}`
    expect(p!.role).toBe('teacher')
    expect(await gotrue('POST', '/admin/users', { email, password: 'secret-123' }, service)).toMatchObject({ status: 422, body: { code: 'email_exists' } })
  })

  it('lists users newest first with X-Total-Count and a Link header whose URLs put page first', async () => {
    for (let i = 0; i < 3; i++) await signUp()
    const res = await gotrue('GET', '/admin/users?page=1&per_page=2', undefined, service)
    const total = Number(res.headers.get('x-total-count'))
    expect(total).toBeGreaterThanOrEqual(3)
    expect(res.body).toMatchObject({ aud: 'authenticated' })
    expect(res.body!.users).toHaveLength(2)
    const last = Math.ceil(total / 2)
    expect(res.headers.get('link')).toBe(
      `<http://localhost/auth/v1/admin/users?page=2&per_page=2>; rel="next", <http://localhost/auth/v1/admin/users?page=${last}&per_page=2>; rel="last"`,
    )
    const lastPage = await gotrue('GET', `/admin/users?page=${last}&per_page=2`, undefined, service)
    expect(lastPage.headers.get('link')).not.toContain('rel="next"')
    // a page past any row: empty while its offset is a number, 400 beyond (it was a 500 from the database)
    expect((await gotrue('GET', '/admin/users?page=1000000000', undefined, service)).body).toMatchObject({ users: [] })
    for (const page of ['99999999999999999999', '9007199254740993', '1e400'.replace('e400', '0'.repeat(400))]) {
      expect(await gotrue('GET', `/admin/users?page=${page}`, undefined, service)).toMatchObject({ status: 400, body: { code: 'validation_failed' } })
    }
  })

  it('get, update and delete by id; unknown ids 404 user_not_found, non-UUIDs 404 validation_failed', async () => {
    const s = await signUp()
    const id = s.user.id as string
    expect((await gotrue('GET', `/admin/users/${id}`, undefined, service)).body).toMatchObject({ id })
    const upd = await gotrue('PUT', `/admin/users/${id}`, { user_metadata: { full_name: 'Renamed' }, app_metadata: { role: 'admin' } }, service)
    expect(upd.body).toMatchObject({ user_metadata: { full_name: 'Renamed' }, app_metadata: { role: 'admin' } })
    expect(await gotrue('GET', `/admin/users/${crypto.randomUUID()}`, undefined, service)).toMatchObject({ status: 404, body: { code: 'user_not_found' } })
    expect(await gotrue('GET', '/admin/users/123', undefined, service)).toMatchObject({ status: 404, body: { code: 'validation_failed' } })
    expect(await gotrue('DELETE', `/admin/users/${id}`, { should_soft_delete: false }, service)).toMatchObject({ status: 200, body: {} })
    expect(await gotrue('DELETE', `/admin/users/${id}`, { should_soft_delete: false }, service)).toMatchObject({
      status: 404,
      body: { code: 'user_not_found' },
    })
  })

  it('an admin password change signs out every session; a ban refuses sign-in', async () => {
    const email = newEmail()
    const s = await signUp(email)
    await gotrue('PUT', `/admin/users/${s.user.id}`, { password: 'changed-789' }, service)
    expect((await gotrue('GET', '/user', undefined, bearer(s.access_token))).status).toBe(403)
    await gotrue('PUT', `/admin/users/${s.user.id}`, { ban_duration: '24h' }, service)
    expect(await gotrue('POST', '/token?grant_type=password', { email, password: 'changed-789' })).toMatchObject({ status: 400, body: { code: 'user_banned' } })
    await gotrue('PUT', `/admin/users/${s.user.id}`, { ban_duration: 'none' }, service)
    expect((await gotrue('POST', '/token?grant_type=password', { email, password: 'changed-789' })).status).toBe(200)
    // the longest ban is Go's longest duration, as GoTrue parses it; a longer one is 400, never 500 (it was
    // an invalid date on its way to the database)
    for (const ban of ['9999999999999999h', '99999999999999999999999h', '2562048h']) {
      expect(await gotrue('PUT', `/admin/users/${s.user.id}`, { ban_duration: ban }, service), ban).toMatchObject({
        status: 400,
        body: { code: 'validation_failed' },
      })
    }
    expect((await gotrue('POST', '/token?grant_type=password', { email, password: 'changed-789' })).status).toBe(200)
    expect(await gotrue('PUT', `/admin/users/${s.user.id}`, { ban_duration: '2562047h' }, service)).toMatchObject({
      status: 200,
      body: { banned_until: expect.stringMatching(/^23\d\d-/) },
    })
    expect(await gotrue('POST', '/token?grant_type=password', { email, password: 'changed-789' })).toMatchObject({ status: 400, body: { code: 'user_banned' } })
  })
})

describe('the access-token hook', () => {
  it('is skipped when AUTH_HOOK_ENABLED is false: no role claim from the profile', async () => {
    const plain = createTestApp({ sql: db.sql, env: { AUTH_HOOK_ENABLED: 'false' } })
    const res = await plain.auth.request('/auth/v1/signup', { method: 'POST', body: JSON.stringify({ email: newEmail(), password: 'secret-123' }) })
    expect(claimsOf((await json(res)).access_token).app_metadata.role).toBeUndefined()
  })
})

describe('password hashes (bcrypt on the thread pool, as pgcrypto and GoTrue store them)', () => {
  // apps of their own: their rate limits are not the file's (the clock is fake, so nothing refills them)
  const ownApp = (cost: string) => {
    const own = createTestApp({ sql: db.sql, env: { AUTH_BCRYPT_COST: cost, AUTH_RATE_LIMIT_SIGN_IN_SIGN_UPS: '100000' } })
    return async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
      own.auth.request(`/auth/v1${path}`, {
        method,
        headers: { 'content-type': 'application/json', ...V, ...headers },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      })
  }

  it('stores $2a$ hashes that pgcrypto checks, and signs in with a hash pgcrypto made', async () => {
    const call = ownApp('4')
    // an Arabic password of 100 bytes: bcrypt reads the first 72, in pgcrypto as here
    const long = 'كلمة-سر-طويلة-'.repeat(4)
    const s = (await (await call('POST', '/signup', { email: newEmail(), password: long })).json()) as { user: { id: string } }
    const [row] = await db
      .sql`select encrypted_password as h, extensions.crypt(${long}, encrypted_password) = encrypted_password as ok from auth.users where id = ${s.user.id}`
    expect(row!.h).toMatch(/^\$2a\$04\$/)
    expect(row!.ok).toBe(true)
    const email = newEmail()
    const made = (await (await call('POST', '/signup', { email, password: 'secret-123' })).json()) as { user: { id: string } }
    await db.sql`update auth.users set encrypted_password = extensions.crypt(${long}, extensions.gen_salt('bf', 4)) where id = ${made.user.id}`
    expect((await call('POST', '/token?grant_type=password', { email, password: long })).status).toBe(200)
    const wrong = await call('POST', '/token?grant_type=password', { email, password: 'secret-123' })
    expect({ status: wrong.status, body: await wrong.json() }).toMatchObject({ status: 400, body: { code: 'invalid_credentials' } })
  })

  it('holds no other request while a password is checked: a request made after a sign-in is answered before it', async () => {
    // a cost that takes a few hundred milliseconds: pgcrypto's crypt() ran it in the embedded database, on
    // Node's thread and its one connection, and every request waited for it
    const call = ownApp('12')
    const email = newEmail()
    const session = (await (await call('POST', '/signup', { email, password: 'secret-123' })).json()) as { access_token: string }
    const done: string[] = []
    const signIn = call('POST', '/token?grant_type=password', { email, password: 'wrong-password' }).then((r) => done.push(`sign-in ${r.status}`))
    const user = call('GET', '/user', undefined, { authorization: `Bearer ${session.access_token}` }).then((r) => done.push(`user ${r.status}`))
    await Promise.all([signIn, user])
    expect(done).toEqual(['user 200', 'sign-in 400'])
  })

  it(`checks at most ${BCRYPT_CONCURRENCY} passwords at once: tokens are checked (WebCrypto, on the same thread pool) while a burst of sign-ins waits`, async () => {
    const call = ownApp('13')
    const email = newEmail()
    const session = (await (await call('POST', '/signup', { email, password: 'secret-123' })).json()) as { access_token: string }
    // six wrong passwords at once, each a few hundred milliseconds of bcrypt: without the limit they took
    // the pool's four threads, and a token's HMAC check waited for one of them to finish
    let signedIn = 0
    const signIns = Array.from(
      { length: 6 },
      () => call('POST', '/token?grant_type=password', { email, password: 'wrong-password' }).then((r) => (signedIn++, r.status)),
    )
    let answered = 0
    while (signedIn === 0) {
      const res = await call('GET', '/user', undefined, { authorization: `Bearer ${session.access_token}` })
      expect(res.status).toBe(200)
      if (signedIn === 0) answered++
    }
    expect(await Promise.all(signIns)).toEqual(Array(6).fill(400))
    // each check takes milliseconds: many are answered before the first sign-in is, where one or two were
    expect(answered).toBeGreaterThanOrEqual(5)
  })
})
