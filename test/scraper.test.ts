// The scraper end to end against a fixture portal on loopback: discovery with pagination, real PDFs
// through pdf.js, the quality gate, SimHash near-duplicates, refused downloads, runs and listings.
import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { createTestApp, json, type TestApp } from './helpers/app.ts'
import { bearer } from './helpers/tokens.ts'
import { type Portal, startPortal } from './helpers/portal.ts'
import { apiKey } from '../functions-shared/lib/keys.ts'
import { LOCAL_JWT_SECRET } from '../functions-shared/config.ts'
import { SourceSchema } from '../functions-shared/sources-file.ts'
import { connectGuardNode, resolveHostNode } from '../scripts/lib/node-adapter.ts'
import { syncSource } from '../functions-shared/catalogue/sync.ts'
import { makePdf } from '../scripts/lib/pdf.ts'

let db: TestDatabase
let t: TestApp
let portal: Portal
let service: Record<string, string>

beforeAll(async () => {
  db = await createTestDatabase()
  portal = await startPortal()
  const source = (name: string) =>
    SourceSchema.parse({
      name,
      index_urls: [`${portal.url}/programmes/page1.html`],
      allowed_hosts: [new URL(portal.url).host],
      boilerplate: ['Document retiré'],
      rules: [
        { field: 'grade', from: 'url', pattern: '/fichiers/(\\d+AS)/' },
        { field: 'subject', from: 'url', pattern: '/fichiers/\\d+AS/([a-z-]+)/' },
        { field: 'category', from: 'text', pattern: '(manuel|كتاب)' },
        { field: 'major', from: 'context', pattern: 'Série ([A-Z])' },
      ],
    })
  t = createTestApp({
    sql: db.sql,
    env: { FETCH_ALLOW_LOOPBACK: 'true', RATE_LIMIT_ADMIN_PER_MINUTE: '1000', RATE_LIMIT_PUBLIC_PER_MINUTE: '1000' },
    deps: { sources: [source('fixture'), source('fixture-race')], resolveHost: resolveHostNode, connectGuard: connectGuardNode },
  })
  service = bearer(await apiKey(LOCAL_JWT_SECRET, 'service_role'))
})
afterAll(async () => {
  await portal?.close()
  await db?.close()
})

const get = async (path: string, headers: Record<string, string> = {}) => {
  const res = await t.request(path, { headers })
  return { status: res.status, body: await json(res) }
}

