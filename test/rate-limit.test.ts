import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { OpenAPIHono } from '@hono/zod-openapi'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { createTestApp, json, type TestApp } from './helpers/app.ts'
import { bearer, studentToken } from './helpers/tokens.ts'
import { withCommonMiddleware } from '../functions-shared/app.ts'
import { createRouter } from '../functions-shared/http/router.ts'
import { guards, useRateLimitStore } from '../functions-shared/http/guards.ts'
import { MemoryRateLimitStore } from '../functions-shared/http/rate-limit/memory-store.ts'
import { PostgresRateLimitStore } from '../functions-shared/http/rate-limit/postgres-store.ts'
import type { RateLimitStore } from '../functions-shared/http/rate-limit/store.ts'

let db: TestDatabase
beforeAll(async () => {
  db = await createTestDatabase()
})
afterAll(async () => db?.close())

/** An app with a chat-like route (per user) and an auth-like route (per IP) behind the real guards. */
function limitedApp(store: RateLimitStore): { t: TestApp; app: OpenAPIHono } {
  const t = createTestApp({ sql: db.sql, deps: { remoteAddress: (c) => c.req.header('x-test-peer') ?? '198.51.100.1' } })
  useRateLimitStore(t.deps, store)
  const g = guards(t.deps)
  const router = createRouter()
  router.post('/chat', g.user, g.limit('chat'), (c) => c.json({ ok: true }))
  router.post('/auth/signin', g.limit('auth'), (c) => c.json({ ok: true }))
  const app = withCommonMiddleware(new OpenAPIHono(), t.deps, (a) => a.route('/', router))
  return { t, app }
}

const stores: [string, () => RateLimitStore][] = [
  ['memory', () => new MemoryRateLimitStore()],
  ['postgres', () => new PostgresRateLimitStore(db.sql)],
]

describe.each(stores)('sliding-window limits, %s store', (_name, makeStore) => {
  it('lets 10 chat requests through in a minute and refuses the 11th with the spec body', async () => {
    const { t, app } = limitedApp(makeStore())
    const headers = { ...bearer(await studentToken()), 'x-request-id': 'rl-chat' }
    for (let i = 0; i < 10; i++) {
      const res = await app.request('/chat', { method: 'POST', headers })
      expect(res.status, `request ${i + 1}`).toBe(200)
      expect(res.headers.get('x-ratelimit-remaining')).toBe(String(9 - i))
      t.clock.advance(1000)
    }
    const res = await app.request('/chat', { method: 'POST', headers })
    const body = await json(res)
    expect(res.status).toBe(429)
    expect(body).toEqual({ error: 'rate_limited', message: expect.any(String), request_id: 'rl-chat', retry_after: 50, limit: 10, window: '1m' })
    expect(res.headers.get('retry-after')).toBe('50')
  })

  it('keeps limiting a burst that straddles a minute boundary, then lets one through as the oldest hit leaves', async () => {
    const { t, app } = limitedApp(makeStore())
    const headers = bearer(await studentToken())
    const minute = Math.ceil(t.clock.now() / 60_000) * 60_000 // the next minute boundary
    t.clock.set(minute - 5000)
    for (let i = 0; i < 10; i++) {
      expect((await app.request('/chat', { method: 'POST', headers })).status).toBe(200)
      t.clock.advance(100)
    }
    t.clock.set(minute + 5000) // a fixed window would have reset here
    const straddling = await app.request('/chat', { method: 'POST', headers })
    expect(straddling.status).toBe(429)
    expect((await json(straddling)).retry_after).toBe(50)
    t.clock.set(minute + 55_000 + 1)
    expect((await app.request('/chat', { method: 'POST', headers })).status).toBe(200)
    expect((await app.request('/chat', { method: 'POST', headers })).status).toBe(429)
  })

  it('counts each user separately', async () => {
    const { app } = limitedApp(makeStore())
    const a = bearer(await studentToken())
    const b = bearer(await studentToken())
    for (let i = 0; i < 10; i++) await app.request('/chat', { method: 'POST', headers: a })
    expect((await app.request('/chat', { method: 'POST', headers: a })).status).toBe(429)
    expect((await app.request('/chat', { method: 'POST', headers: b })).status).toBe(200)
  })

  it('limits auth by client IP: the 6th sign-in from one address in a minute gets 429', async () => {
    const { app } = limitedApp(makeStore())
    const from = (ip: string) => ({ method: 'POST', headers: { 'x-test-peer': ip } })
    for (let i = 0; i < 5; i++) expect((await app.request('/auth/signin', from('192.0.2.10'))).status).toBe(200)
    const res = await app.request('/auth/signin', from('192.0.2.10'))
    expect(res.status).toBe(429)
    expect(await json(res)).toMatchObject({ error: 'rate_limited', limit: 5, window: '1m' })
    expect((await app.request('/auth/signin', from('192.0.2.11'))).status).toBe(200)
  })

  it('checks authentication before counting: anonymous calls neither pass nor use the quota', async () => {
    const { app } = limitedApp(makeStore())
    for (let i = 0; i < 12; i++) expect((await app.request('/chat', { method: 'POST' })).status).toBe(401)
    expect((await app.request('/chat', { method: 'POST', headers: bearer(await studentToken()) })).status).toBe(200)
  })
})

