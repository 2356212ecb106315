// /rest/v1 on the local gateway, driven by the real supabase-js client as an app drives a hosted
// project: grants and RLS decide (role and request.jwt.claims set as PostgREST sets them), errors come
// in PostgREST's shape, and what the subset does not serve is a 400 that says so.
import { createClient, type SupabaseClient } from '@supabase/supabase-js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { testConfig } from './helpers/app.ts'
import { createUser, type TestUser } from './helpers/users.ts'
import { type Gateway, startGateway } from '../scripts/lib/gateway.ts'
import { apiKey } from '../functions-shared/lib/keys.ts'
import { LOCAL_JWT_SECRET } from '../functions-shared/config.ts'
import { createLogRoot } from '../functions-shared/lib/logger.ts'
import { page } from '../local-platform/rest/write.ts'
import { request as httpRequest } from 'node:http'
import { FakeClock } from '../functions-shared/lib/clock.ts'

let db: TestDatabase
let gateway: Gateway
let anonKey: string
let serviceKey: string
let me: TestUser
let other: TestUser
let admin: TestUser

const options = { auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false } }
/** A client signed in as `user` (its access token on every request), or anon. */
const as = (user?: TestUser): SupabaseClient => createClient(gateway.url, anonKey, user ? { ...options, accessToken: async () => user.token } : options)

beforeAll(async () => {
  db = await createTestDatabase()
  gateway = await startGateway({ config: testConfig({ LOG_LEVEL: 'silent' }), sql: db.sql, port: 0, deps: { logs: createLogRoot({ level: 'silent' }) } })
  anonKey = await apiKey(LOCAL_JWT_SECRET, 'anon')
  serviceKey = await apiKey(LOCAL_JWT_SECRET, 'service_role')
  me = await createUser(db.sql, { fullName: 'Aïcha Mint Ahmed' })
  other = await createUser(db.sql, { fullName: 'Sidi Ould Cheikh' })
  admin = await createUser(db.sql, { role: 'admin', fullName: 'Admin' })
  for (const u of [me, other]) {
    await db.sql`select public.get_or_create_wallet(${u.id})`
    await db.sql`select id from public.reserve_tokens(${u.id}, 5)`
  }
})
afterAll(async () => {
  await gateway?.close(1000)
  await db?.close()
})