describe('POST /scraping/{source}/sync', () => {
  it('registers what the portal lists, with the expected counts', async () => {
    const res = await t.request('/scraping/fixture/sync', { method: 'POST', headers: service })
    const body = await json(res)
    expect(res.status, JSON.stringify(body)).toBe(200)
    // 9 PDF links (the duplicate listing on page 2 and the HTML link do not count; page 2 links back to page 1)
    expect(body).toMatchObject({ status: 'completed', found_count: 9, new_count: 3, duplicates: 2, quality_failed: 2, errors: 2, known: 0 })
    expect(portal.hits.get('/programmes/page1.html')).toBe(1)
    expect(portal.hits.has('/contact.html')).toBe(false)
  })

  it('stored the references with metadata from the rules, and a queued job for each new one', async () => {
    const refs = await get('/scraping/fixture/references?limit=50')
    expect(refs.body.total).toBe(5)
    const byPath = Object.fromEntries(refs.body.items.map((r: Record<string, any>) => [new URL(r.source_url).pathname, r]))
    expect(byPath['/fichiers/4AS/mathematiques/equations.pdf']).toMatchObject({
      status: 'discovered',
      grade: '4AS',
      subject: 'mathematiques',
      category: 'manuel',
      language: 'fr',
      title: 'Mathématiques 4AS — manuel',
      canonical_id: null,
    })
    expect(byPath['/fichiers/4AS/education-islamique/arkan.pdf']).toMatchObject({
      status: 'discovered',
      language: 'ar',
      category: 'كتاب',
      subject: 'education-islamique',
    })
    expect(byPath['/fichiers/5AS/physique/ondes.pdf']).toMatchObject({ status: 'discovered', grade: '5AS', subject: 'physique', major: 'D' })
    // the near-duplicate and the exact copy point at the first discovered
    expect(byPath['/fichiers/4AS/mathematiques/equations-v2.pdf']).toMatchObject({
      status: 'duplicate',
      canonical_id: byPath['/fichiers/4AS/mathematiques/equations.pdf'].id,
    })
    expect(byPath['/copies/arkan-copie.pdf']).toMatchObject({ status: 'duplicate', canonical_id: byPath['/fichiers/4AS/education-islamique/arkan.pdf'].id })
    expect(byPath['/fichiers/4AS/mathematiques/equations.pdf'].content_fingerprint).toMatch(/^-?\d+$/)

    const jobs = await db
      .sql`select r.source_url, j.status from public.ingestion_jobs j join public.curriculum_references r on r.id = j.reference_id order by 1`
    expect(jobs.map((j) => [new URL(j.source_url as string).pathname, j.status])).toEqual([
      ['/fichiers/4AS/education-islamique/arkan.pdf', 'queued'],
      ['/fichiers/4AS/mathematiques/equations.pdf', 'queued'],
      ['/fichiers/5AS/physique/ondes.pdf', 'queued'],
    ])
    const dupJobs = await db
      .sql`select count(*)::int as n from public.ingestion_jobs j join public.curriculum_references r on r.id = j.reference_id where r.status = 'duplicate'`
    expect(dupJobs[0]!.n).toBe(0)
  })

  it('wrote each quality failure to the ingestion audit with a reason naming the check, and inserted nothing', async () => {
    const rows = await db.sql`select source_url, error_message from public.ingestion_audit where to_status = 'rejected' order by source_url`
    expect(rows.map((r) => [new URL(r.source_url as string).pathname, r.error_message])).toEqual([
      ['/fichiers/court.pdf', expect.stringMatching(/^text too short \(\d+ chars below 200 minimum\)$/)],
      ['/fichiers/page-html.pdf', 'not a PDF (served as text/html; the body does not start with %PDF-)'],
    ])
    const [n] = await db.sql`select count(*)::int as n from public.curriculum_references where source_url like '%court.pdf' or source_url like '%page-html.pdf'`
    expect(n!.n).toBe(0)
  })

  it('never fetched the private address the portal redirected to', async () => {
    expect(portal.hits.get('/fichiers/deplace.pdf')).toBe(1)
    const lines = t.logs.lines.filter((l) => l.message === 'document skipped after an error')
    expect(lines.map((l) => l.kind).sort()).toEqual(['blocked', 'http'])
  })

  it('only touches last_checked_at for PDFs it already knows when it syncs again', async () => {
    const before = await db.sql`select id, last_checked_at from public.curriculum_references where source = 'fixture' order by id`
    const res = await t.request('/scraping/fixture/sync', { method: 'POST', headers: service })
    expect(await json(res)).toMatchObject({ found_count: 9, new_count: 0, duplicates: 0, known: 5, quality_failed: 2, errors: 2 })
    const after = await db.sql`select id, last_checked_at from public.curriculum_references where source = 'fixture' order by id`
    expect(after.map((r) => r.id)).toEqual(before.map((r) => r.id))
    expect(after.every((r, i) => new Date(r.last_checked_at as Date) >= new Date(before[i]!.last_checked_at as Date))).toBe(true)
  })

  it('discovers every PDF link with a source that has only a name and an index URL', async () => {
    const minimal = SourceSchema.parse({ name: 'fixture-minimal', index_urls: [`${portal.url}/programmes/page1.html`] })
    const result = await syncSource({ ctx: { deps: t.deps, requestId: 'minimal' }, input: minimal })
    expect(result).toMatchObject({ status: 'completed', found_count: 9, known: 5 })
  })

  it('answers 404 for an unknown source and needs admin credentials', async () => {
    expect((await t.request('/scraping/nowhere/sync', { method: 'POST', headers: service })).status).toBe(404)
    expect((await t.request('/scraping/fixture/sync', { method: 'POST' })).status).toBe(401)
  })
})

