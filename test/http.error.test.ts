import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { OpenAPIHono, createRoute, z } from '@hono/zod-openapi'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { createTestApp, json, type TestApp } from './helpers/app.ts'
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
    const res = await app.request('/t/echo', { method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': 'val-1' }, body: JSON.stringify({ name: 'a', grade: 9 }) })
    const body = await json(res)
    expect(res.status, JSON.stringify(body)).toBe(400)
    expect(body.error).toBe('validation_failed')
    expect(body.request_id).toBe('val-1')
    expect(body.fields.map((f: { field: string }) => f.field).sort()).toEqual(['grade', 'name'])
  })

  it('gives 400 for an out-of-range query parameter', async () => {
    const res = await app.request('/t/echo?limit=1000000000', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'ab', grade: 2 }) })
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
