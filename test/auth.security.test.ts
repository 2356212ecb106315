// Every admin route refuses what it must and accepts what it must. Later issues add their admin routes
// to SAMPLES.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { exportJWK, generateKeyPair, SignJWT } from 'jose'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { createTestApp, json, type TestApp } from './helpers/app.ts'
import { adminToken, bearer, signToken, studentToken, unsignedToken } from './helpers/tokens.ts'
import { apiKey } from '../functions-shared/lib/keys.ts'
import { LOCAL_JWT_SECRET } from '../functions-shared/config.ts'
import { createTokenVerifier, roleFromClaims } from '../functions-shared/http/auth.ts'
import { FakeClock } from '../functions-shared/lib/clock.ts'
import { openApiDocument } from '../functions-shared/app.ts'
import { adminSecurity } from '../functions-shared/http/router.ts'
import { createUser } from './helpers/users.ts'
import { makePdf } from '../scripts/lib/pdf.ts'
import { FR_LESSON } from './helpers/portal.ts'
import { reserve } from '../functions-shared/wallet/reservations.ts'
import { SourceSchema } from '../functions-shared/sources-file.ts'

const ADMIN_KEY = 'adm-key-0123456789abcdef'

interface Sample {
  path: string
  body?: unknown
  form?: FormData
}
/**
 * A valid request for every admin route, so that each credential that must pass gets a 2xx. Later issues
 * add their admin routes here; the first test fails for an admin route of the OpenAPI document that
 * has no sample.
 */
const SAMPLES: Record<string, () => Promise<Sample>> = {
  'GET /metrics': async () => ({ path: '/metrics' }),
  'GET /metrics/json': async () => ({ path: '/metrics/json' }),
  'GET /admin/test-role': async () => ({ path: '/admin/test-role' }),
  'GET /admin/users': async () => ({ path: '/admin/users?limit=5' }),
  'POST /admin/users': async () => ({
    path: '/admin/users',
    body: { email: `new-${crypto.randomUUID().slice(0, 8)}@example.mr`, password: 'secret-123', full_name: 'New' },
  }),
  'PATCH /admin/users/{user_id}/role': async () => ({ path: `/admin/users/${(await createUser(db.sql)).id}/role`, body: { role: 'teacher' } }),
  'PATCH /admin/users/{user_id}/hint-level': async () => ({ path: `/admin/users/${(await createUser(db.sql)).id}/hint-level?hint_level=4` }),
  'DELETE /admin/users/{user_id}': async () => ({ path: `/admin/users/${(await createUser(db.sql)).id}` }),
  'POST /admin/users/{user_id}/reset-password': async () => ({
    path: `/admin/users/${(await createUser(db.sql)).id}/reset-password`,
    body: { new_password: 'secret-456' },
  }),
  'GET /admin/references': async () => ({ path: '/admin/references?limit=5' }),
  'GET /admin/scrape-runs': async () => ({ path: '/admin/scrape-runs?limit=5' }),
  'PATCH /admin/references/{reference_id}': async () => ({
    path: `/admin/references/${await newReference()}`,
    body: { subject: 'mathematiques', title: 'Fixed' },
  }),
  // a source whose listing is refused at once (private address): the run completes as failed, no network
  'POST /scraping/{source}/sync': async () => ({ path: '/scraping/sweep/sync' }),
  'POST /admin/ingest/{reference_id}': async () => ({ path: `/admin/ingest/${await newReference()}` }),
  'POST /admin/vector-embedding': async () => ({ path: '/admin/vector-embedding', body: { reference_id: await newReference() } }),
  'POST /admin/jobs/dispatch': async () => ({ path: '/admin/jobs/dispatch' }),
  'GET /admin/jobs': async () => ({ path: '/admin/jobs?limit=5' }),
  'GET /admin/jobs/{job_id}': async () => ({ path: `/admin/jobs/${await failedJob()}` }),
  'POST /admin/jobs/{job_id}/requeue': async () => ({ path: `/admin/jobs/${await failedJob()}/requeue` }),
  'GET /admin/stats': async () => ({ path: '/admin/stats' }),
  'POST /admin/upload-curriculum': async () => {
    const form = new FormData()
    for (const [k, v] of Object.entries({ grade: '4AS', subject: 'maths', language: 'fr' })) form.set(k, v)
    form.set('file', new File([Buffer.from(await samplePdf())], 'lesson.pdf', { type: 'application/pdf' }))
    return { path: '/admin/upload-curriculum', form }
  },
  'PATCH /admin/documents/{document_id}': async () => ({ path: `/admin/documents/${await newDocument()}`, body: { title: 'Renamed' } }),
  'DELETE /admin/documents/{document_id}': async () => ({ path: `/admin/documents/${await newDocument()}` }),
  'POST /wallet/topup': async () => ({
    path: '/wallet/topup',
    body: { user_id: (await createUser(db.sql)).id, tokens: 10, amount: 20, currency: 'MRU', payment_method: 'cash' },
  }),
  'POST /wallet/transactions/expense': async () => ({
    path: '/wallet/transactions/expense',
    body: { type: 'server_cost', amount: 3, currency: 'EUR', description: 'vps' },
  }),
  'GET /wallet/transactions': async () => ({ path: '/wallet/transactions?limit=5' }),
  'POST /wallet/internal/reserve': async () => ({ path: '/wallet/internal/reserve', body: { user_id: (await createUser(db.sql)).id, estimate: 5 } }),
  'POST /wallet/internal/finalize': async () => {
    const r = await reserve({ ctx: { deps: t.deps, requestId: 'sample' }, input: { user_id: (await createUser(db.sql)).id, estimate: 5 } })
    return { path: '/wallet/internal/finalize', body: { reservation_id: r.id, actual: 3 } }
  },
}

