import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { createTestApp, json, type TestApp } from './helpers/app.ts'
import { createUser } from './helpers/users.ts'
import { withCommonMiddleware } from '../functions-shared/app.ts'
import { createRouter } from '../functions-shared/http/router.ts'
import { ApiError, ErrorCode, statusOf } from '../functions-shared/http/errors.ts'

let db: TestDatabase
let t: TestApp
let app: OpenAPIHono

const echo = createRoute({
  method: 'post',
  path: '/echo',
  request: {
    body: { content: { 'application/json': { schema: z.object({ name: z.string().min(2), grade: z.number().int().min(1).max(7) }) } } },
    query: z.object({ limit: z.coerce.number().int().max(200).optional() }),
  },
  responses: { 200: { description: 'echo' } },
})

beforeAll(async () => {
  db = await createTestDatabase()
  t = createTestApp({ sql: db.sql, env: { BODY_LIMIT_BYTES: '1024', UPLOAD_MAX_BYTES: '4096' } })
  // A router of the shape every capability uses, behind the same middleware, to reach each error tier.
  const router = createRouter()
    .openapi(echo, (c) => c.json(c.req.valid('json'), 200))
  router.get('/boom', () => {
    throw new Error('connection string postgres://secret@db leaked?')
  })
  router.get('/pg/:code', (c) => {
    throw Object.assign(new Error(`database error ${c.req.param('code')}`), { name: 'PostgresError', code: c.req.param('code') })
  })
  router.get('/conflict', () => {
    throw new ApiError(ErrorCode.CONFLICT, 'Job is not failed', { details: { job_status: 'ready' } })
  })
  router.post('/admin/upload-curriculum', async (c) => c.json({ size: (await c.req.arrayBuffer()).byteLength }))
  router.post('/small', async (c) => c.json({ size: (await c.req.arrayBuffer()).byteLength }))
  app = withCommonMiddleware(new OpenAPIHono(), t.deps, (a) => a.route('/t', router))
})
afterAll(async () => db?.close())