describe('two syncs at once', () => {
  it('of two sources listing the same documents never make two canonical references for one document', async () => {
    await db.sql`delete from public.ingestion_jobs`
    await db.sql`delete from public.curriculum_references`
    const ctx = { deps: { ...t.deps, sql: db.connect(4) }, requestId: 'race' }
    const source = t.deps.sources.find((s) => s.name === 'fixture-race')!
    // a second source over the same portal (a source syncs once at a time: test/scraper.runs.test.ts)
    const mirror = SourceSchema.parse({ ...source, name: 'fixture-race-mirror' })
    const [a, b] = await Promise.all([syncSource({ ctx, input: source }), syncSource({ ctx, input: mirror })])
    expect(a.new_count + b.new_count).toBe(3)
    const [canonical] = await db.sql`select count(*)::int as n from public.curriculum_references where status = 'discovered'`
    expect(canonical!.n).toBe(3)
  })
})

describe('listings', () => {
  it('lists sources, runs and references publicly, and everything for admins', async () => {
    expect((await get('/scraping/sources')).body).toEqual({ sources: ['fixture', 'fixture-race'], total: 2 })
    const runs = await get('/scraping/fixture/runs')
    expect(runs.body.total).toBe(2)
    expect(runs.body.items[0]).toMatchObject({ source: 'fixture', status: 'completed', found_count: 9, finished_at: expect.any(String) })
    const dups = await get('/scraping/fixture-race/references?status=duplicate')
    expect(dups.body.items.every((r: { status: string }) => r.status === 'duplicate')).toBe(true)
    expect((await get('/scraping/nowhere/runs')).status).toBe(404)
    expect((await get('/scraping/fixture/references?status=lost')).status).toBe(400)
    const all = await get('/admin/references?status=discovered', service)
    expect(all.body.items.length).toBe(all.body.total)
    expect((await get('/admin/scrape-runs', service)).body.total).toBe(5)
    expect((await get('/admin/scrape-runs')).status).toBe(401)
  })
})

describe('a listing with broken pages', () => {
  const withIndexes = (name: string, pages: string[]) =>
    SourceSchema.parse({ name, index_urls: pages.map((p) => `${portal.url}${p}`), allowed_hosts: [new URL(portal.url).host] })

  it('goes on with the listing pages it can read, and names the ones it cannot', async () => {
    const ctx = { deps: t.deps, requestId: 'broken-listing' }
    // a broken index URL first, then the portal's listing (two pages)
    const result = await syncSource({ ctx, input: withIndexes('broken-index', ['/programmes/retire.html', '/programmes/page1.html']) })
    expect(result).toMatchObject({ status: 'completed', found_count: 9 })
    expect(result.errors).toBeGreaterThanOrEqual(1)
    const [run] = await db.sql`select status, found_count, error_count, error_message from public.scrape_runs where id = ${result.run_id}`
    expect(run).toMatchObject({ status: 'completed', found_count: 9, error_count: result.errors })
    expect(run!.error_message).toMatch(/^1 listing page could not be read: http:\/\/127\.0\.0\.1:\d+\/programmes\/retire\.html: HTTP 404/)
  })

  it('fails the run when no listing page can be read', async () => {
    const ctx = { deps: t.deps, requestId: 'no-listing' }
    const result = await syncSource({ ctx, input: withIndexes('no-index', ['/programmes/retire.html', '/programmes/absent.html']) })
    expect(result).toMatchObject({ status: 'failed', found_count: 0, errors: 2 })
    const [run] = await db.sql`select status, error_message from public.scrape_runs where id = ${result.run_id}`
    expect(run).toMatchObject({ status: 'failed', error_message: expect.stringMatching(/^listing failed: HTTP 404/) })
  })
})