describe('client IP', () => {
  it('ignores X-Forwarded-For unless TRUST_PROXY is on', async () => {
    const untrusted = limitedApp(new MemoryRateLimitStore())
    for (let i = 0; i < 5; i++) await untrusted.app.request('/auth/signin', { method: 'POST', headers: { 'x-forwarded-for': `10.0.0.${i}` } })
    expect((await untrusted.app.request('/auth/signin', { method: 'POST', headers: { 'x-forwarded-for': '10.0.0.99' } })).status).toBe(429)

    const t = createTestApp({ sql: db.sql, env: { TRUST_PROXY: 'true' } })
    const router = createRouter()
    router.post('/auth/signin', guards(t.deps).limit('auth'), (c) => c.json({ ok: true }))
    const app = withCommonMiddleware(new OpenAPIHono(), t.deps, (a) => a.route('/', router))
    // the proxy adds the address it saw to the right: what the client wrote to the left of it gives no fresh quota
    for (let i = 0; i < 5; i++) await app.request('/auth/signin', { method: 'POST', headers: { 'x-forwarded-for': `10.9.9.${i}, 192.0.2.1` } })
    expect((await app.request('/auth/signin', { method: 'POST', headers: { 'x-forwarded-for': '192.0.2.1' } })).status).toBe(429)
    expect((await app.request('/auth/signin', { method: 'POST', headers: { 'x-forwarded-for': '192.0.2.1, 192.0.2.2' } })).status).toBe(200)
  })

  it('takes the client TRUSTED_PROXY_HOPS addresses from the right of X-Forwarded-For, behind that many proxies', async () => {
    const t = createTestApp({ sql: db.sql, env: { TRUST_PROXY: 'true', TRUSTED_PROXY_HOPS: '2' } })
    const router = createRouter()
    router.post('/auth/signin', guards(t.deps).limit('auth'), (c) => c.json({ ok: true }))
    const app = withCommonMiddleware(new OpenAPIHono(), t.deps, (a) => a.route('/', router))
    // client 198.51.100.7 behind a CDN (203.0.113.1) and the gateway: each forged left part is the same client
    for (let i = 0; i < 5; i++) await app.request('/auth/signin', { method: 'POST', headers: { 'x-forwarded-for': `10.9.9.${i}, 198.51.100.7, 203.0.113.1` } })
    expect((await app.request('/auth/signin', { method: 'POST', headers: { 'x-forwarded-for': '198.51.100.7, 203.0.113.1' } })).status).toBe(429)
    expect((await app.request('/auth/signin', { method: 'POST', headers: { 'x-forwarded-for': '198.51.100.8, 203.0.113.1' } })).status).toBe(200)
  })
})

describe('the client a per-IP limit counts', () => {
  it('counts every loopback address as one client and an IPv6 address by its /64, as the connection limit does: a fresh address is no fresh quota', async () => {
    const { app } = limitedApp(new MemoryRateLimitStore())
    const from = (peer: string) => app.request('/auth/signin', { method: 'POST', headers: { 'x-test-peer': peer } })
    for (let i = 1; i <= 5; i++) expect((await from(`127.0.0.${i}`)).status).toBe(200)
    expect((await from('127.0.0.6')).status).toBe(429)
    expect((await from('::1')).status).toBe(429)
    for (let i = 1; i <= 5; i++) expect((await from(`2001:db8:1:2::${i.toString(16)}`)).status).toBe(200)
    expect((await from('2001:db8:1:2:ffff:ffff:ffff:ffff')).status).toBe(429)
    expect((await from('2001:db8:1:3::1')).status).toBe(200)
    // an IPv4 address is its own client, mapped into IPv6 or not
    for (let i = 0; i < 5; i++) expect((await from('203.0.113.9')).status).toBe(200)
    expect((await from('::ffff:203.0.113.9')).status).toBe(429)
    expect((await from('203.0.113.10')).status).toBe(200)
  })
})

describe('requireUser', () => {
  it('refuses a service-role token on a user route with 403', async () => {
    const { app } = limitedApp(new MemoryRateLimitStore())
    const { apiKey } = await import('../functions-shared/lib/keys.ts')
    const { LOCAL_JWT_SECRET } = await import('../functions-shared/config.ts')
    const res = await app.request('/chat', { method: 'POST', headers: bearer(await apiKey(LOCAL_JWT_SECRET, 'service_role')) })
    expect(res.status).toBe(403)
  })
})

describe('memory store housekeeping', () => {
  it('forgets keys whose hits all left the window', async () => {
    const store = new MemoryRateLimitStore({ sweepEvery: 10 })
    for (let i = 0; i < 9; i++) await store.hit(`k${i}`, 5, 60_000, 0)
    expect(store.size).toBe(9)
    await store.hit('late', 5, 60_000, 61_000)
    expect(store.size).toBe(1)
  })
})

describe('postgres store under concurrency', () => {
  it('allows exactly the limit when 25 checks of one key race', async () => {
    const pool = db.connect(8)
    const store = new PostgresRateLimitStore(pool)
    const results = await Promise.all(Array.from({ length: 25 }, () => store.hit('race:one', 10, 60_000, 1_000_000)))
    expect(results.filter((r) => r.allowed)).toHaveLength(10)
    const [row] = await db.sql`select cardinality(hits) as n from private.rate_limits where key = 'race:one'`
    expect(row!.n).toBe(10)
  })

  it('is shared by two app instances on one database: the combined 11th request gets 429', async () => {
    const one = limitedApp(new PostgresRateLimitStore(db.connect(2)))
    const two = limitedApp(new PostgresRateLimitStore(db.connect(2)))
    const headers = bearer(await studentToken())
    for (let i = 0; i < 10; i++) expect((await (i % 2 ? one : two).app.request('/chat', { method: 'POST', headers })).status).toBe(200)
    expect((await one.app.request('/chat', { method: 'POST', headers })).status).toBe(429)
    expect((await two.app.request('/chat', { method: 'POST', headers })).status).toBe(429)
  })
})