describe('error bodies', () => {
  it('gives 400 with the failing fields for invalid JSON input', async () => {
    const res = await app.request('/t/echo', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'val-1' },
      body: JSON.stringify({ name: 'a', grade: 9 }),
    })
    const body = await json(res)
    expect(res.status, JSON.stringify(body)).toBe(400)
    expect(body.error).toBe('validation_failed')
    expect(body.request_id).toBe('val-1')
    expect(body.fields.map((f: { field: string }) => f.field).sort()).toEqual(['grade', 'name'])
  })

  it('gives 400 for an out-of-range query parameter', async () => {
    const res = await app.request('/t/echo?limit=1000000000', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'ab', grade: 2 }),
    })
    const body = await json(res)
    expect(res.status).toBe(400)
    expect(body.fields).toEqual([expect.objectContaining({ field: 'limit' })])
  })

  it('gives 400 for a body that is not JSON', async () => {
    const res = await app.request('/t/echo', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":' })
    const body = await json(res)
    expect(res.status).toBe(400)
    expect(body).toMatchObject({ error: 'bad_request', request_id: expect.any(String) })
  })

  it('refuses a JSON body that is not UTF-8 with 400, rather than storing U+FFFD in its place', async () => {
    const bytes = new Uint8Array([...new TextEncoder().encode('{"name":"Al'), 0xc3, 0x28, ...new TextEncoder().encode('i","grade":3}')])
    const res = await app.request('/t/echo', { method: 'POST', headers: { 'content-type': 'application/json' }, body: bytes })
    expect(res.status).toBe(400)
    expect(await json(res)).toMatchObject({ error: 'bad_request', message: 'The request body is not valid UTF-8', request_id: expect.any(String) })
    // the same body as UTF-8 is taken, and a JSON body over the limit is still a 413
    const good = await app.request('/t/echo', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"Alié","grade":3}' })
    expect(await json(good)).toEqual({ name: 'Alié', grade: 3 })
    const big = await app.request('/t/echo', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: `{"name":"${'x'.repeat(1100)}","grade":3}`,
    })
    expect(big.status).toBe(413)
  })

  it('gives 415 unsupported_media_type to a body of a type the route does not take', async () => {
    const student = await createUser(db.sql)
    for (const type of ['text/plain', undefined]) {
      const res = await t.request('/chat', {
        method: 'POST',
        headers: { authorization: `Bearer ${student.token}`, ...(type ? { 'content-type': type } : {}) },
        body: 'Bonjour',
      })
      expect(res.status).toBe(415)
      expect(await json(res)).toMatchObject({
        error: 'unsupported_media_type',
        request_id: res.headers.get('x-request-id'),
        message: expect.stringMatching(/^Unsupported Media Type: send the body as JSON \(Content-Type: application\/json\), not text\/plain/),
      })
    }
  })

  it("takes a value the database refused (class 22) for the client's input, but not pgvector's dimension mismatch (22000)", async () => {
    const input = await app.request('/t/pg/22P02')
    expect(input.status).toBe(400)
    expect(await json(input)).toMatchObject({ error: 'validation_failed' })
    const server = await app.request('/t/pg/22000')
    expect(server.status).toBe(500)
    expect(await json(server)).toMatchObject({ error: 'internal_error', message: 'Internal server error' })
  })

  it('answers a transaction PostgreSQL rolled back for a concurrent one (deadlock, serialization failure) with a 409 to send again, not a 500', async () => {
    for (const code of ['40P01', '40001']) {
      const res = await app.request(`/t/pg/${code}`)
      expect(res.status, code).toBe(409)
      expect(res.headers.get('retry-after')).toBe('1')
      expect(await json(res)).toMatchObject({
        error: 'conflict',
        message: expect.stringMatching(/concurrent change .* send it again/),
        request_id: res.headers.get('x-request-id'),
      })
    }
  })

  it('maps a domain error to its status with its details', async () => {
    const res = await app.request('/t/conflict')
    expect(res.status).toBe(409)
    expect(await json(res)).toEqual({ error: 'conflict', message: 'Job is not failed', request_id: expect.any(String), job_status: 'ready' })
  })

  it('turns an unexpected error into a logged 500 without internals', async () => {
    const res = await app.request('/t/boom', { headers: { 'x-request-id': 'boom-1' } })
    const body = await json(res)
    expect(res.status).toBe(500)
    expect(body).toEqual({ error: 'internal_error', message: 'Internal server error', request_id: 'boom-1' })
    const logged = t.logs.lines.find((l) => l.request_id === 'boom-1' && l.level === 'error')
    expect(logged?.message).toBe('unexpected error')
  })

  it('gives a JSON 404 with error and request_id for unknown routes', async () => {
    const res = await t.request('/wallet/nothing-here', { method: 'DELETE' })
    const body = await json(res)
    expect(res.status).toBe(404)
    expect(body).toMatchObject({ error: 'not_found', request_id: expect.any(String) })
  })

  it('gives 405 with Allow for a route that takes other methods, saying how supabase-js asks for a GET', async () => {
    const student = await createUser(db.sql)
    const auth = { authorization: `Bearer ${student.token}` }
    const res = await t.request('/wallet/balance', { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{}' })
    expect(res.status).toBe(405)
    expect(res.headers.get('allow')).toBe('GET')
    expect(await json(res)).toMatchObject({
      error: 'method_not_allowed',
      message: "/wallet/balance takes GET, not POST; with supabase-js: functions.invoke('wallet/balance', { method: 'GET' })",
      request_id: expect.any(String),
    })
    const turn = await t.request('/chat/turns/0b9e1c52-3f7a-4a7e-9a55-6d1b0c8f1f00', { method: 'DELETE', headers: auth })
    expect(turn.status).toBe(405)
    expect(turn.headers.get('allow')).toContain('GET')
  })

  it('has a status for every error code', () => {
    for (const code of Object.values(ErrorCode)) expect(statusOf(code)).toBeGreaterThanOrEqual(400)
  })
})

describe('body limits', () => {
  it('refuses a body over the default limit with 413', async () => {
    const res = await app.request('/t/small', { method: 'POST', body: 'x'.repeat(1025), headers: { 'content-type': 'text/plain' } })
    const body = await json(res)
    expect(res.status).toBe(413)
    expect(body).toMatchObject({ error: 'payload_too_large', request_id: expect.any(String) })
  })

  it('refuses a chunked body (no Content-Length) over the limit with 413', async () => {
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 4; i++) controller.enqueue(new Uint8Array(512))
        controller.close()
      },
    })
    const res = await app.request('/t/small', { method: 'POST', body: stream, duplex: 'half' } as RequestInit)
    expect(res.status).toBe(413)
  })

  it('lets the upload route take more than the default, up to its own limit', async () => {
    const ok = await app.request('/t/admin/upload-curriculum', { method: 'POST', body: 'x'.repeat(4000) })
    expect(await json(ok)).toEqual({ size: 4000 })
    const tooBig = await app.request('/t/admin/upload-curriculum', { method: 'POST', body: 'x'.repeat(4097) })
    expect(tooBig.status).toBe(413)
  })
})
