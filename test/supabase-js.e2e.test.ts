// The acid test of the local stack: the real @supabase/supabase-js client against the real gateway on
// loopback, exactly as an app would use it against a hosted Supabase project.
import { createClient } from '@supabase/supabase-js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { testConfig } from './helpers/app.ts'
import { type Gateway, startGateway } from '../scripts/lib/gateway.ts'
import { apiKey } from '../functions-shared/lib/keys.ts'
import { LOCAL_JWT_SECRET } from '../functions-shared/config.ts'
import { createLogRoot } from '../functions-shared/lib/logger.ts'

let db: TestDatabase
let gateway: Gateway
let anon: string
let serviceKey: string
const options = { auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false } }
const client = () => createClient(gateway.url, anon, options)
const claimsOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as Record<string, any>

beforeAll(async () => {
  db = await createTestDatabase()
  gateway = await startGateway({
    config: testConfig({ AUTH_BCRYPT_COST: '4', LOG_LEVEL: 'silent', RATE_LIMIT_AUTH_PER_MINUTE: '1000' }),
    sql: db.sql,
    port: 0,
    deps: { logs: createLogRoot({ level: 'silent' }) },
  })
  anon = await apiKey(LOCAL_JWT_SECRET, 'anon')
  serviceKey = await apiKey(LOCAL_JWT_SECRET, 'service_role')
})
afterAll(async () => {
  await gateway?.close(1000)
  await db?.close()
})

async function api(path: string, token: string, init: RequestInit = {}) {
  const res = await fetch(`${gateway.url}/functions/v1${path}`, {
    ...init,
    headers: { Authorization: `Bearer ${token}`, 'content-type': 'application/json', ...(init.headers ?? {}) },
  })
  return { status: res.status, body: (await res.json()) as Record<string, any> }
}

describe('supabase-js against the local stack', () => {
  it('signs up, signs in, reads the user, refreshes, updates, and signs out', async () => {
    const supabase = client()
    const email = `sjs-${crypto.randomUUID().slice(0, 8)}@example.mr`
    const up = await supabase.auth.signUp({ email, password: 'secret-123', options: { data: { full_name: 'Mohamed Lemine' } } })
    expect(up.error).toBeNull()
    expect(up.data.session?.access_token).toEqual(expect.any(String))
    expect(up.data.user?.email).toBe(email)

    const signIn = await supabase.auth.signInWithPassword({ email, password: 'secret-123' })
    expect(signIn.error).toBeNull()
    const session = signIn.data.session!

    const got = await supabase.auth.getUser(session.access_token)
    expect(got.error).toBeNull()
    expect(got.data.user?.user_metadata).toMatchObject({ full_name: 'Mohamed Lemine' })

    // the token works on the service
    const me = await api('/me', session.access_token)
    expect(me).toMatchObject({ status: 200, body: { email, full_name: 'Mohamed Lemine', role: 'student' } })

    const refreshed = await supabase.auth.refreshSession({ refresh_token: session.refresh_token })
    expect(refreshed.error).toBeNull()
    expect(refreshed.data.session?.refresh_token).not.toBe(session.refresh_token)

    await supabase.auth.setSession({ access_token: refreshed.data.session!.access_token, refresh_token: refreshed.data.session!.refresh_token })
    const updated = await supabase.auth.updateUser({ data: { city: 'Kiffa' } })
    expect(updated.error).toBeNull()
    expect(updated.data.user?.user_metadata).toMatchObject({ full_name: 'Mohamed Lemine', city: 'Kiffa' })

    const out = await supabase.auth.signOut()
    expect(out.error).toBeNull()
    const after = await client().auth.getUser(refreshed.data.session!.access_token)
    // GoTrue answers 403 session_not_found, which supabase-js reports as AuthSessionMissingError
    expect(after.error?.name).toBe('AuthSessionMissingError')
    expect(after.data.user).toBeNull()
  })

  it('reports a wrong password as AuthApiError invalid_credentials, and a duplicate sign-up as user_already_exists', async () => {
    const supabase = client()
    const email = `dup-${crypto.randomUUID().slice(0, 8)}@example.mr`
    await supabase.auth.signUp({ email, password: 'secret-123' })
    const dup = await supabase.auth.signUp({ email, password: 'secret-123' })
    expect(dup.error).toMatchObject({ name: 'AuthApiError', status: 422, code: 'user_already_exists' })
    const bad = await supabase.auth.signInWithPassword({ email, password: 'nope-nope' })
    expect(bad.error).toMatchObject({ name: 'AuthApiError', status: 400, code: 'invalid_credentials' })
    const weak = await supabase.auth.signUp({ email: `w-${email}`, password: '123' })
    expect(weak.error).toMatchObject({ name: 'AuthWeakPasswordError', code: 'weak_password', reasons: ['length'] })
  })

  it('administers users with auth.admin: createUser, listUsers (with paging), deleteUser', async () => {
    const admin = createClient(gateway.url, serviceKey, options)
    const created: string[] = []
    for (let i = 0; i < 3; i++) {
      const res = await admin.auth.admin.createUser({
        email: `adm-${i}-${crypto.randomUUID().slice(0, 6)}@example.mr`,
        password: 'secret-123',
        email_confirm: true,
        user_metadata: { full_name: `Admin made ${i}` },
      })
      expect(res.error).toBeNull()
      created.push(res.data.user!.id)
    }
    const page = await admin.auth.admin.listUsers({ page: 1, perPage: 2 })
    expect(page.error).toBeNull()
    expect(page.data.users).toHaveLength(2)
    expect((page.data as { total?: number }).total).toBeGreaterThanOrEqual(3)
    expect((page.data as { nextPage?: number | null }).nextPage).toBe(2)
    const del = await admin.auth.admin.deleteUser(created[0]!)
    expect(del.error).toBeNull()
    const gone = await admin.auth.admin.getUserById(created[0]!)
    expect(gone.error).toMatchObject({ status: 404, code: 'user_not_found' })
  })

  it("carries an admin's role change into the student's next token", async () => {
    const supabase = client()
    const email = `role-${crypto.randomUUID().slice(0, 8)}@example.mr`
    const { data } = await supabase.auth.signUp({ email, password: 'secret-123', options: { data: { full_name: 'Vatma' } } })
    const session = data.session!
    expect(claimsOf(session.access_token).app_metadata.role).toBe('student')

    const changed = await api(`/admin/users/${data.user!.id}/role`, serviceKey, { method: 'PATCH', body: JSON.stringify({ role: 'teacher' }) })
    expect(changed).toMatchObject({ status: 200, body: { role: 'teacher' } })

    const next = await supabase.auth.refreshSession({ refresh_token: session.refresh_token })
    expect(claimsOf(next.data.session!.access_token).app_metadata.role).toBe('teacher')
    expect((await api('/me', next.data.session!.access_token)).body.role).toBe('teacher')
  })

  it("serves the service's own sign-up and sign-in over HTTP, which call Supabase Auth through supabase-js", async () => {
    const email = `svc-${crypto.randomUUID().slice(0, 8)}@example.mr`
    const post = (path: string, body: unknown) =>
      fetch(`${gateway.url}/functions/v1${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
    expect((await post('/auth/signup', { email, password: 'secret-123', full_name: 'Via Service' })).status).toBe(201)
    const signin = (await (await post('/auth/signin', { email, password: 'secret-123' })).json()) as Record<string, any>
    const { data } = await client().auth.getUser(signin.data.access_token)
    expect(data.user?.email).toBe(email)
  })
})
