import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { createTestApp, json, type TestApp } from './helpers/app.ts'
import { readAssetNode } from '../scripts/lib/node-adapter.ts'

let db: TestDatabase
let t: TestApp
beforeAll(async () => {
  db = await createTestDatabase()
  t = createTestApp({ sql: db.sql })
})
afterAll(async () => db?.close())

/** Hono's `/x/:id` as OpenAPI's `/x/{id}`. */
const openApiPath = (p: string) => p.replace(/:([A-Za-z0-9_]+)/g, '{$1}')

describe('GET /docs/openapi.json', () => {
  it('is an OpenAPI 3.1 document listing every route the app serves, and nothing else', async () => {
    const res = await t.request('/docs/openapi.json')
    const doc = await json(res)
    expect(res.status).toBe(200)
    expect(doc.openapi).toBe('3.1.0')
    expect(doc.info).toMatchObject({ title: 'curriculum-tutor', version: '0.1.0' })
    const served = new Set(
      t.app.routes.filter((r) => r.method !== 'ALL' && !r.path.endsWith('*')).map((r) => `${r.method.toLowerCase()} ${openApiPath(r.path)}`),
    )
    const documented = new Set(
      Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m} ${p}`)),
    )
    expect([...documented].sort()).toEqual([...served].sort())
    expect(served.has('get /health')).toBe(true)
  })

  it('is written out once and the same text served to every request (85 KB of JSON made for each was a millisecond of the one thread)', async () => {
    const app = createTestApp({ sql: db.sql })
    const stringify = vi.spyOn(JSON, 'stringify')
    try {
      const texts: string[] = []
      for (let i = 0; i < 3; i++) {
        const res = await app.request('/docs/openapi.json')
        expect(res.status).toBe(200)
        expect(res.headers.get('content-type')).toContain('application/json')
        texts.push(await res.text())
      }
      expect(new Set(texts).size).toBe(1)
      expect(JSON.parse(texts[0]!).openapi).toBe('3.1.0')
      const documents = stringify.mock.calls.filter(([value]) => (value as { openapi?: unknown } | null)?.openapi === '3.1.0')
      expect(documents).toHaveLength(1)
    } finally {
      stringify.mockRestore()
    }
  })

  it('describes security schemes and error bodies', async () => {
    const doc = await json(await t.request('/docs/openapi.json'))
    expect(Object.keys(doc.components.securitySchemes).sort()).toEqual(['adminKey', 'bearerAuth'])
    expect(doc.paths['/metrics'].get.security).toEqual([{ bearerAuth: [] }, { adminKey: [] }])
    expect(doc.paths['/metrics'].get.responses['429'].content['application/json'].schema.$ref).toBe('#/components/schemas/RateLimited')
    expect(doc.components.schemas.Error.required.sort()).toEqual(['error', 'message', 'request_id'])
  })
})

describe('GET /docs', () => {
  it('serves the interactive reference page and its assets from the installed package, offline', async () => {
    const page = await t.request('/docs')
    const html = await page.text()
    expect(page.status).toBe(200)
    expect(page.headers.get('content-type')).toContain('text/html')
    expect(html).toContain('docs/openapi.json')
    expect(html).not.toMatch(/https?:\/\/(?!127\.0\.0\.1)/) // no CDN
    for (const [asset, type] of [['swagger-ui-bundle.js', 'javascript'], ['swagger-ui.css', 'text/css']] as const) {
      expect(html).toContain(`docs/assets/${asset}`)
      const res = await t.request(`/docs/assets/${asset}`)
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toContain(type)
      expect((await res.arrayBuffer()).byteLength).toBeGreaterThan(10_000)
    }
  })

  it('reads each asset once and sends that copy with every answer (its length said), so answers waiting to be read take no more memory each', async () => {
    let reads = 0
    const counted = createTestApp({ sql: db.sql, deps: { readAsset: async (pkg, file) => (reads++, readAssetNode(pkg, file)) } })
    const answers = await Promise.all([1, 2, 3].map(() => counted.request('/docs/assets/swagger-ui-bundle.js')))
    const file = (await readAssetNode('swagger-ui-dist', 'swagger-ui-bundle.js'))!
    for (const res of answers) {
      expect(res.headers.get('content-length')).toBe(String(file.byteLength))
      expect(new Uint8Array(await res.arrayBuffer())).toEqual(file)
    }
    // the same bytes, not a copy of them per answer
    const [a, b] = await Promise.all(
      [1, 2].map(async () => (await (await counted.request('/docs/assets/swagger-ui-bundle.js')).body!.getReader().read()).value!),
    )
    expect(a!.buffer).toBe(b!.buffer)
    expect(reads).toBe(1)
  })

  it("redirects /docs/ to /docs, where the page's relative links resolve, with a Location right behind any base path", async () => {
    const res = await t.request('/docs/?x=1')
    expect(res.status).toBe(301)
    expect(res.headers.get('location')).toBe('../docs?x=1')
    expect(new URL(res.headers.get('location')!, 'http://127.0.0.1:54321/functions/v1/docs/?x=1').href).toBe('http://127.0.0.1:54321/functions/v1/docs?x=1')
  })

  it('serves no other file', async () => {
    for (const path of ['/docs/assets/package.json', '/docs/assets/..%2F..%2Fpackage.json', '/docs/assets/%2e%2e']) {
      const res = await t.request(path)
      // (URL parsing turns /docs/assets/%2e%2e into /docs/, which is sent to the page)
      if (res.status === 301) expect(res.headers.get('location')).toBe('../docs')
      else expect([400, 404]).toContain(res.status)
      expect(res.headers.get('content-type') ?? '').not.toMatch(/javascript|css|octet/)
    }
  })
})