describe('a student with supabase-js', () => {
  it("reads their own profile and nothing of anyone else's", async () => {
    const all = await as(me).from('profiles').select('*')
    expect(all.error).toBeNull()
    expect(all.data!.map((p) => p.id)).toEqual([me.id])
    const theirs = await as(me).from('profiles').select('id, full_name').eq('id', other.id)
    expect(theirs).toMatchObject({ error: null, data: [] })
    const one = await as(me).from('profiles').select('id, full_name, role').eq('id', me.id).single()
    expect(one.data).toEqual({ id: me.id, full_name: 'Aïcha Mint Ahmed', role: 'student' })
    const none = await as(me).from('profiles').select('id').eq('id', other.id).maybeSingle()
    expect(none).toMatchObject({ error: null, data: null })
    const notOne = await as(me).from('profiles').select('id').eq('id', other.id).single()
    expect(notOne.status).toBe(406)
    expect(notOne.error).toMatchObject({ code: 'PGRST116', details: 'The result contains 0 rows' })
  })

  it('changes their full name, and only that', async () => {
    const renamed = await as(me).from('profiles').update({ full_name: 'Aïcha Mint Ahmed Salem' }).eq('id', me.id).select('full_name')
    expect(renamed).toMatchObject({ error: null, data: [{ full_name: 'Aïcha Mint Ahmed Salem' }] })
    const role = await as(me).from('profiles').update({ role: 'admin' }).eq('id', me.id)
    expect(role.status).toBe(403)
    expect(role.error).toMatchObject({ code: '42501', message: expect.stringContaining('permission denied') })
    // the database keeps the API's bounds on a name: at most 200 characters, trimmed
    for (const name of ['x'.repeat(201), ' Aïcha']) {
      expect(await as(me).from('profiles').update({ full_name: name }).eq('id', me.id)).toMatchObject({ status: 400, error: { code: '23514' } })
    }
    // text that is not Unicode (an unpaired surrogate) or that PostgreSQL cannot store (NUL) is refused, as /me refuses it: never stored as U+FFFD
    expect(await as(me).from('profiles').update({ full_name: 'Aïcha \ud800' }).eq('id', me.id)).toMatchObject({
      status: 400,
      error: { code: '22P02', message: 'invalid input syntax for type json', hint: expect.stringContaining('full_name') },
    })
    expect(await as(me).from('profiles').update({ full_name: 'Aïcha\u0000' }).eq('id', me.id)).toMatchObject({
      status: 400,
      error: { code: '22P05', message: 'unsupported Unicode escape sequence' },
    })
    expect(await as(me).rpc('nothing_here', { text: '\udc00' })).toMatchObject({ status: 400, error: { code: '22P02' } })
    const elsewhere = await as(me).from('profiles').update({ full_name: 'X' }).eq('id', other.id).select()
    expect(elsewhere).toMatchObject({ error: null, data: [] })
    const rows = await db.sql`select id, full_name, role from public.profiles where id in (${me.id}, ${other.id}) order by full_name`
    expect(rows).toEqual([
      { id: me.id, full_name: 'Aïcha Mint Ahmed Salem', role: 'student' },
      { id: other.id, full_name: 'Sidi Ould Cheikh', role: 'student' },
    ])
    const inserted = await as(me).from('profiles').insert({ id: crypto.randomUUID(), full_name: 'Faux' })
    expect(inserted.status).toBe(403)
    expect(inserted.error?.code).toBe('42501')
  })

  it('reads their wallet, reservations and ledger, counted, and nothing of another wallet', async () => {
    const wallet = await as(me).from('wallets').select('user_id, token_balance').single()
    expect(wallet.data).toEqual({ user_id: me.id, token_balance: 45 })
    const ledger = await as(me).from('token_ledger').select('reason, delta', { count: 'exact' }).order('id')
    expect(ledger.error).toBeNull()
    expect(ledger.count).toBe(ledger.data!.length)
    expect(ledger.data!.map((l) => l.reason)).toEqual(['welcome_bonus', 'reservation_hold'])
    expect(await as(me).from('token_ledger').select('id').eq('user_id', other.id)).toMatchObject({ error: null, data: [] })
    expect(await as(me).from('reservations').select('user_id').in('user_id', [me.id, other.id])).toMatchObject({ data: [{ user_id: me.id }] })
    const financial = await as(me).from('financial_transactions').select('*')
    expect(financial.status).toBe(403)
  })
})

