import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { createTestApp, json, type TestApp } from './helpers/app.ts'
import { bearer } from './helpers/tokens.ts'
import { createUser } from './helpers/users.ts'

let db: TestDatabase
let t: TestApp

beforeAll(async () => {
  db = await createTestDatabase()
  t = createTestApp({ sql: db.sql })
})
afterAll(async () => db?.close())

describe('GET /health', () => {
  it('answers 200 with status, version and a reachable database', async () => {
    const res = await t.request('/health')
    const body = await json(res)
    expect(res.status, JSON.stringify(body)).toBe(200)
    expect(body).toMatchObject({ status: 'ok', version: '0.1.0', database: { reachable: true } })
    expect(res.headers.get('content-type')).toContain('application/json')
  })

  it('runs one check of the database for requests that come while it runs, and a new one after', async () => {
    // every statement and transaction the health router sends to the database, counted
    let calls = 0
    const counted = new Proxy(db.sql, {
      apply: (target, self, args) => {
        calls++
        return Reflect.apply(target, self, args)
      },
      get: (target, key, receiver) => {
        const value = Reflect.get(target, key, receiver)
        if (key !== 'begin' || typeof value !== 'function') return value
        return (...args: unknown[]) => {
          calls++
          return value.apply(target, args)
        }
      },
    })
    const app = createTestApp({ sql: counted })
    const first = await app.request('/health')
    expect(first.status).toBe(200)
    const perCheck = calls
    expect(perCheck).toBe(3)
    const answers = await Promise.all(Array.from({ length: 20 }, () => app.request('/health')))
    expect(answers.map((r) => r.status)).toEqual(Array(20).fill(200))
    expect(calls - perCheck).toBe(perCheck)
    // a request after the check ended starts a check of its own: a database that stops answering is seen
    await app.request('/health')
    expect(calls).toBe(3 * perCheck)
  })

  it('answers 503 degraded when the database is gone', async () => {
    const dead = await createTestDatabase()
    const app = createTestApp({ sql: dead.sql })
    await dead.close()
    const res = await app.request('/health')
    const body = await json(res)
    expect(res.status).toBe(503)
    expect(body).toMatchObject({ status: 'degraded', database: { reachable: false, latency_ms: null } })
  })
})

describe('request ids', () => {
  it('returns a sane client X-Request-ID unchanged', async () => {
    const res = await t.request('/health', { headers: { 'X-Request-ID': 'abc-123' } })
    expect(res.headers.get('x-request-id')).toBe('abc-123')
  })

  it('generates a UUID when the client sends none', async () => {
    const res = await t.request('/health')
    expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
  })

  it.each([['a'.repeat(129)], ['<script>'], ['id with spaces'], ['../../etc'], ['ünïcode']])('replaces an unsafe X-Request-ID (%j) with a UUID', async (id) => {
    const res = await t.request('/health', { headers: { 'X-Request-ID': id } })
    expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
  })

  it('puts the request id on the error body and on every log line of the request', async () => {
    const res = await t.request('/no/such/path', { headers: { 'X-Request-ID': 'trace-42' } })
    const body = await json(res)
    expect(res.status).toBe(404)
    expect(body).toEqual({ error: 'not_found', message: 'No route for GET /no/such/path', request_id: 'trace-42' })
    const lines = t.logs.lines.filter((l) => l.request_id === 'trace-42')
    expect(lines.length).toBeGreaterThan(0)
  })
})

describe('JSON logs', () => {
  it('writes one access line per request with timestamp, level, logger, message, request_id, method, route, status, duration', async () => {
    const before = t.logs.raw.length
    await t.request('/health', { headers: { 'X-Request-ID': 'log-check' } })
    const lines = t.logs.lines.slice(before)
    const access = lines.filter((l) => l.message === 'request completed')
    expect(access).toHaveLength(1)
    const line = access[0]!
    expect(line).toMatchObject({ level: 'info', logger: 'http', request_id: 'log-check', method: 'GET', route: '/health', status: 200 })
    expect(new Date(line.timestamp as string).toISOString()).toBe(line.timestamp)
    expect(typeof line.duration_ms).toBe('number')
    for (const l of t.logs.raw.slice(before)) expect(l.endsWith('\n') && !l.slice(0, -1).includes('\n')).toBe(true)
  })

  it('never writes secrets: tokens, keys and passwords are redacted', async () => {
    const log = t.deps.logs.forRequest('test', 'redact-check')
    log.info({ password: 'hunter2', body: { access_token: 'tok.en.value', refresh_token: 'r123', note: 'kept' }, authorization: 'Bearer abc' }, 'signin')
    const token = (await createUser(db.sql, { role: 'admin' })).token
    await t.request('/metrics', { headers: bearer(token) })
    const text = t.logs.text()
    for (const secret of ['hunter2', 'tok.en.value', 'r123', 'Bearer abc', token]) expect(text).not.toContain(secret)
    expect(text).toContain('kept')
  })
})

describe('CORS', () => {
  it('answers a preflight with the headers Supabase clients send', async () => {
    const res = await t.request('/health', {
      method: 'OPTIONS',
      headers: {
        Origin: 'https://app.example.mr',
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'authorization, x-client-info, apikey, content-type',
      },
    })
    expect(res.status).toBe(204)
    expect(res.headers.get('access-control-allow-origin')).toBe('*')
    const allowed = res.headers.get('access-control-allow-headers')!.toLowerCase()
    for (const h of ['authorization', 'x-client-info', 'apikey', 'content-type']) expect(allowed).toContain(h)
  })

  it('exposes the request id to browsers', async () => {
    const res = await t.request('/health', { headers: { Origin: 'https://app.example.mr' } })
    expect(res.headers.get('access-control-expose-headers')).toContain('X-Request-ID')
  })
})

describe('metrics', () => {
  it('serves Prometheus text with request counts and latencies by route and status', async () => {
    await t.request('/health')
    const res = await t.request('/metrics', { headers: bearer((await createUser(db.sql, { role: 'admin' })).token) })
    const text = await res.text()
    expect(res.status, text).toBe(200)
    expect(res.headers.get('content-type')).toContain('text/plain')
    expect(text).toMatch(/http_requests_total\{method="GET",route="\/health",status="200"\} \d+/)
    expect(text).toContain('http_request_duration_seconds_bucket{le="0.005",method="GET",route="/health",status="200"}')
  })

  it('serves the same figures as JSON', async () => {
    const res = await t.request('/metrics/json', { headers: bearer((await createUser(db.sql, { role: 'admin' })).token) })
    const body = await json(res)
    expect(res.status).toBe(200)
    const requests = body.metrics.find((m: { name: string }) => m.name === 'http_requests_total')
    expect(requests.type).toBe('counter')
    expect(requests.values.some((v: { labels: Record<string, string> }) => v.labels.route === '/health' && v.labels.status === '200')).toBe(true)
  })

  it('labels unknown paths as unmatched, never with the raw path', async () => {
    await t.request('/admin/jobs/6f0c2c1e-0000-4000-8000-000000000000')
    const text = await (await t.request('/metrics', { headers: bearer((await createUser(db.sql, { role: 'admin' })).token) })).text()
    expect(text).toContain('route="unmatched",status="404"')
    expect(text).not.toContain('6f0c2c1e')
  })
})