let pdf: Uint8Array | undefined
const samplePdf = async () => (pdf ??= await makePdf([FR_LESSON]))
async function newDocument(): Promise<string> {
  const [row] = await db.sql`insert into public.documents (grade, subject, language) values ('4AS', 'maths', 'fr') returning id`
  return row!.id as string
}

/** A reference that no job has touched yet (its source is not configured: a dispatch fails it quickly). */
async function newReference(): Promise<string> {
  const url = `http://10.255.255.1/${crypto.randomUUID()}.pdf`
  const [row] = await db
    .sql`insert into public.curriculum_references (source, pdf_source, source_url, grade, subject, language) values ('sweep', ${url}, ${url}, '4AS', 'math', 'fr') returning id`
  return row!.id as string
}
async function failedJob(): Promise<string> {
  const [job] = await db.sql`select id from public.request_ingestion(${await newReference()})`
  await db.sql`select public.transition_job(${job!.id}, 'failed', null, 'failed for the sweep')`
  return job!.id as string
}

const DEPRECATED_ROUTES = new Set(['POST /admin/vector-embedding'])
const ADMIN_ROUTES = Object.keys(SAMPLES).map((k) => k.split(' ') as [string, string])

let db: TestDatabase
let t: TestApp

beforeAll(async () => {
  db = await createTestDatabase()
  t = createTestApp({
    sql: db.sql,
    env: { ADMIN_API_KEY: ADMIN_KEY, RATE_LIMIT_ADMIN_PER_MINUTE: '10000', RATE_LIMIT_WALLET_PER_MINUTE: '10000', RATE_LIMIT_UPLOAD_PER_MINUTE: '10000' },
    deps: { sources: [SourceSchema.parse({ name: 'sweep', index_urls: ['http://10.255.255.1/index.html'] })] },
  })
})
afterAll(async () => {
  await t?.deps.background.idle()
  await db?.close()
})

describe('the admin route list', () => {
  it('covers every route the OpenAPI document marks as admin', async () => {
    const doc = openApiDocument(t.deps) as { paths: Record<string, Record<string, { security?: unknown }>> }
    const admin = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.entries(ops).filter(([, op]) => JSON.stringify(op.security) === JSON.stringify(adminSecurity)).map(([m]) => `${m.toUpperCase()} ${path}`)
    )
    expect(admin.sort()).toEqual(Object.keys(SAMPLES).sort())
  })
})

async function call(method: string, route: string, headers: Record<string, string> = {}) {
  const sample = await SAMPLES[`${method} ${route}`]!()
  const init: RequestInit = {
    method,
    headers: { 'x-request-id': `sec-${crypto.randomUUID()}`, ...(sample.form ? {} : { 'content-type': 'application/json' }), ...headers },
  }
  if (sample.body !== undefined) init.body = JSON.stringify(sample.body)
  if (sample.form) init.body = sample.form
  const res = await t.request(sample.path, init)
  return { res, body: res.headers.get('content-type')?.includes('json') ? await json(res) : await res.text() }
}