describe('two different books in one language', () => {
  it("are both registered and queued, not one taken for the other's duplicate", async () => {
    // nine demo lessons against nine others: every French text's common words (de, la, les...) outvoted
    // the rest when each occurrence voted, and the second book was registered as a duplicate, never ingested
    const lessons =
      (JSON.parse(readFileSync(new URL('../demo/curriculum.json', import.meta.url), 'utf8')) as { lessons: { language: string; pages: string[] }[] }).lessons
        .filter((l) => l.language === 'fr')
    const books = new Map([
      ['/livres/5AS/sciences/tome-1.pdf', await makePdf(lessons.slice(5, 11).flatMap((l) => l.pages))],
      ['/livres/5AS/sciences/tome-2.pdf', await makePdf(lessons.slice(11, 17).flatMap((l) => l.pages))],
    ])
    const server = createServer((req, res) => {
      const file = books.get(req.url!)
      if (file) return res.writeHead(200, { 'content-type': 'application/pdf' }).end(Buffer.from(file))
      if (req.url === '/livres/') {
        return res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end([...books.keys()].map((p) => `<a href="${p}">Sciences 5AS</a>`).join(''))
      }
      res.writeHead(404).end()
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
      const source = SourceSchema.parse({ name: 'books', index_urls: [`${url}/livres/`], defaults: { grade: '5AS', subject: 'sciences' } })
      const result = await syncSource({ ctx: { deps: t.deps, requestId: 'books' }, input: source })
      expect(result).toMatchObject({ status: 'completed', found_count: 2, new_count: 2, duplicates: 0 })
      const refs = await db
        .sql`select r.status, r.canonical_id, j.status as job from public.curriculum_references r left join public.ingestion_jobs j on j.reference_id = r.id where r.source = 'books'`
      expect(refs).toEqual([
        { status: 'discovered', canonical_id: null, job: 'queued' },
        { status: 'discovered', canonical_id: null, job: 'queued' },
      ])
    } finally {
      server.closeAllConnections()
      await new Promise((r) => server.close(r))
    }
  })
})

describe('a host that stops answering', () => {
  it('leaves its other links for the next run once three downloads in a row timed out, and says so', async () => {
    const { createServer } = await import('node:http')
    const requested: string[] = []
    const server = createServer((req, res) => {
      requested.push(req.url ?? '')
      if (req.url === '/liste.html') {
        return void res.writeHead(200, { 'content-type': 'text/html' }).end(
          Array.from({ length: 6 }, (_, i) => `<a href="/f/${i}.pdf">cours ${i}</a>`).join(''),
        )
      }
      // a PDF that never comes
      res.writeHead(200, { 'content-type': 'application/pdf' })
      res.write('%PDF-1.4\n')
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
    const host = `127.0.0.1:${(server.address() as { port: number }).port}`
    try {
      const app = createTestApp({
        sql: db.sql,
        env: { FETCH_ALLOW_LOOPBACK: 'true', FETCH_TIMEOUT_MS: '300' },
        deps: { resolveHost: resolveHostNode, connectGuard: connectGuardNode },
      })
      const source = SourceSchema.parse({ name: 'stalling', index_urls: [`http://${host}/liste.html`], allowed_hosts: [host] })
      const result = await syncSource({ ctx: { deps: app.deps, requestId: 'stalling' }, input: source })
      expect(result).toMatchObject({ status: 'completed', found_count: 6, new_count: 0, errors: 6 })
      // three downloads tried, the other three never asked for
      expect(requested.filter((u) => u.startsWith('/f/'))).toEqual(['/f/0.pdf', '/f/1.pdf', '/f/2.pdf'])
      const [run] = await db.sql`select error_message from public.scrape_runs where id = ${result.run_id}`
      expect(run!.error_message).toMatch(
        new RegExp(
          `^3 links could not be downloaded or read: http://${host}/f/0\\.pdf: [^;]+; http://${host}/f/1\\.pdf: [^;]+; http://${host}/f/2\\.pdf: [^;]+; 3 links of ${host} left for the next run after 3 downloads in a row timed out$`,
        ),
      )
    } finally {
      server.closeAllConnections()
      await new Promise((r) => server.close(r))
    }
  })
})
