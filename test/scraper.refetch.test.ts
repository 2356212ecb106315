// A PDF that changes at an address already registered is fetched again: a sync checks a known reference's
// file once REFETCH_AFTER_SECONDS have passed, as a conditional request with the ETag and Last-Modified
// the portal gave; a file whose text changed becomes a new ingestion of the same reference, whose document
// serves the old version until the new one replaces it in one transaction.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createHash } from 'node:crypto'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { createTestApp, type TestApp } from './helpers/app.ts'
import { FR_LESSON, PHYSICS_LESSON } from './helpers/portal.ts'
import { type Source, SourceSchema } from '../functions-shared/sources-file.ts'
import { type SyncResult, syncSource } from '../functions-shared/catalogue/sync.ts'
import { claimNextJob, processJob } from '../functions-shared/ingestion/pipeline.ts'
import { makePdf } from '../scripts/lib/pdf.ts'
import { connectGuardNode, resolveHostNode } from '../scripts/lib/node-adapter.ts'

/** What the portal serves at /<name>/lesson.pdf: its bytes and validators, or a page that is not a PDF. */
interface Served {
  body: Uint8Array | string
  etag?: string
  lastModified?: string
  /** answer 304 to a request whose If-None-Match is this file's ETag (a server that honours it) */
  conditional?: boolean
}

let db: TestDatabase
let server: Server
let base: string
const served = new Map<string, Served>()
const requests: { path: string; headers: IncomingHttpHeaders }[] = []

// a database per test: each portal serves the same lessons, which in one database would be duplicates
beforeEach(async () => {
  db = await createTestDatabase()
})
afterEach(async () => db?.close())