describe.each(ADMIN_ROUTES)('%s %s', (method, path) => {
  it('gives 401 without credentials', async () => {
    const { res, body } = await call(method, path)
    expect(res.status).toBe(401)
    expect(body).toMatchObject({ error: 'unauthorized', request_id: expect.stringMatching(/^sec-/) })
    expect(res.headers.get('www-authenticate')).toBe('Bearer')
  })

  it('gives 401 for a token signed with another secret', async () => {
    const { res } = await call(method, path, bearer(await adminToken({ secret: 'another-secret-another-secret-another-secret' })))
    expect(res.status).toBe(401)
  })

  it('gives 401 for an expired token', async () => {
    const { res, body } = await call(method, path, bearer(await adminToken({ expiresIn: -120 })))
    expect(res.status).toBe(401)
    expect((body as { message: string }).message).toBe('Access token has expired')
  })

  it('gives 401 for a token without exp', async () => {
    const { res } = await call(method, path, bearer(await adminToken({ noExp: true })))
    expect(res.status).toBe(401)
  })

  it('gives 401 for alg none', async () => {
    const now = Math.floor(Date.now() / 1000)
    const token = unsignedToken({ sub: crypto.randomUUID(), aud: 'authenticated', role: 'authenticated', app_metadata: { role: 'admin' }, exp: now + 600 })
    const { res } = await call(method, path, bearer(token))
    expect(res.status).toBe(401)
  })

  it('gives 401 for an algorithm other than HS256 (HS512 with the right secret)', async () => {
    const { res } = await call(method, path, bearer(await adminToken({ alg: 'HS512' })))
    expect(res.status).toBe(401)
  })

  it('gives 401 for the wrong audience and for the anon key', async () => {
    expect((await call(method, path, bearer(await adminToken({ aud: 'other' })))).res.status).toBe(401)
    expect((await call(method, path, bearer(await apiKey(LOCAL_JWT_SECRET, 'anon')))).res.status).toBe(401)
  })

  it('gives 401 for a malformed Authorization header', async () => {
    expect((await call(method, path, { Authorization: 'Basic dXNlcjpwYXNz' })).res.status).toBe(401)
    expect((await call(method, path, { Authorization: 'Bearer not a token' })).res.status).toBe(401)
  })

  it('gives 403 for a student token', async () => {
    const { res, body } = await call(method, path, bearer(await studentToken()))
    expect(res.status).toBe(403)
    expect(body).toMatchObject({ error: 'forbidden', request_id: expect.any(String) })
  })

  it('gives 403 when only user_metadata says admin (users can write their own user_metadata)', async () => {
    const { res } = await call(method, path, bearer(await signToken({ appRole: null, userRole: 'admin' })))
    expect(res.status).toBe(403)
  })

  it('accepts an admin token', async () => {
    const { res, body } = await call(method, path, bearer((await createUser(db.sql, { role: 'admin' })).token))
    expect(res.status, JSON.stringify(body)).toBeGreaterThanOrEqual(200)
    expect(res.status).toBeLessThan(300)
    // only the deprecated route itself says so to a token holder
    expect(res.headers.get('deprecation')).toBe(DEPRECATED_ROUTES.has(`${method} ${path}`) ? 'true' : null)
  })

  it('accepts the service-role key, as Supabase does', async () => {
    const { res } = await call(method, path, bearer(await apiKey(LOCAL_JWT_SECRET, 'service_role')))
    expect(res.status).toBeGreaterThanOrEqual(200)
    expect(res.status).toBeLessThan(300)
  })

  it('accepts X-Admin-Key with a Deprecation header and a warning that omits the key', async () => {
    const before = t.logs.raw.length
    const { res } = await call(method, path, { 'X-Admin-Key': ADMIN_KEY })
    expect(res.status).toBeGreaterThanOrEqual(200)
    expect(res.status).toBeLessThan(300)
    expect(res.headers.get('deprecation')).toBe('true')
    const lines = t.logs.lines.slice(before)
    expect(lines.some((l) => l.level === 'warn' && String(l.message).includes('X-Admin-Key is deprecated'))).toBe(true)
    expect(t.logs.raw.slice(before).join('')).not.toContain(ADMIN_KEY)
  })

  it('gives 401 for a wrong X-Admin-Key, even with a valid admin token beside it', async () => {
    expect((await call(method, path, { 'X-Admin-Key': 'wrong' })).res.status).toBe(401)
    expect((await call(method, path, { 'X-Admin-Key': 'wrong', ...bearer((await createUser(db.sql, { role: 'admin' })).token) })).res.status).toBe(401)
  })
})

describe('X-Admin-Key when ADMIN_API_KEY is empty', () => {
  it('is ignored: the header alone gives 401, a token still works', async () => {
    const app = createTestApp({ sql: db.sql })
    expect((await app.request('/metrics', { headers: { 'X-Admin-Key': '' } })).status).toBe(401)
    expect((await app.request('/metrics', { headers: { 'X-Admin-Key': 'anything' } })).status).toBe(401)
    expect((await app.request('/metrics', { headers: { 'X-Admin-Key': 'anything', ...bearer((await createUser(db.sql, { role: 'admin' })).token) } })).status)
      .toBe(200)
  })
})

