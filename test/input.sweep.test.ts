// The input sweep: every route of the OpenAPI document, every string field and query and path
// parameter, given what attackers and broken clients send — NUL, unpaired surrogates, bidi controls,
// 1 MB strings, numbers as strings and the reverse, nulls, arrays, objects, deep nesting — first
// systematically (each value in each field), then at random (several fields at once, fast-check).
// Every answer is below 500 and carries the error body with the request id; text the database cannot
// store is never accepted; and afterwards every wallet equals its ledger and no hold is left behind.
// The local auth server (/auth/v1) gets the same treatment.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { createTestApp, type TestApp } from './helpers/app.ts'
import { createUser, type TestUser } from './helpers/users.ts'
import { bearer } from './helpers/tokens.ts'
import { openApiDocument } from '../functions-shared/app.ts'

let db: TestDatabase
let t: TestApp
let student: TestUser
let adminHeaders: Record<string, string>
let doc: any

const HIGH_LIMITS = Object.fromEntries(
  ['CHAT', 'WALLET', 'UPLOAD', 'AUTH', 'ADMIN', 'PUBLIC', 'PROFILE'].map((s) => [`RATE_LIMIT_${s}_PER_MINUTE`, '10000000']),
)

beforeAll(async () => {
  db = await createTestDatabase()
  t = createTestApp({
    sql: db.sql,
    env: {
      ...HIGH_LIMITS,
      AUTH_RATE_LIMIT_SIGN_IN_SIGN_UPS: '10000000',
      AUTH_RATE_LIMIT_TOKEN_REFRESH: '10000000',
      AUTH_RATE_LIMIT_TOKEN_VERIFICATIONS: '10000000',
      AUTH_RATE_LIMIT_EMAIL_SENT: '10000000',
      LOG_LEVEL: 'silent',
    },
  })
  doc = openApiDocument(t.deps)
  student = await createUser(db.sql, { fullName: 'Élève' })
  const admin = await createUser(db.sql, { role: 'admin' })
  adminHeaders = bearer(admin.token)
  // enough tokens that chat turns run to the end rather than stop at 402
  await db.sql`select public.top_up(${student.id}, 1000000, 1, 'MRU', 'cash', null, 'sweep', null, null, 50)`
})
afterAll(async () => {
  await t?.deps.background.idle()
  await db?.close()
})

// ---- hostile values

const UNSTORABLE = { nul: 'x\u0000', nul_only: '\u0000', high_surrogate: 'x\ud800', low_surrogate: '\udc00x' } as const
const ODD_TEXT = {
  rtl_override: '\u202eevil\u202c',
  bidi_isolates: '\u2066\u2067x\u2069\u2069',
  zero_width: 'a\u200b\u200d\ufeffb',
  emoji: '👩🏽‍🏫',
  arabic: 'الإسلامُ «نشأت حركة المرابطين».',
  combining: 'e\u0301\u0301\u0301',
  empty: '',
  spaces: '   ',
  ten_kb: 'x'.repeat(10_000),
  one_mb: 'a'.repeat(1 << 20),
  sql: "'; drop table public.wallets; --",
  percent: '%00%ED%A0%80',
  number_as_string: '12',
} as const
const NOT_STRINGS = {
  number: 12,
  negative: -1,
  huge: 1e308,
  fraction: 0.5,
  boolean: true,
  null: null,
  array: ['x'],
  object: { a: 'x\u0000' },
  deep: JSON.parse(`${'['.repeat(2000)}${']'.repeat(2000)}`),
} as const
type ValueName = keyof typeof UNSTORABLE | keyof typeof ODD_TEXT | keyof typeof NOT_STRINGS
const VALUES: Record<ValueName, unknown> = { ...UNSTORABLE, ...ODD_TEXT, ...NOT_STRINGS }
const unstorable = (name: ValueName) => name in UNSTORABLE

// ---- requests from the OpenAPI document

interface Operation {
  method: string
  path: string
  admin: boolean
  bearer: boolean
  params: { name: string; in: 'query' | 'path'; schema: any }[]
  body: { type: 'json' | 'form'; schema: any } | null
}

const resolve = (s: any): any => (s?.$ref ? doc.components.schemas[s.$ref.split('/').at(-1)] : s)