describe('an admin and the service role', () => {
  it('an admin reads every profile, counted, paged, ordered and filtered', async () => {
    const [{ n }] = (await db.sql`select count(*)::int as n from public.profiles`) as unknown as [{ n: number }]
    const all = await as(admin).from('profiles').select('id', { count: 'exact' })
    expect(all.data).toHaveLength(n)
    expect(all.count).toBe(n)
    const firstTwo = await as(admin).from('profiles').select('full_name', { count: 'exact' }).order('full_name', { ascending: true }).range(0, 1)
    expect(firstTwo.data!.map((p) => p.full_name)).toEqual(['Admin', 'Aïcha Mint Ahmed Salem'])
    expect(firstTwo.count).toBe(n)
    expect(await as(admin).from('profiles').select('full_name').ilike('full_name', '%ould%')).toMatchObject({ data: [{ full_name: 'Sidi Ould Cheikh' }] })
    expect(await as(admin).from('profiles').select('full_name').like('full_name', 'Sidi%').neq('id', me.id)).toMatchObject({
      data: [{ full_name: 'Sidi Ould Cheikh' }],
    })
    expect((await as(admin).from('profiles').select('id').is('full_name', null)).data).toEqual([])
  })

  it('an admin writes what the policies let them write: a reference inserted, read back, deleted; rows inserted as an array', async () => {
    const row = {
      source: 'manual',
      pdf_source: 'https://portail.example.mr/a.pdf',
      source_url: 'https://portail.example.mr/a.pdf',
      title: 'Manuel',
      grade: '4AS',
      subject: 'mathematiques',
    }
    const inserted = await as(admin).from('curriculum_references').insert(row).select('id, title, status').single()
    expect(inserted.status).toBe(201)
    expect(inserted.data).toMatchObject({ title: 'Manuel', status: 'discovered' })
    const student = await as(me).from('curriculum_references').select('id')
    expect(student).toMatchObject({ error: null, data: [] })
    const gone = await as(admin).from('curriculum_references').delete().eq('id', inserted.data!.id)
    expect(gone.status).toBe(204)
    expect(await db.sql`select id from public.curriculum_references where id = ${inserted.data!.id}`).toEqual([])
    // an array, as supabase-js sends it (columns="a","b", quoted); a key an object leaves out takes the default
    // a key a row of a bulk insert leaves out is null, as in PostgREST (found_count is not null: refused,
    // nothing written), or the column's default when the client asks (defaultToNull: false, Prefer: missing=default)
    const nulls = await as(admin).from('scrape_runs').insert([{ source: 'bulk-a', found_count: 3 }, { source: 'bulk-b' }]).select('source, found_count, status')
    expect(nulls).toMatchObject({ status: 400, error: { code: '23502' } })
    expect(await db.sql`select 1 from public.scrape_runs where source like 'bulk-%'`).toHaveLength(0)
    const many = await as(admin).from('scrape_runs').insert([{ source: 'bulk-a', found_count: 3 }, { source: 'bulk-b' }], { defaultToNull: false }).select(
      'source, found_count, status',
    )
    expect(many).toMatchObject({
      status: 201,
      error: null,
      data: [{ source: 'bulk-a', found_count: 3, status: 'running' }, { source: 'bulk-b', found_count: 0, status: 'running' }],
    })
    await db.sql`delete from public.scrape_runs where source in ('bulk-a', 'bulk-b')`
  })

  it("refuses (400) a bulk insert of more values than one statement carries, rather than a 500 with the driver's error", async () => {
    // 70,000 values in 840 kB, under the body limit
    const body = JSON.stringify(Array.from({ length: 70_000 }, () => ({ id: null })))
    const res = await fetch(`${gateway.url}/rest/v1/scrape_runs`, {
      method: 'POST',
      headers: { apikey: anonKey, Authorization: `Bearer ${admin.token}`, 'content-type': 'application/json' },
      body,
    })
    expect(res.status).toBe(400)
    expect(await res.json()).toMatchObject({ code: 'PGRST100', message: expect.stringContaining('more than 65534 values') })
    // within the bound, an array is one statement, as before
    const two = await fetch(`${gateway.url}/rest/v1/scrape_runs?select=source`, {
      method: 'POST',
      headers: { apikey: anonKey, Authorization: `Bearer ${admin.token}`, 'content-type': 'application/json', Prefer: 'return=representation' },
      body: JSON.stringify([{ source: 'bulk-a' }, { source: 'bulk-b' }]),
    })
    expect(two.status).toBe(201)
    expect(await two.json()).toEqual([{ source: 'bulk-a' }, { source: 'bulk-b' }])
    await db.sql`delete from public.scrape_runs where source in ('bulk-a', 'bulk-b')`
  })

  it('calls granted functions with rpc; the same function is refused to a student', async () => {
    const service = createClient(gateway.url, serviceKey, options)
    const turns = await service.rpc('turns_today', { p_user: me.id })
    expect(turns).toMatchObject({ error: null, data: 0 })
    const refused = await as(me).rpc('turns_today', { p_user: me.id })
    expect(refused.status).toBe(403)
    expect(refused.error?.code).toBe('42501')
    const wallet = await service.rpc('get_or_create_wallet', { p_user: other.id })
    expect(wallet.data).toMatchObject([{ user_id: other.id, token_balance: 45 }])
    const unknown = await service.rpc('no_such_function', {})
    expect(unknown.status).toBe(404)
    expect(unknown.error?.code).toBe('PGRST202')
  })
})

