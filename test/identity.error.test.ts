import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { createTestApp, json, type TestApp } from './helpers/app.ts'
import { bearer, studentToken } from './helpers/tokens.ts'
import { createUser } from './helpers/users.ts'
import { apiKey } from '../functions-shared/lib/keys.ts'
import { LOCAL_JWT_SECRET } from '../functions-shared/config.ts'

let db: TestDatabase
let t: TestApp
let service: Record<string, string>

beforeAll(async () => {
  db = await createTestDatabase()
  t = createTestApp({ sql: db.sql, env: { RATE_LIMIT_AUTH_PER_MINUTE: '1000' } })
  service = bearer(await apiKey(LOCAL_JWT_SECRET, 'service_role'))
  await t.request('/auth/signup', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'taken@example.mr', password: 'secret-123', full_name: 'Taken' }),
  })
})
afterAll(async () => db?.close())

const send = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
  const res = await t.request(path, {
    method,
    headers: { 'content-type': 'application/json', 'x-request-id': 'bad-input', ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  return { status: res.status, body: await json(res) }
}
const fieldsOf = (body: Record<string, any>) => (body.fields ?? []).map((f: { field: string }) => f.field)

describe('bad input to /auth', () => {
  it.each([
    ['malformed email', { email: 'not-an-email', password: 'secret-123', full_name: 'X' }, ['email']],
    ['short password', { email: 'a@example.mr', password: '12345', full_name: 'X' }, ['password']],
    ['password over 72 characters', { email: 'a@example.mr', password: 'x'.repeat(73), full_name: 'X' }, ['password']],
    ['missing full_name', { email: 'a@example.mr', password: 'secret-123' }, ['full_name']],
    ['blank full_name', { email: 'a@example.mr', password: 'secret-123', full_name: '   ' }, ['full_name']],
  ])('sign-up with %s: 400 with the failing field', async (_name, body, fields) => {
    const res = await send('POST', '/auth/signup', body)
    expect(res.status).toBe(400)
    expect(res.body).toMatchObject({ error: 'validation_failed', request_id: 'bad-input' })
    expect(fieldsOf(res.body)).toEqual(fields)
  })

  it('sign-up with an email already registered (any case): 409', async () => {
    const res = await send('POST', '/auth/signup', { email: 'TAKEN@example.mr', password: 'secret-123', full_name: 'Again' })
    expect(res).toMatchObject({ status: 409, body: { error: 'conflict', request_id: 'bad-input' } })
  })

  it('sign-in with a wrong password or an unknown email: the same 401', async () => {
    const wrong = await send('POST', '/auth/signin', { email: 'taken@example.mr', password: 'wrong-pass' })
    const unknown = await send('POST', '/auth/signin', { email: 'nobody@example.mr', password: 'wrong-pass' })
    expect(wrong).toEqual({ status: 401, body: { error: 'invalid_credentials', message: 'Invalid email or password', request_id: 'bad-input' } })
    expect(unknown).toEqual(wrong)
  })

  it('reset-password with a malformed email: 400', async () => {
    expect((await send('POST', '/auth/reset-password', { email: 'nope' })).status).toBe(400)
  })
})

describe('bad input to /me', () => {
  it('refuses any field but full_name (no mass assignment)', async () => {
    const user = await createUser(db.sql)
    for (const extra of [{ role: 'admin' }, { hint_level: 5 }, { token_balance: 1e6 }, { id: crypto.randomUUID() }]) {
      const res = await send('PATCH', '/me', { full_name: 'Ok', ...extra }, bearer(user.token))
      expect(res.status).toBe(400)
      expect(fieldsOf(res.body)).toEqual(Object.keys(extra))
    }
    expect((await send('GET', '/me', undefined, bearer(user.token))).body.role).toBe('student')
  })

  it('needs a user token: 401 without, 403 for the service key', async () => {
    expect((await send('GET', '/me')).status).toBe(401)
    expect((await send('GET', '/me', undefined, service)).status).toBe(403)
  })

  it('answers 404 for a valid token whose account has no profile', async () => {
    expect((await send('GET', '/me', undefined, bearer(await studentToken()))).status).toBe(404)
  })
})

describe('bad input to /admin/users', () => {
  it('refuses an unknown role, a short password and a malformed email on create', async () => {
    const base = { email: 'new@example.mr', password: 'secret-123', full_name: 'New' }
    expect(fieldsOf((await send('POST', '/admin/users', { ...base, role: 'superuser' }, service)).body)).toEqual(['role'])
    expect(fieldsOf((await send('POST', '/admin/users', { ...base, password: '123' }, service)).body)).toEqual(['password'])
    expect(fieldsOf((await send('POST', '/admin/users', { ...base, email: 'new@' }, service)).body)).toEqual(['email'])
  })

  it('answers 409 for a duplicate email on create', async () => {
    const res = await send('POST', '/admin/users', { email: 'taken@example.mr', password: 'secret-123', full_name: 'Dup' }, service)
    expect(res.status).toBe(409)
  })

  it('refuses a hint level outside 1-5 and a missing one', async () => {
    const user = await createUser(db.sql)
    for (const q of ['hint_level=0', 'hint_level=6', 'hint_level=2.5', 'hint_level=abc', '']) {
      const res = await send('PATCH', `/admin/users/${user.id}/hint-level?${q}`, undefined, service)
      expect(res.status, q).toBe(400)
      expect(fieldsOf(res.body)).toEqual(['hint_level'])
    }
  })

  it('refuses ids that are not UUIDs with 400, and unknown users with 404', async () => {
    expect((await send('PATCH', '/admin/users/42/role', { role: 'teacher' }, service)).status).toBe(400)
    expect((await send('DELETE', '/admin/users/not-a-uuid', undefined, service)).status).toBe(400)
    const ghost = crypto.randomUUID()
    expect((await send('PATCH', `/admin/users/${ghost}/role`, { role: 'teacher' }, service)).status).toBe(404)
    expect((await send('PATCH', `/admin/users/${ghost}/hint-level?hint_level=2`, undefined, service)).status).toBe(404)
    expect((await send('DELETE', `/admin/users/${ghost}`, undefined, service)).status).toBe(404)
    expect((await send('POST', `/admin/users/${ghost}/reset-password`, { new_password: 'secret-123' }, service)).status).toBe(404)
  })

  it('refuses limit above 200 and negative offsets', async () => {
    expect(fieldsOf((await send('GET', '/admin/users?limit=201', undefined, service)).body)).toEqual(['limit'])
    expect(fieldsOf((await send('GET', '/admin/users?offset=-1', undefined, service)).body)).toEqual(['offset'])
  })
})

describe('auth rate limit', () => {
  it('gives the 6th sign-in attempt from one IP within a minute the spec 429 body', async () => {
    const limited = createTestApp({ sql: db.sql })
    const attempt = () =>
      limited.request('/auth/signin', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-request-id': 'six' },
        body: JSON.stringify({ email: 'taken@example.mr', password: 'wrong-pass' }),
      })
    for (let i = 0; i < 5; i++) expect((await attempt()).status).toBe(401)
    const res = await attempt()
    expect(res.status).toBe(429)
    expect(await json(res)).toEqual({ error: 'rate_limited', message: expect.any(String), request_id: 'six', retry_after: 60, limit: 5, window: '1m' })
    expect(res.headers.get('retry-after')).toBe('60')
    limited.clock.advance(60_001)
    expect((await attempt()).status).toBe(401)
  })
})