function operations(): Operation[] {
  const ops: Operation[] = []
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(item)) {
      const security = (op.security ?? []) as Record<string, unknown>[]
      const content = op.requestBody?.content ?? {}
      const json = content['application/json']?.schema
      const form = content['multipart/form-data']?.schema
      ops.push({
        method: method.toUpperCase(),
        path,
        admin: security.some((s) => 'adminKey' in s),
        bearer: security.length > 0,
        params: (op.parameters ?? []).filter((p: any) => p.in === 'query' || p.in === 'path'),
        body: json ? { type: 'json', schema: resolve(json) } : form ? { type: 'form', schema: resolve(form) } : null,
      })
    }
  }
  return ops
}

/** A value the schema accepts (or nearly: what matters is that the other fields do not fail first). */
function sample(schema: any, name = ''): unknown {
  const s = resolve(schema)
  if (!s) return 'x'
  if (s.enum) return s.enum[0]
  if (s.const !== undefined) return s.const
  const variants = s.anyOf ?? s.oneOf
  if (variants) return sample(variants.find((v: any) => v.type !== 'null') ?? variants[0], name)
  const type = Array.isArray(s.type) ? s.type.find((x: string) => x !== 'null') : s.type
  if (type === 'object' || s.properties) {
    const out: Record<string, unknown> = {}
    for (const key of s.required ?? []) out[key] = sample(s.properties?.[key], key)
    return out
  }
  if (type === 'array') return Array.from({ length: s.minItems ?? 0 }, () => sample(s.items, name))
  if (type === 'integer' || type === 'number') return Math.max(s.minimum ?? 1, s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + 1 : 1)
  if (type === 'boolean') return false
  if (s.format === 'binary') return new File([new Uint8Array([1, 2, 3])], 'x.pdf', { type: 'application/pdf' })
  if (name === 'user_id') return student.id
  if (name === 'email') return `sweep-${crypto.randomUUID().slice(0, 8)}@example.mr`
  if (name.includes('password')) return 'secret-123'
  if (s.format === 'uuid') return crypto.randomUUID()
  if (s.format === 'uri' || s.format === 'url') return 'https://example.mr/a.pdf'
  if (s.format === 'email') return `sweep-${crypto.randomUUID().slice(0, 8)}@example.mr`
  if (s.format === 'date-time') return new Date().toISOString()
  if (s.pattern) return ['4AS', 'mathematiques', 'x', 'demo'].find((c) => new RegExp(s.pattern).test(c)) ?? 'x'
  return 'x'.repeat(Math.max(1, s.minLength ?? 2))
}

/** Every place a value can go: body fields (nested one level), query and path parameters. */
function targets(op: Operation): string[] {
  const out = op.params.map((p) => `${p.in}:${p.name}`)
  const props = resolve(op.body?.schema)?.properties ?? {}
  for (const [key, prop] of Object.entries<any>(props)) {
    const p = resolve(prop)
    if (p?.format === 'binary') continue
    out.push(`body:${key}`)
    const items = resolve(p?.items)
    if (items?.properties) { for (const k of Object.keys(items.properties)) out.push(`body:${key}.0.${k}`) }
  }
  return out
}

/** Percent-encoding for a query or path value, the raw bytes of an unpaired surrogate included (CESU-8). */
function encode(value: string): string {
  let out = ''
  for (const ch of value) {
    const cp = ch.codePointAt(0)!
    if (cp >= 0xd800 && cp <= 0xdfff) {
      out += [0xe0 | (cp >> 12), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f)].map((b) => `%${b.toString(16).toUpperCase()}`).join('')
    } else out += encodeURIComponent(ch)
  }
  return out
}

/** Sets `value` at a dotted path ("history.0.content"), making the array item from its schema when missing. */
function setAt(obj: Record<string, any>, path: string, value: unknown, schema: any) {
  const keys = path.split('.')
  let at: any = obj
  let s = resolve(schema)
  for (const [i, key] of keys.slice(0, -1).entries()) {
    s = /^\d+$/.test(key) ? resolve(s?.items) : resolve(s?.properties?.[key])
    if (at[key] === undefined || at[key] === null || typeof at[key] !== 'object') at[key] = /^\d+$/.test(keys[i + 1]!) ? [] : {}
    if (Array.isArray(at[key]) && at[key][Number(keys[i + 1])] === undefined) at[key][Number(keys[i + 1])] = sample(s?.items)
    at = at[key]
  }
  at[keys.at(-1)!] = value
}