describe('anon, errors and the edges of the subset', () => {
  it('anon reads nothing private (401, as PostgREST answers anon)', async () => {
    for (const table of ['profiles', 'wallets', 'token_ledger', 'reservations', 'usage_log', 'financial_transactions']) {
      const res = await as().from(table).select('*')
      expect(res.status, table).toBe(401)
      expect(res.error, table).toMatchObject({ code: '42501' })
    }
    const noKey = await fetch(`${gateway.url}/rest/v1/profiles`)
    expect(noKey.status).toBe(401)
    expect(await noKey.json()).toMatchObject({ code: 'PGRST301', message: 'No API key found in request' })
    const forged = await fetch(`${gateway.url}/rest/v1/profiles`, { headers: { apikey: anonKey, Authorization: 'Bearer not.a.jwt' } })
    expect(forged.status).toBe(401)
  })

  it("answers in PostgREST's shape: unknown table and column, bad values, and what is outside the subset", async () => {
    const missing = await as(me).from('nope').select('*')
    expect(missing.status).toBe(404)
    expect(missing.error).toEqual({ code: 'PGRST205', message: "Could not find the table 'public.nope' in the schema cache", details: null, hint: null })
    const column = await as(me).from('profiles').select('nope')
    expect(column.status).toBe(400)
    expect(column.error?.code).toBe('42703')
    const badUuid = await as(me).from('profiles').select('id').eq('id', "x'; drop table public.profiles; --")
    expect(badUuid.status).toBe(400)
    expect(badUuid.error?.code).toBe('22P02')
    expect(await db.sql`select to_regclass('public.profiles') is not null as ok`).toEqual([{ ok: true }])
    // values are read by PostgreSQL for the column's type: a bad date is 400 (not 500), and PostgreSQL's own forms work
    for (const value of ['not-a-date', '2026-13-45', '1']) {
      const bad = await as(me).from('profiles').select('id').gt('created_at', value)
      expect(bad.status, value).toBe(400)
      expect(bad.error?.code, value).toMatch(/^22/)
    }
    expect(await as(me).from('profiles').select('id').gt('created_at', 'yesterday')).toMatchObject({ status: 200, data: [{ id: me.id }] })
    expect(await as(me).from('profiles').select('id').in('created_at', ['epoch', 'infinity'])).toMatchObject({ status: 200, data: [] })
    // what the local /rest/v1 does not serve is a 400 that says so (a spread embedding, PUT)
    const spread = await as(me).from('profiles').select('id, ...wallets(token_balance)')
    expect(spread.status).toBe(400)
    expect(spread.error).toMatchObject({ code: 'PGRST100', message: expect.stringContaining('outside the /rest/v1 subset') })
    const injected = await fetch(`${gateway.url}/rest/v1/profiles?${encodeURIComponent('id"; select 1; --')}=eq.1`, {
      headers: { apikey: anonKey, Authorization: `Bearer ${me.token}` },
    })
    expect(injected.status).toBe(400)
    const otherSchema = await fetch(`${gateway.url}/rest/v1/profiles`, {
      headers: { apikey: anonKey, Authorization: `Bearer ${me.token}`, 'Accept-Profile': 'private' },
    })
    expect(otherSchema.status).toBe(406)
    expect(await otherSchema.json()).toMatchObject({
      code: 'PGRST106',
      message: 'Invalid schema: private',
      hint: 'Only the following schemas are exposed: public',
    })
  })

  it("reads a column named twice once, as PostgREST's row has one key of a name: a query string of repeats never makes a row its length times as large", async () => {
    const [{ rows }] = await db.sql<[{ rows: number }]>`select count(*)::int as rows from public.reservations where user_id = ${me.id}`
    expect(rows).toBeGreaterThan(0)
    const get = (select: string) =>
      fetch(`${gateway.url}/rest/v1/reservations?select=${select}`, { headers: { apikey: anonKey, Authorization: `Bearer ${me.token}` } })
    // each mention was once a copy of the column in every row the database built and the service parsed
    const one = await (await get('status')).text()
    for (const select of [Array(1600).fill('status').join(','), 'status,status']) {
      const res = await get(select)
      expect(res.status, select.slice(0, 30)).toBe(200)
      expect(await res.text()).toBe(one)
    }
    const star = await (await get('*')).text()
    for (const select of ['*,*', Array(1000).fill('*').join(','), '*,id']) expect(await (await get(select)).text(), select.slice(0, 20)).toBe(star)
    const written = await as(me).from('profiles').update({ full_name: 'Aïcha Mint Ahmed' }).eq('id', me.id).select('id, id')
    expect(written).toMatchObject({ status: 200, data: [{ id: me.id }] })
  })

  it('filters with like and ilike only columns of text, as PostgREST: never a jsonb column read as text, whose matching cost the query string times the row', async () => {
    // a turn that found no lesson is free and keeps the question (up to 2,000 characters) in its usage
    // details, which the student reads; 20 such rows here, 14,400 a day at the chat's rate limit
    const question = 'a'.repeat(1999) + '?'
    for (let i = 0; i < 20; i++) {
      const [res] = await db.sql<[{ id: string }]>`select id from public.reserve_tokens(${me.id}, 5)`
      await db.sql`select * from public.finalize_chat_turn(${res.id}, 0, ${`like-${i}`}, 'released', 2, 0, null, ${
        db.sql.json({ outcome: 'no_sources', retrieval: { query: question } } as never)
      }::jsonb)`
    }
    const get = (filter: string) =>
      fetch(`${gateway.url}/rest/v1/usage_log?select=id&${filter}`, { headers: { apikey: anonKey, Authorization: `Bearer ${me.token}` } })
    // a pattern whose literal part is compared at each of the question's 2,000 positions, in each row:
    // 2.5 s of the one database connection for 300 rows, for one request of 7 kB
    const pattern = `%25${'a'.repeat(7000)}b`
    for (const op of ['like', 'ilike']) {
      const res = await get(`details=${op}.${pattern}`)
      expect(res.status, op).toBe(404)
      expect(await res.json(), op).toMatchObject({ code: '42883', message: expect.stringContaining('operator does not exist: jsonb') })
    }
    // text columns still match, as supabase-js's like() and ilike() ask
    expect(await as(me).from('usage_log').select('request_id').like('request_id', 'like-1_').order('request_id').limit(2)).toMatchObject({
      status: 200,
      data: [{ request_id: 'like-10' }, { request_id: 'like-11' }],
    })
    expect(await as(me).from('usage_log').select('request_id').ilike('request_id', 'LIKE-0')).toMatchObject({ status: 200, data: [{ request_id: 'like-0' }] })
    // an in. list costs its length times the rows: at most 10 whole documents for a jsonb column, 500 values for another
    const documents = Array.from({ length: 11 }, (_, i) => String(i))
    const manyDocuments = await as(me).from('usage_log').select('id').in('details', documents)
    expect(manyDocuments).toMatchObject({
      status: 400,
      error: { code: 'PGRST100', message: 'in. takes at most 10 values on a jsonb column; "details" was given 11' },
    })
    expect(await as(me).from('usage_log').select('id').in('details', documents.slice(0, 10))).toMatchObject({ status: 200, data: [] })
    const ids = Array.from({ length: 501 }, (_, i) => `like-${i}`)
    expect(await as(me).from('usage_log').select('id').in('request_id', ids)).toMatchObject({ status: 400, error: { code: 'PGRST100' } })
    expect((await as(me).from('usage_log').select('request_id').in('request_id', ids.slice(0, 500))).data).toHaveLength(20)
  })

  it('refuses a filter value nested deeper than 512 levels for a json column with 400, never 500, and the database answers on', async () => {
    const get = (filter: string) =>
      fetch(`${gateway.url}/rest/v1/usage_log?select=id&${filter}`, { headers: { apikey: anonKey, Authorization: `Bearer ${me.token}` } })
    const nest = (depth: number, open = '[', close = ']') => `${open.repeat(depth)}${close.repeat(depth)}`
    // 7,000 levels fit in the 16 KB a request line may have: PostgreSQL's parser of json recursed past its stack
    for (
      const filter of [
        `details=gt.${nest(7000)}`,
        `details=eq.${nest(7000)}`,
        `details=in.(${nest(7000)})`,
        `details=lt.${'{"":'.repeat(1000)}1${'}'.repeat(1000)}`,
      ]
    ) {
      const res = await get(filter)
      expect(res.status, filter.slice(0, 20)).toBe(400)
      expect(await res.json()).toMatchObject({ code: 'PGRST100', message: 'A json value nested deeper than 512 levels (details)' })
    }
    // within the bound, and brackets inside a string, are read by PostgreSQL as before
    expect((await get(`details=gt.${nest(500)}`)).status).toBe(200)
    expect((await get(`details=neq.${encodeURIComponent(JSON.stringify({ q: '['.repeat(5000) }))}`)).status).toBe(200)
    expect(await db.sql`select 1 as ok`).toEqual([{ ok: 1 }])
    expect(await as(me).from('wallets').select('user_id')).toMatchObject({ status: 200, data: [{ user_id: me.id }] })
  })

  it('refuses a body nested deeper than 512 levels with 400 PGRST102, never 500', async () => {
    const nest = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`
    const send = (method: string, path: string, body: string) =>
      fetch(`${gateway.url}/rest/v1${path}`, {
        method,
        headers: { apikey: anonKey, Authorization: `Bearer ${me.token}`, 'content-type': 'application/json' },
        body,
      })
    for (const depth of [10_000, 100_000]) {
      // a value for a text column the student may write: it overflowed the stack when serialized
      const update = await send('PATCH', `/profiles?id=eq.${me.id}`, `{"full_name":${nest(depth)}}`)
      expect(update.status, `update ${depth}`).toBe(400)
      expect(await update.json()).toMatchObject({ code: 'PGRST102', message: 'The body nests arrays and objects deeper than 512 levels' })
      expect((await send('POST', '/rpc/turns_today', `{"p_user":${nest(depth)}}`)).status, `rpc ${depth}`).toBe(400)
    }
    const [row] = await db.sql`select full_name from public.profiles where id = ${me.id}`
    expect(row!.full_name).not.toMatch(/^\[/)
  })

  it('says Connection: close with a 413, whose unread body ends the connection', async () => {
    const body = JSON.stringify({ message: 'x'.repeat(1_050_000) })
    const { status, connection } = await new Promise<{ status: number; connection: string | undefined }>((resolve, reject) => {
      const req = httpRequest(`${gateway.url}/rest/v1/profiles`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), connection: 'keep-alive', apikey: anonKey },
      }, (res) => {
        res.resume()
        resolve({ status: res.statusCode!, connection: res.headers.connection })
      })
      req.on('error', reject)
      req.end(body)
    })
    expect(status).toBe(413)
    expect(connection).toBe('close')
  })

  it("caps rows at config.toml's max_rows and reads a Range header", () => {
    expect(page(new URLSearchParams(''), undefined, 1000)).toEqual({ limit: 1000, offset: 0 })
    expect(page(new URLSearchParams('limit=5000'), undefined, 1000)).toEqual({ limit: 1000, offset: 0 })
    expect(page(new URLSearchParams('limit=10&offset=20'), undefined, 1000)).toEqual({ limit: 10, offset: 20 })
    expect(page(new URLSearchParams(''), '5-9', null)).toEqual({ limit: 5, offset: 5 })
    expect(() => page(new URLSearchParams(''), '9-5', null)).toThrow(/not satisfiable/)
  })
})

describe('rate limits', () => {
  it("counts requests per user, the anon key per client IP, answers the 429 of spec §7.1 with PostgREST's keys, and leaves the service role alone", async () => {
    const clock = new FakeClock(Date.now())
    const limited = await startGateway({
      config: testConfig({ LOG_LEVEL: 'silent', RATE_LIMIT_REST_PER_MINUTE: '3' }),
      sql: db.sql,
      port: 0,
      deps: { logs: createLogRoot({ level: 'silent' }), clock },
    })
    try {
      const get = (path: string, token: string | null, requestId = 'rest-rl') =>
        fetch(`${limited.url}/rest/v1${path}`, {
          headers: { apikey: anonKey, 'x-request-id': requestId, ...(token ? { authorization: `Bearer ${token}` } : {}) },
        })
      for (let i = 0; i < 3; i++) {
        const res = await get('/profiles?select=id', me.token)
        expect(res.status, `request ${i + 1}`).toBe(200)
        expect(res.headers.get('x-ratelimit-limit')).toBe('3')
        expect(res.headers.get('x-ratelimit-remaining')).toBe(String(2 - i))
        clock.advance(1000)
      }
      const refused = await get('/profiles?select=id', me.token)
      expect(refused.status).toBe(429)
      expect(refused.headers.get('retry-after')).toBe('57')
      expect(await refused.json()).toEqual({
        code: 'rate_limited',
        details: null,
        hint: null,
        error: 'rate_limited',
        message: expect.stringContaining('at most 3 per 1m'),
        request_id: 'rest-rl',
        retry_after: 57,
        limit: 3,
        window: '1m',
      })
      // supabase-js reads it as an error with its message; rpc counts too
      const viaClient = await createClient(limited.url, anonKey, { ...options, accessToken: async () => me.token }).from('wallets').select('*')
      expect(viaClient.status).toBe(429)
      expect(viaClient.error?.message).toMatch(/Too many requests/)
      expect(
        (await fetch(`${limited.url}/rest/v1/rpc/turns_today`, {
          method: 'POST',
          headers: { apikey: anonKey, authorization: `Bearer ${me.token}`, 'content-type': 'application/json' },
          body: '{}',
        })).status,
      ).toBe(429)
      // another user has a quota of their own
      expect((await get('/profiles?select=id', other.token)).status).toBe(200)
      // the anon key is counted by the client's address: all of loopback is one client
      const anon = [] as number[]
      for (let i = 0; i < 4; i++) anon.push((await get('/profiles?select=id', null)).status)
      expect(anon).toEqual([401, 401, 401, 429])
      // the backend's own key is not limited
      for (let i = 0; i < 5; i++) expect((await get('/profiles?select=id&limit=1', serviceKey)).status).toBe(200)
      // a bad token is refused before it is counted: it neither passes nor spends the client's quota
      expect((await get('/profiles', 'not-a-jwt')).status).toBe(401)
      // the window slides: a minute after the first hit, one more is let through
      clock.advance(57_000)
      expect((await get('/profiles?select=id', me.token)).status).toBe(200)
      expect((await get('/profiles?select=id', me.token)).status).toBe(429)
    } finally {
      await limited.close(1000)
    }
  })
})