describe('roles from claims', () => {
  it('reads app_metadata.role first', () => {
    expect(roleFromClaims({ app_metadata: { role: 'teacher' }, user_metadata: { role: 'admin' } })).toBe('teacher')
  })
  it('falls back to user_metadata.role only while app_metadata.role is absent, never to admin', () => {
    expect(roleFromClaims({ app_metadata: {}, user_metadata: { role: 'teacher' } })).toBe('teacher')
    expect(roleFromClaims({ app_metadata: {}, user_metadata: { role: 'admin' } })).toBe('student')
    expect(roleFromClaims({})).toBe('student')
  })
  it('treats an unknown app_metadata role as student', () => {
    expect(roleFromClaims({ app_metadata: { role: 'superuser' }, user_metadata: { role: 'teacher' } })).toBe('student')
  })
})

describe('asymmetric tokens from a JWKS URL', () => {
  it('verifies ES256 tokens against the published keys and rejects unknown keys', async () => {
    const { publicKey, privateKey } = await generateKeyPair('ES256')
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' }
    const { serve } = await import('@hono/node-server')
    const server = serve({ fetch: () => Response.json({ keys: [jwk] }), port: 0, hostname: '127.0.0.1' })
    await new Promise((r) => server.once('listening', r))
    const port = (server.address() as { port: number }).port
    try {
      const verifier = createTokenVerifier({
        secret: LOCAL_JWT_SECRET,
        jwksUrl: `http://127.0.0.1:${port}/auth/v1/.well-known/jwks.json`,
        clockToleranceSeconds: 0,
      })
      const sub = crypto.randomUUID()
      const claims = { sub, aud: 'authenticated', role: 'authenticated', app_metadata: { role: 'admin' } }
      const good = await new SignJWT(claims).setProtectedHeader({ alg: 'ES256', kid: 'k1' }).setExpirationTime('5m').sign(privateKey)
      expect(await verifier.verify(good)).toMatchObject({ kind: 'user', userId: sub, role: 'admin' })
      const other = await generateKeyPair('ES256')
      const bad = await new SignJWT(claims).setProtectedHeader({ alg: 'ES256', kid: 'k1' }).setExpirationTime('5m').sign(other.privateKey)
      await expect(verifier.verify(bad)).rejects.toMatchObject({ status: 401 })
      // HS256 with the shared secret still works beside the JWKS
      expect(await verifier.verify(await adminToken({ sub }))).toMatchObject({ kind: 'user', role: 'admin' })
    } finally {
      server.close()
    }
  })
})

describe('tokens whose signature was checked before', () => {
  const claims = (sub: string) => ({ sub, aud: 'authenticated', role: 'authenticated' })
  const secret = new TextEncoder().encode(LOCAL_JWT_SECRET)

  it('are refused once they expire, by the same clock and tolerance as a first check', async () => {
    const clock = new FakeClock()
    const verifier = createTokenVerifier({ secret: LOCAL_JWT_SECRET, clockToleranceSeconds: 5, clock })
    const sub = crypto.randomUUID()
    const exp = Math.floor(clock.now() / 1000) + 60
    const token = await new SignJWT(claims(sub)).setProtectedHeader({ alg: 'HS256' }).setExpirationTime(exp).sign(secret)
    expect(await verifier.verify(token)).toMatchObject({ kind: 'user', userId: sub })
    clock.advance(64_000) // exp + tolerance not reached
    expect(await verifier.verify(token)).toMatchObject({ kind: 'user', userId: sub })
    clock.advance(1_000) // exp <= now - tolerance
    await expect(verifier.verify(token)).rejects.toMatchObject({ status: 401, message: 'Access token has expired' })
    await expect(verifier.verify(token)).rejects.toMatchObject({ status: 401, message: 'Access token has expired' })
  })

  it('do not vouch for the same claims under another signature, and are shared read-only', async () => {
    const verifier = createTokenVerifier({ secret: LOCAL_JWT_SECRET, clockToleranceSeconds: 0 })
    const sub = crypto.randomUUID()
    const token = await new SignJWT(claims(sub)).setProtectedHeader({ alg: 'HS256' }).setExpirationTime('5m').sign(secret)
    const first = await verifier.verify(token)
    const again = await verifier.verify(token)
    expect(again).toMatchObject({ kind: 'user', userId: sub })
    const [header, payload, signature] = token.split('.')
    const forged = `${header}.${payload}.${signature!.slice(0, -4)}${signature!.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`
    await expect(verifier.verify(forged)).rejects.toMatchObject({ status: 401, message: 'Access token is invalid' })
    const other = await new SignJWT({ ...claims(sub), app_metadata: { role: 'admin' } }).setProtectedHeader({ alg: 'HS256' }).setExpirationTime('5m')
      .sign(new TextEncoder().encode('another secret of at least thirty-two characters'))
    await expect(verifier.verify(other)).rejects.toMatchObject({ status: 401 })
    if (first.kind !== 'user') throw new Error('a user token')
    expect(() => {
      ;(first.claims as Record<string, unknown>).role = 'service_role'
    }).toThrow(TypeError)
  })
})