function request(op: Operation, mutations: [string, unknown][]): { url: string; init: RequestInit } {
  const values = new Map(mutations)
  let path = op.path
  const query: string[] = []
  for (const p of op.params) {
    const key = `${p.in}:${p.name}`
    // a path id is never the test student's: a DELETE /admin/users/{user_id} would remove them
    const raw = values.has(key) ? values.get(key) : p.in === 'path' ? sample(p.schema) : undefined
    if (raw === undefined) continue
    const text = encode(typeof raw === 'string' ? raw : JSON.stringify(raw))
    if (p.in === 'path') path = path.replace(`{${p.name}}`, text)
    else query.push(`${encodeURIComponent(p.name)}=${text}`)
  }
  const headers: Record<string, string> = op.bearer ? (op.admin ? { ...adminHeaders } : bearer(student.token)) : {}
  let body: BodyInit | undefined
  if (op.body) {
    const value = sample(op.body.schema) as Record<string, unknown>
    // each value a copy: two fields of one request may nest into each other (history set to the array
    // value, then history.0.content into it), which wrote into the shared value and left it circular
    for (const [key, v] of mutations) if (key.startsWith('body:')) setAt(value, key.slice(5), structuredClone(v), op.body.schema)
    if (op.body.type === 'json') {
      headers['content-type'] = 'application/json'
      body = JSON.stringify(value)
    } else {
      const form = new FormData()
      for (const [k, v] of Object.entries(value)) form.set(k, v instanceof File ? v : typeof v === 'string' ? v : JSON.stringify(v))
      body = form
    }
  }
  return { url: `${path}${query.length ? `?${query.join('&')}` : ''}`, init: { method: op.method, headers, ...(body === undefined ? {} : { body }) } }
}

const stats = { requests: 0, routes: new Set<string>(), statuses: new Map<number, number>() }
/** the holds the internal reserve endpoint made on purpose (nothing settles them: it is a testing endpoint) */
const internalHolds = new Set<string>()

/** One request; the answer is checked for what every answer must be. */
async function probe(op: Operation, mutations: [string, unknown][], names: ValueName[]) {
  const { url, init } = request(op, mutations)
  const res = await t.request(url, init)
  stats.requests++
  stats.routes.add(`${op.method} ${op.path}`)
  stats.statuses.set(res.status, (stats.statuses.get(res.status) ?? 0) + 1)
  const where = `${op.method} ${url.slice(0, 200)} with ${names.join(', ')} in ${mutations.map(([k]) => k).join(', ')}`
  const text = await res.text()
  expect(res.status, `${where} → ${res.status} ${text.slice(0, 300)}`).toBeLessThan(500)
  if (op.path === '/wallet/internal/reserve' && res.status < 300) internalHolds.add(JSON.parse(text).id)
  if (res.status >= 400) {
    const body = JSON.parse(text)
    expect(body, where).toMatchObject({ error: expect.any(String), message: expect.any(String), request_id: res.headers.get('x-request-id') })
  }
  // text the database cannot store is never accepted, wherever it is put (in a URL an unpaired surrogate
  // cannot arrive as one: its bytes decode to replacement characters, which are storable; NUL can)
  // (a value that a later pick replaces is no longer in the request: `history` then `history.0.content`
  // builds a new history around the content; `history.0.content` then `history` replaces the whole)
  const overwritten = (i: number) => {
    const target = mutations[i]![0]
    return mutations.some(([later], j) => j > i && (later.startsWith(`${target}.`) || target.startsWith(`${later}.`)))
  }
  const refused = mutations.some(([target], i) => unstorable(names[i]!) && !overwritten(i) && (target.startsWith('body:') || names[i]!.startsWith('nul')))
  if (refused) expect(res.status, `${where} → ${text.slice(0, 300)}`).toBeGreaterThanOrEqual(400)
  return res.status
}

