// Text PostgreSQL cannot store — NUL (U+0000) and unpaired UTF-16 surrogates — is bad input on every
// route: a 400 naming the field, nothing written, never a 500 or a 503. And a chat turn is settled
// whatever text it carries, or its answer is not delivered.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { createTestApp, json, type TestApp } from './helpers/app.ts'
import { bearer } from './helpers/tokens.ts'
import { createUser } from './helpers/users.ts'
import { makePdf } from '../scripts/lib/pdf.ts'
import { FR_LESSON } from './helpers/portal.ts'
import { findUnstorable, storable, unstorableReason } from '../functions-shared/lib/text.ts'

let db: TestDatabase
let t: TestApp
let admin: Record<string, string>

const NUL = 'Ali\u0000'
const HIGH = 'Ali\ud800'
const LOW = '\udc00Ali'

beforeAll(async () => {
  db = await createTestDatabase()
  t = createTestApp({ sql: db.sql, env: { RATE_LIMIT_AUTH_PER_MINUTE: '1000' } })
  admin = bearer((await createUser(db.sql, { role: 'admin' })).token)
})
afterAll(async () => db?.close())

const send = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  t.request(path, { method, headers: { 'content-type': 'application/json', ...headers }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })

/** The response is our 400 and names `field`. */
async function expectRefused(res: Response, field: string) {
  const body = await json(res)
  expect(res.status, JSON.stringify(body)).toBe(400)
  expect(body).toMatchObject({ error: 'validation_failed', request_id: res.headers.get('x-request-id') })
  expect(body.fields.map((f: { field: string }) => f.field)).toContain(field)
  expect(res.headers.get('retry-after')).toBeNull()
}

describe('the text rule', () => {
  it('finds NUL and unpaired surrogates, in values and keys, with their path', () => {
    expect(unstorableReason('سلام عليكم 👋🏽 ok')).toBeNull()
    expect(unstorableReason('\u202eRTL\u2066 is fine')).toBeNull()
    expect(unstorableReason(NUL)).toMatch(/NUL/)
    expect(unstorableReason(HIGH)).toMatch(/surrogate/)
    expect(unstorableReason(LOW)).toMatch(/surrogate/)
    expect(findUnstorable({ a: [{ b: 'ok' }, { c: HIGH }] })).toEqual({ field: 'a.1.c', message: expect.stringMatching(/surrogate/) })
    expect(findUnstorable({ data: { ['k\u0000']: 1 } })?.field).toBe('data.k\ufffd')
    // a body nested far deeper than any stack
    let deep: unknown = NUL
    for (let i = 0; i < 200_000; i++) deep = [deep]
    expect(findUnstorable(deep)?.message).toMatch(/NUL/)
  })

  it('makes what the service writes storable without touching good text', () => {
    const good = { q: 'نشأت حركة المرابطين: «الإسلام».', emoji: '👋🏽' }
    expect(storable(good)).toEqual(good)
    expect(storable({ q: NUL, [HIGH]: [LOW] })).toEqual({ q: 'Ali\ufffd', ['Ali\ufffd']: ['\ufffdAli'] })
  })
})

