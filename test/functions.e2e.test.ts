// Every function over real HTTP through the local gateway, once with the functions served by Node in
// the gateway's process and once with FUNCTIONS_RUNTIME=deno, where each runs in its own Deno process
// (supabase/functions/<name>/index.ts, as on Supabase) behind /functions/v1/<name>. The same requests
// get the same answers: auth, me, wallet, scraping, admin (jobs, uploads), curriculum, chat in JSON
// and SSE, docs and metrics. Settings reach the Deno processes as environment variables, as on Supabase.
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { testConfig } from './helpers/app.ts'
import { FR_LESSON, PHYSICS_LESSON, type Portal, startPortal } from './helpers/portal.ts'
import { events, readSse } from './helpers/sse.ts'
import { type Gateway, startGateway } from '../scripts/lib/gateway.ts'
import { makePdf } from '../scripts/lib/pdf.ts'
import { apiKey } from '../functions-shared/lib/keys.ts'
import { LOCAL_JWT_SECRET } from '../functions-shared/config.ts'
import { createLogRoot } from '../functions-shared/lib/logger.ts'

const RUNTIMES = ['node', 'deno'] as const

/** Polls until check returns a value (jobs finish in the functions' background, out of this process). */
async function until<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

describe.each(RUNTIMES)('the functions over HTTP (FUNCTIONS_RUNTIME=%s)', (runtime) => {
  let db: TestDatabase
  let portal: Portal
  let gateway: Gateway
  let dir: string
  let service: Record<string, string>
  const output: string[] = []

  beforeAll(async () => {
    db = await createTestDatabase()
    portal = await startPortal()
    dir = await mkdtemp(join(tmpdir(), 'ct-functions-'))
    const sources = join(dir, 'sources.json')
    await writeFile(
      sources,
      JSON.stringify({
        sources: [{
          name: 'fixture',
          index_urls: [`${portal.url}/programmes/page1.html`],
          allowed_hosts: [new URL(portal.url).host],
          rules: [
            { field: 'grade', from: 'url', pattern: '/fichiers/(\\d+AS)/' },
            { field: 'subject', from: 'url', pattern: '/fichiers/\\d+AS/([a-z-]+)/' },
          ],
        }],
      }),
    )
    const config = testConfig({
      FUNCTIONS_RUNTIME: runtime,
      LOG_LEVEL: 'info',
      AUTH_BCRYPT_COST: '4',
      EXPIRY_INTERVAL_SECONDS: '0',
      FETCH_ALLOW_LOOPBACK: 'true',
      SCRAPER_SOURCES_FILE: sources,
      RATE_LIMIT_ADMIN_PER_MINUTE: '1000',
      RATE_LIMIT_PUBLIC_PER_MINUTE: '1000',
      RATE_LIMIT_UPLOAD_PER_MINUTE: '1000',
      // with an app's own function beside the service's (test/app-functions.test.ts has the rest)
      FUNCTIONS_DIR: 'test/fixtures/app-project/supabase/functions',
    })
    gateway = await startGateway({
      config,
      sql: db.sql,
      port: 0,
      databaseUrl: db.url,
      embedded: db.kind === 'pglite',
      deps: { logs: createLogRoot({ level: 'silent' }) },
      onFunctionOutput: (_name, line) => output.push(line),
    })
    service = { Authorization: `Bearer ${await apiKey(LOCAL_JWT_SECRET, 'service_role')}` }
  }, 180_000)
  afterAll(async () => {
    await gateway?.close(2000)
    await portal?.close()
    await db?.close()
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${gateway.url}/functions/v1${path}`, {
      method,
      headers: { ...(body === undefined || body instanceof FormData ? {} : { 'content-type': 'application/json' }), ...headers },
      ...(body === undefined ? {} : { body: body instanceof FormData ? body : JSON.stringify(body) }),
    })
    const text = await res.text()
    let json: Record<string, any>
    try {
      json = JSON.parse(text) as Record<string, any>
    } catch {
      json = { text }
    }
    return { status: res.status, headers: res.headers, body: json }
  }
  let student: { token: string; email: string }

  it("serves an app's own function beside the service's, whichever the runtime of those", async () => {
    const anon = { Authorization: `Bearer ${await apiKey(LOCAL_JWT_SECRET, 'anon')}` }
    expect(await call('POST', '/hello', { name: runtime }, anon)).toMatchObject({ status: 200, body: { message: `Salam, ${runtime}`, path: '/hello' } })
    expect((await call('GET', '/hello')).status).toBe(401)
  })

  it('answers /health with a reachable database and echoes the request id', async () => {
    const res = await call('GET', '/health', undefined, { 'x-request-id': `e2e-${runtime}` })
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    expect(res.body).toMatchObject({ status: 'ok', database: { reachable: true } })
    expect(res.headers.get('x-request-id')).toBe(`e2e-${runtime}`)
    if (runtime === 'deno') expect(output.join('\n')).toContain(`"request_id":"e2e-${runtime}"`) // logged by the Deno process
  })

  it('answers an unknown function and an unknown path with a JSON 404 that carries the request id', async () => {
    for (const path of ['/nowhere', '/health/nowhere']) {
      const res = await call('GET', path)
      expect(res.status).toBe(404)
      expect(res.body).toMatchObject({ error: 'not_found', request_id: res.headers.get('x-request-id') })
    }
  })

  it('signs a student up and in (auth), and reads and renames them (me)', async () => {
    const email = `e2e-${runtime}@example.mr`
    const up = await call('POST', '/auth/signup', { email, password: 'secret-123', full_name: 'Mariem' })
    expect(up.status, JSON.stringify(up.body)).toBe(201)
    const signIn = await call('POST', '/auth/signin', { email, password: 'secret-123' })
    expect(signIn.status, JSON.stringify(signIn.body)).toBe(200)
    student = { token: signIn.body.data.access_token as string, email }
    const auth = { Authorization: `Bearer ${student.token}` }
    expect((await call('GET', '/me', undefined, auth)).body).toMatchObject({ email, full_name: 'Mariem', role: 'student' })
    const renamed = await call('PATCH', '/me', { full_name: 'Mariem Mint Ahmed' }, auth)
    expect(renamed.status).toBe(200)
    expect(renamed.body).toMatchObject({ full_name: 'Mariem Mint Ahmed' })
    const anonymous = await call('GET', '/me')
    expect(anonymous.status).toBe(401)
    expect(anonymous.body).toMatchObject({ error: 'unauthorized', request_id: anonymous.headers.get('x-request-id') })
  })

  it('shows the welcome bonus, takes a top-up and lists it (wallet)', async () => {
    const auth = { Authorization: `Bearer ${student.token}` }
    expect((await call('GET', '/wallet/balance', undefined, auth)).body).toMatchObject({ token_balance: 50 })
    const me = await call('GET', '/me', undefined, auth)
    const topup = await call('POST', '/wallet/topup', {
      user_id: me.body.id,
      tokens: 100,
      amount: 250,
      currency: 'MRU',
      payment_method: 'masrvi',
      reference: `E2E-${runtime}`,
    }, service)
    expect(topup.status, JSON.stringify(topup.body)).toBe(201)
    expect((await call('GET', '/wallet/balance', undefined, auth)).body).toMatchObject({ token_balance: 150 })
    const ledger = await call('GET', '/wallet/ledger', undefined, auth)
    expect(ledger.body.items.map((e: { reason: string }) => e.reason)).toEqual(['topup', 'welcome_bonus'])
  })

  it('syncs the portal (scraping) and ingests what it queued (admin jobs)', async () => {
    const sync = await call('POST', '/scraping/fixture/sync', undefined, service)
    expect(sync.status, JSON.stringify(sync.body)).toBe(200)
    expect(sync.body).toMatchObject({ status: 'completed', new_count: 3 })
    expect((await call('GET', '/admin/jobs?status=queued', undefined, service)).body.total).toBe(3)
    for (let i = 0; i < 3; i++) expect((await call('POST', '/admin/jobs/dispatch', undefined, service)).body.status).toBe('dispatched')
    const ready = await until('three ready jobs', async () => {
      const r = await call('GET', '/admin/jobs?status=ready', undefined, service)
      return r.body.total === 3 ? r.body : undefined
    })
    for (const job of ready.items) expect(job.chunks_created).toBeGreaterThan(0)
    expect((await call('GET', '/admin/stats', undefined, service)).status).toBe(200)
  })

  it('streams an uploaded PDF through to a ready document (admin upload)', async () => {
    const form = new FormData()
    for (const [k, v] of Object.entries({ grade: '6AS', subject: 'physique', language: 'fr', pdf_source: `https://portal.example.mr/${runtime}.pdf` })) {
      form.set(k, v)
    }
    form.set('file', new File([Buffer.from(await makePdf([PHYSICS_LESSON, FR_LESSON]))], 'lecon.pdf', { type: 'application/pdf' }))
    const res = await call('POST', '/admin/upload-curriculum', form, service)
    expect(res.status, JSON.stringify(res.body)).toBe(201)
    expect(res.body).toMatchObject({ status: 'ready', namespace: 'grade-6as-physique', pages: 2 })
  })

  it('lists the ready textbooks in the public catalogue (curriculum)', async () => {
    expect((await call('GET', '/curriculum/subjects')).body).toEqual({ subjects: ['education-islamique', 'mathematiques', 'physique'], total: 3 })
    expect((await call('GET', '/curriculum/textbooks?grade=4AS')).body.textbooks).toHaveLength(2)
  })

  it('answers a question in JSON from the ingested lesson and bills it (chat)', async () => {
    const auth = { Authorization: `Bearer ${student.token}` }
    const res = await call('POST', '/chat', { message: "Comment isoler l'inconnue dans une équation ?", grade: '4AS', subject: 'mathematiques' }, auth)
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    expect(res.body).toMatchObject({ path: 'answer', outcome: 'answered', subject: 'mathematiques', request_id: res.headers.get('x-request-id') })
    expect(res.body.sources[0].source_url).toContain('/fichiers/4AS/mathematiques/equations.pdf')
    expect(res.body.usage.token_balance).toBe(150 - res.body.usage.charged)
    expect((await call('GET', '/wallet/balance', undefined, auth)).body).toMatchObject({ token_balance: res.body.usage.token_balance })
  })

  it('streams a turn as SSE through the gateway, event by event (chat)', async () => {
    const res = await fetch(`${gateway.url}/functions/v1/chat`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${student.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: "Quelle est la vitesse du son dans l'eau ?", grade: '5AS', subject: 'physique', stream: true }),
    })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8')
    const items = events(await readSse(res).rest())
    expect(items[0]!.event).toBe('meta')
    expect(items.at(-1)).toMatchObject({ event: 'done', data: { outcome: 'answered' } })
    expect(items.filter((e) => e.event === 'delta').map((e) => e.data.text).join('')).toContain('1500 mètres par seconde')
  })

  it('serves the API reference and its OpenAPI document (docs)', async () => {
    const page = await fetch(`${gateway.url}/functions/v1/docs`)
    expect(page.status).toBe(200)
    expect(page.headers.get('content-type')).toMatch(/^text\/html/)
    const doc = await call('GET', '/docs/openapi.json')
    expect(doc.body.openapi).toBe('3.1.0')
    expect(Object.keys(doc.body.paths)).toEqual(expect.arrayContaining(['/chat', '/wallet/balance', '/admin/jobs']))
  })

  it('serves Prometheus metrics of the process that serves /metrics (metrics)', async () => {
    await call('GET', '/metrics', undefined, service)
    const res = await fetch(`${gateway.url}/functions/v1/metrics`, { headers: service })
    expect(res.status).toBe(200)
    const text = await res.text()
    // (the Node gateway's routes carry its /functions/v1 base; a function's are its own paths)
    expect(text).toMatch(/http_requests_total\{method="GET",route="(\/functions\/v1)?\/metrics",status="200"\} [1-9]/)
    // With Node every function shares one registry; with Deno each process counts only its own
    // requests, as each Supabase Edge Function is its own isolate (see docs: /metrics on Supabase).
    const chat = /route="(\/functions\/v1)?\/chat"/
    if (runtime === 'node') expect(text).toMatch(chat)
    else expect(text).not.toMatch(chat)
  })

  if (runtime === 'deno') {
    it('starts a function again on the next request after its process died', async () => {
      const pid = gateway.functions!.pids().health!
      process.kill(pid, 'SIGKILL')
      await until('the process to be gone', async () => (gateway.functions!.pids().health === pid ? undefined : true))
      const res = await call('GET', '/health')
      expect(res.status).toBe(200)
      expect(gateway.functions!.pids().health).not.toBe(pid)
    })
  }
})