describe('the input sweep over every route of the OpenAPI document', () => {
  it('puts each hostile value in each field and parameter of each route', async () => {
    const ops = operations()
    expect(ops.length).toBeGreaterThan(40)
    for (const op of ops) {
      await probe(op, [], [])
      for (const target of targets(op)) {
        for (const name of Object.keys(VALUES) as ValueName[]) {
          // a path segment is a string: only strings go there
          if (target.startsWith('path:') && typeof VALUES[name] !== 'string') continue
          // the idle background work of a dispatch or a sync is awaited, so its writes are checked too
          await probe(op, [[target, VALUES[name]]], [name])
        }
      }
    }
    await t.deps.background.idle()
  }, 300_000)

  it('answers broken bodies (not JSON, the wrong type, a JSON array or scalar, none) with a 4xx on every route that takes one', async () => {
    const broken: [string, Record<string, string>, BodyInit | undefined][] = [
      ['truncated JSON', { 'content-type': 'application/json' }, '{"message": "x'],
      ['JSON array', { 'content-type': 'application/json' }, '[1, 2]'],
      ['JSON scalar', { 'content-type': 'application/json' }, '"x"'],
      ['JSON null', { 'content-type': 'application/json' }, 'null'],
      ['plain text', { 'content-type': 'text/plain' }, 'hello'],
      ['form instead of JSON', { 'content-type': 'application/x-www-form-urlencoded' }, 'a=1'],
      ['multipart without boundary', { 'content-type': 'multipart/form-data' }, 'x'],
      ['invalid UTF-8', { 'content-type': 'application/json' }, new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d])],
      ['no body', {}, undefined],
    ]
    for (const op of operations().filter((o) => o.body)) {
      const { url, init } = request(op, [])
      for (const [what, headers, body] of broken) {
        const auth = Object.fromEntries(Object.entries((init.headers ?? {}) as Record<string, string>).filter(([k]) => k.toLowerCase() === 'authorization'))
        const res = await t.request(url, { method: op.method, headers: { ...auth, ...headers }, ...(body === undefined ? {} : { body }) })
        stats.requests++
        const text = await res.text()
        const where = `${op.method} ${op.path} with ${what} → ${res.status} ${text.slice(0, 200)}`
        expect(res.status, where).toBeGreaterThanOrEqual(400)
        expect(res.status, where).toBeLessThan(500)
        expect(JSON.parse(text), where).toMatchObject({ error: expect.any(String), request_id: res.headers.get('x-request-id') })
      }
    }
  })

  it('and several at once, at random', async () => {
    const ops = operations().filter((op) => targets(op).length > 0)
    const names = Object.keys(VALUES) as ValueName[]
    const scenario = fc.constantFrom(...ops).chain((op) =>
      fc.tuple(
        fc.constant(op),
        fc.uniqueArray(fc.tuple(fc.constantFrom(...targets(op)), fc.constantFrom(...names)), { minLength: 1, maxLength: 4, selector: ([target]) => target }),
      )
    )
    await fc.assert(
      fc.asyncProperty(scenario, async ([op, picks]) => {
        const usable = picks.filter(([target, name]) => !(target.startsWith('path:') && typeof VALUES[name] !== 'string'))
        if (usable.length === 0) return
        await probe(op, usable.map(([target, name]) => [target, VALUES[name]]), usable.map(([, name]) => name))
      }),
      { numRuns: 400 },
    )
    await t.deps.background.idle()
  }, 300_000)

  it('leaves every wallet equal to its ledger and no hold behind', async () => {
    const wallets = await db.sql`select w.user_id, w.token_balance::bigint as balance,
                                        coalesce((select sum(l.delta) from public.token_ledger l where l.user_id = w.user_id), 0)::bigint as ledger
                                   from public.wallets w`
    expect(wallets.length).toBeGreaterThan(0)
    for (const w of wallets) expect(w.balance, w.user_id as string).toBe(w.ledger)
    // the only holds left are those the internal reserve endpoint made on purpose: every chat turn settled its own
    const held = await db.sql`select id from public.reservations where status = 'reserved'`
    expect(held.map((r) => r.id as string).filter((id) => !internalHolds.has(id))).toEqual([])
    const [unsettled] = await db
      .sql`select count(*)::int as n from public.reservations r join public.usage_log u on u.reservation_id = r.id where r.status <> 'finalized'`
    expect(unsettled!.n).toBe(0)
    const [turns] = await db.sql`select count(*)::int as n from public.usage_log where kind in ('chat', 'clarify') and user_id = ${student.id}`
    expect(turns!.n).toBeGreaterThan(0) // chat turns really ran, with odd text among them
    console.log(
      `input sweep: ${stats.requests} requests over ${stats.routes.size} routes; statuses ${JSON.stringify(Object.fromEntries([...stats.statuses].sort()))}`,
    )
  })
})