describe('every kind of field refuses text the database cannot store', () => {
  it('PATCH /me full_name', async () => {
    const user = await createUser(db.sql, { fullName: 'Before' })
    for (const bad of [NUL, HIGH, LOW]) await expectRefused(await send('PATCH', '/me', { full_name: bad }, bearer(user.token)), 'full_name')
    const [row] = await db.sql`select full_name from public.profiles where id = ${user.id}`
    expect(row!.full_name).toBe('Before')
  })

  it('POST /wallet/topup reference and POST /wallet/transactions/expense description', async () => {
    const user = await createUser(db.sql)
    await expectRefused(
      await send('POST', '/wallet/topup', { user_id: user.id, tokens: 10, amount: 20, currency: 'MRU', payment_method: 'cash', reference: NUL }, admin),
      'reference',
    )
    await expectRefused(
      await send('POST', '/wallet/transactions/expense', { type: 'server_cost', amount: 3, currency: 'EUR', description: HIGH }, admin),
      'description',
    )
    const [n] = await db.sql`select count(*)::int as n from public.financial_transactions`
    expect(n!.n).toBe(0)
    const [w] = await db.sql`select count(*)::int as n from public.wallets where user_id = ${user.id}`
    expect(w!.n).toBe(0)
  })

  it('PATCH /admin/documents/{id} title', async () => {
    const [doc] = await db.sql`insert into public.documents (title, grade, subject, language) values ('Titre', '4AS', 'maths', 'fr') returning id`
    await expectRefused(await send('PATCH', `/admin/documents/${doc!.id}`, { title: NUL }, admin), 'title')
  })

  it('POST /admin/upload-curriculum grade (a form field)', async () => {
    const form = new FormData()
    for (const [k, v] of Object.entries({ grade: `4AS${NUL}`, subject: 'maths', language: 'fr' })) form.set(k, v)
    form.set('file', new File([Buffer.from(await makePdf([FR_LESSON]))], 'lesson.pdf', { type: 'application/pdf' }))
    await expectRefused(await t.request('/admin/upload-curriculum', { method: 'POST', headers: admin, body: form }), 'grade')
    const [n] = await db.sql`select count(*)::int as n from public.documents where origin = 'upload'`
    expect(n!.n).toBe(0)
  })

  it('GET /curriculum/textbooks?grade=%00 and a path segment', async () => {
    await expectRefused(await t.request('/curriculum/textbooks?grade=%00'), 'grade')
    await expectRefused(await t.request('/curriculum/textbooks?subject=ma%00ths'), 'subject')
    const res = await t.request('/scraping/de%00mo/runs')
    expect(res.status).toBe(400)
  })

  it('POST /auth/signup full_name and POST /admin/users full_name: 400, not 503', async () => {
    const emails: string[] = []
    for (const bad of [NUL, HIGH]) {
      emails.push(`s-${crypto.randomUUID().slice(0, 8)}@example.mr`, `a-${crypto.randomUUID().slice(0, 8)}@example.mr`)
      await expectRefused(await send('POST', '/auth/signup', { email: emails.at(-2), password: 'secret-123', full_name: bad }), 'full_name')
      await expectRefused(await send('POST', '/admin/users', { email: emails.at(-1), password: 'secret-123', full_name: bad }, admin), 'full_name')
    }
    const [n] = await db.sql`select count(*)::int as n from auth.users where email = any(${emails})`
    expect(n!.n).toBe(0)
  })

  it('POST /auth/signin password: 400, not 503', async () => {
    for (const bad of [NUL, LOW]) await expectRefused(await send('POST', '/auth/signin', { email: 'someone@example.mr', password: bad }), 'password')
  })

  it("the local auth server (/auth/v1) answers GoTrue's 400 validation_failed", async () => {
    const post = (path: string, body: unknown) =>
      t.auth.request(`/auth/v1${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
    for (
      const [path, body] of [
        ['/signup', { email: 'x@example.mr', password: 'secret-123', data: { full_name: NUL } }],
        ['/signup', { email: 'x@example.mr', password: 'secret-123', data: { [HIGH]: 'v' } }],
        ['/token?grant_type=password', { email: 'x@example.mr', password: `secret${NUL}` }],
        ['/recover', { email: `x${LOW}@example.mr` }],
      ] as const
    ) {
      const res = await post(path, body)
      const b = await json(res)
      expect(res.status, `${path} ${JSON.stringify(b)}`).toBe(400)
      expect(b).toMatchObject({ error_code: 'validation_failed' })
    }
    const res = await t.auth.request('/auth/v1/verify?type=recovery&token=%00abcdefghijklmn')
    expect(res.status).toBe(400)
  })
})

describe('POST /chat with text the database cannot store', () => {
  it('is a 400 before anything is reserved (the billing hole: an answer with usage null)', async () => {
    const user = await createUser(db.sql)
    for (const message of ["Qu'est-ce qu'une équation ?\u0000", "Qu'est-ce qu'une équation ?\ud800", '\udffféquation']) {
      await expectRefused(await send('POST', '/chat', { message, subject: 'mathematiques', stream: false }, bearer(user.token)), 'message')
    }
    await expectRefused(
      await send('POST', '/chat', { message: 'Une équation ?', history: [{ role: 'user', content: NUL }], stream: false }, bearer(user.token)),
      'history.0.content',
    )
    // nothing to read: zero-width and bidi characters, a no-break space, vowel marks without a letter
    for (const message of ['\u200b\u200e', '\u2066\u2069\u00a0', '\u064e\u0650\u0651']) {
      await expectRefused(await send('POST', '/chat', { message, stream: false }, bearer(user.token)), 'message')
    }
    const [r] = await db.sql`select count(*)::int as n from public.reservations where user_id = ${user.id}`
    expect(r!.n).toBe(0)
  })
})