beforeAll(async () => {
  server = createServer((req, res) => {
    const path = new URL(req.url!, 'http://portal').pathname
    requests.push({ path, headers: req.headers })
    const [, name, file] = path.split('/')
    if (file === 'index.html') {
      return res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(
        `<!doctype html><html><body><ul><li><a href="lesson.pdf">Mathématiques 4AS</a></li></ul></body></html>`,
      )
    }
    const s = served.get(name!)
    if (!s || file !== 'lesson.pdf') return res.writeHead(404).end()
    const validators = { ...(s.etag ? { etag: s.etag } : {}), ...(s.lastModified ? { 'last-modified': s.lastModified } : {}) }
    if (s.conditional && s.etag && req.headers['if-none-match'] === s.etag) return res.writeHead(304, validators).end()
    if (typeof s.body === 'string') return res.writeHead(200, { 'content-type': 'text/html', ...validators }).end(s.body)
    res.writeHead(200, { 'content-type': 'application/pdf', ...validators }).end(s.body)
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(async () => {
  server?.closeAllConnections()
  server?.close()
})

function appFor(refetchAfter: number): TestApp {
  return createTestApp({
    sql: db.sql,
    env: { FETCH_ALLOW_LOOPBACK: 'true', REFETCH_AFTER_SECONDS: String(refetchAfter), LOG_LEVEL: 'warn' },
    deps: { resolveHost: resolveHostNode, connectGuard: connectGuardNode, sources: [...served.keys()].map(sourceOf) },
  })
}
const sourceOf = (name: string): Source =>
  SourceSchema.parse({
    name,
    index_urls: [`${base}/${name}/index.html`],
    allowed_hosts: [new URL(base).host],
    defaults: { grade: '4AS', subject: 'mathematiques' },
  })
const sync = (t: TestApp, name: string): Promise<SyncResult> => syncSource({ ctx: { deps: t.deps, requestId: `refetch-${name}` }, input: sourceOf(name) })

/** Runs every queued job to its end. */
async function ingestAll(t: TestApp): Promise<void> {
  for (let job = await claimNextJob(t.deps); job; job = await claimNextJob(t.deps)) await processJob(t.deps, job, `job-${job.id}`)
}
const referenceOf = async (name: string) =>
  (await db.sql`select id, status, content_sha256, etag, last_modified, fetched_at from public.curriculum_references where source = ${name}`)[0]!
const chunkText = async (referenceId: string) =>
  (await db.sql<
    { content: string }[]
  >`select c.content from public.document_chunks c join public.documents d on d.id = c.file_id where d.reference_id = ${referenceId} order by c.page_number, c.chunk_index`)
    .map((r) => r.content)
    .join(' ')
const pdfRequests = (name: string) => requests.filter((r) => r.path === `/${name}/lesson.pdf`)
const V1 = FR_LESSON
const V2 = `${FR_LESSON.replace('Leçon 3', 'Leçon 4')} Remarque : une équation du premier degré a au plus une solution, sauf si elle se réduit à 0 = 0.`

describe("a known reference's file, checked again at its address", () => {
  it('sends the validators back, and changes nothing on a 304', async () => {
    served.set('etag', { body: await makePdf([V1]), etag: '"v1"', lastModified: 'Tue, 01 Sep 2026 08:00:00 GMT', conditional: true })
    const t = appFor(0)
    expect(await sync(t, 'etag')).toMatchObject({ new_count: 1, known: 0, changed: 0 })
    await ingestAll(t)
    const before = await referenceOf('etag')
    expect(before).toMatchObject({ status: 'ready', etag: '"v1"', last_modified: 'Tue, 01 Sep 2026 08:00:00 GMT' })
    expect(before.content_sha256).toMatch(/^[0-9a-f]{64}$/)
    expect(await sync(t, 'etag')).toMatchObject({ new_count: 0, known: 1, changed: 0 })
    const check = pdfRequests('etag').at(-1)!
    expect(check.headers).toMatchObject({ 'if-none-match': '"v1"', 'if-modified-since': 'Tue, 01 Sep 2026 08:00:00 GMT' })
    const after = await referenceOf('etag')
    expect(after.fetched_at.getTime()).toBeGreaterThanOrEqual(before.fetched_at.getTime())
    expect(await db.sql`select 1 from public.ingestion_jobs j join public.curriculum_references r on r.id = j.reference_id where r.source = 'etag'`)
      .toHaveLength(1)
  })

  it('ingests a changed file again as the same reference: the old text serves until the new one replaces it', async () => {
    served.set('changed', { body: await makePdf([V1]), etag: '"a"', conditional: true })
    const t = appFor(0)
    await sync(t, 'changed')
    await ingestAll(t)
    const ref = await referenceOf('changed')
    const [doc] = await db.sql`select id from public.documents where reference_id = ${ref.id}`
    expect(await chunkText(ref.id)).toContain('Leçon 3')
    served.set('changed', { body: await makePdf([V2]), etag: '"b"', conditional: true })
    const result = await sync(t, 'changed')
    expect(result).toMatchObject({ new_count: 0, duplicates: 0, changed: 1, known: 0 })
    const [run] = await db.sql`select changed_count from public.scrape_runs where id = ${result.run_id}`
    expect(run!.changed_count).toBe(1)
    // queued for the same reference, saying why; until it runs, students are served the version there is
    const [job] = await db.sql`select j.id, j.status from public.ingestion_jobs j where j.reference_id = ${ref.id} order by j.seq desc limit 1`
    expect(job!.status).toBe('queued')
    const [audit] = await db.sql`select details from public.ingestion_audit where job_id = ${job!.id} and from_status is null`
    expect(audit!.details).toMatchObject({
      trigger: 'file changed at its address',
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      previous_sha256: ref.content_sha256,
    })
    expect(await chunkText(ref.id)).toContain('Leçon 3')
    await ingestAll(t)
    const text = await chunkText(ref.id)
    expect(text).toContain('Leçon 4')
    expect(text).toContain('au plus une solution')
    expect(text).not.toContain('Leçon 3')
    expect(await db.sql`select id from public.documents where reference_id = ${ref.id}`).toEqual([{ id: doc!.id }])
    expect(
      await db.sql`select count(*)::int as n from public.vectors v where v.file_id = ${
        doc!.id
      } and not exists (select 1 from public.document_chunks c where c.id = v.id)`,
    ).toEqual([{ n: 0 }])
    expect(await referenceOf('changed')).toMatchObject({ id: ref.id, status: 'ready', etag: '"b"' })
    // and the next check finds it current
    expect(await sync(t, 'changed')).toMatchObject({ changed: 0, known: 1 })
  })

  it('compares the bytes where the server has no validators, and the text where only the bytes changed', async () => {
    served.set('plain', { body: await makePdf([PHYSICS_LESSON]) })
    const t = appFor(0)
    await sync(t, 'plain')
    await ingestAll(t)
    expect(await sync(t, 'plain')).toMatchObject({ known: 1, changed: 0 })
    expect(pdfRequests('plain').at(-1)!.headers['if-none-match']).toBeUndefined()
    // saved again with a new title: other bytes, the same lesson
    const resaved = await makePdf([PHYSICS_LESSON], { title: 'Ondes (édition corrigée)' })
    served.set('plain', { body: resaved })
    expect(await sync(t, 'plain')).toMatchObject({ known: 1, changed: 0 })
    const ref = await referenceOf('plain')
    expect(ref.content_sha256).toBe(createHash('sha256').update(resaved).digest('hex'))
    expect(await db.sql`select 1 from public.ingestion_jobs where reference_id = ${ref.id}`).toHaveLength(1)
  })

  it('keeps the stored version when the address now serves a page that is not a PDF', async () => {
    served.set('broken', { body: await makePdf([V1]) })
    const t = appFor(0)
    await sync(t, 'broken')
    await ingestAll(t)
    const ref = await referenceOf('broken')
    served.set('broken', { body: '<html><body>Maintenance</body></html>' })
    const result = await sync(t, 'broken')
    expect(result).toMatchObject({ quality_failed: 1, changed: 0 })
    const [run] = await db.sql`select error_message from public.scrape_runs where id = ${result.run_id}`
    expect(run!.error_message).toContain('no longer a PDF')
    expect(await referenceOf('broken')).toMatchObject({ status: 'ready', content_sha256: ref.content_sha256 })
    expect(await chunkText(ref.id)).toContain('Leçon 3')
  })

  it('does not download a known file again before REFETCH_AFTER_SECONDS have passed', async () => {
    served.set('fresh', { body: await makePdf([V1]), etag: '"f"' })
    const t = appFor(86_400)
    await sync(t, 'fresh')
    const downloads = pdfRequests('fresh').length
    served.set('fresh', { body: await makePdf([V2]), etag: '"g"' })
    expect(await sync(t, 'fresh')).toMatchObject({ known: 1, changed: 0 })
    expect(pdfRequests('fresh')).toHaveLength(downloads)
    // a day later (its last download recorded as a day old), the change is found
    await db.sql`update public.curriculum_references set fetched_at = now() - interval '1 day 1 second' where source = 'fresh'`
    expect(await sync(t, 'fresh')).toMatchObject({ changed: 1 })
  })
})