describe('the same sweep over the local auth server (/auth/v1)', () => {
  const routes: { method: string; path: string; body?: Record<string, unknown>; fields: string[] }[] = [
    {
      method: 'POST',
      path: '/signup',
      body: { email: 'a@example.mr', password: 'secret-123', data: { full_name: 'A' } },
      fields: ['email', 'password', 'data.full_name', 'data'],
    },
    { method: 'POST', path: '/token?grant_type=password', body: { email: 'a@example.mr', password: 'secret-123' }, fields: ['email', 'password'] },
    { method: 'POST', path: '/token?grant_type=refresh_token', body: { refresh_token: 'abcdefghijklmnop' }, fields: ['refresh_token'] },
    { method: 'POST', path: '/recover', body: { email: 'a@example.mr' }, fields: ['email'] },
    { method: 'PUT', path: '/user', body: { data: { full_name: 'A' } }, fields: ['data.full_name', 'email', 'password', 'data'] },
    {
      method: 'POST',
      path: '/admin/users',
      body: { email: 'b@example.mr', password: 'secret-123', user_metadata: { full_name: 'B' } },
      fields: ['email', 'password', 'user_metadata.full_name', 'app_metadata', 'id'],
    },
  ]

  it("answers every hostile value below 500, in GoTrue's error shape", async () => {
    const service = bearer(
      await (await import('../functions-shared/lib/keys.ts')).apiKey((await import('../functions-shared/config.ts')).LOCAL_JWT_SECRET, 'service_role'),
    )
    const signup = await t.auth.request('/auth/v1/signup', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: `u-${crypto.randomUUID().slice(0, 8)}@example.mr`, password: 'secret-123' }),
    })
    const userToken = (await signup.json()).access_token as string
    let n = 0
    for (const route of routes) {
      for (const field of route.fields) {
        for (const name of Object.keys(VALUES) as ValueName[]) {
          const body = structuredClone(route.body ?? {}) as Record<string, any>
          const keys = field.split('.')
          let at = body
          for (const k of keys.slice(0, -1)) at = at[k] ??= {}
          at[keys.at(-1)!] = structuredClone(VALUES[name])
          const headers = {
            'content-type': 'application/json',
            ...(route.path.startsWith('/admin') ? service : route.path === '/user' ? bearer(userToken) : {}),
          }
          const res = await t.auth.request(`/auth/v1${route.path}`, { method: route.method, headers, body: JSON.stringify(body) })
          n++
          const text = await res.text()
          const where = `${route.method} ${route.path} ${field}=${name} → ${res.status} ${text.slice(0, 200)}`
          expect(res.status, where).toBeLessThan(500)
          // GoTrue's error shape, or the OAuth one it keeps for the token endpoint's missing refresh_token
          if (res.status >= 400) {
            expect(JSON.parse(text), where).toSatisfy((b: Record<string, unknown>) =>
              (b.code === res.status && typeof b.error_code === 'string' && typeof b.msg === 'string') ||
              (typeof b.error === 'string' && typeof b.error_description === 'string')
            )
          }
          if (unstorable(name)) expect(res.status, where).toBeGreaterThanOrEqual(400)
        }
      }
    }
    for (const query of ['%00', '%ED%A0%80', encode('\u202e')]) {
      const res = await t.auth.request(`/auth/v1/verify?type=recovery&token=${query}${'a'.repeat(20)}&redirect_to=${query}`)
      expect(res.status).toBeLessThan(500)
      n++
    }
    console.log(`local auth sweep: ${n} requests over ${routes.length + 1} routes`)
  }, 120_000)
})
