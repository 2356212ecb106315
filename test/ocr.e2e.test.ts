// Scanned lessons from the portal to cited answers: the scraper recognizes a scanned French and a
// scanned Arabic lesson (no text layer at all), the ingestion reads them page by page with progress,
// students' paraphrased questions are answered from the right page. Where no recognizer runs (an Edge
// Function), such a job waits in the queue for a Node worker; OCR_MODE never refuses scans.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { createTestApp, json, type TestApp } from './helpers/app.ts'
import { bearer } from './helpers/tokens.ts'
import { createUser } from './helpers/users.ts'
import { SCAN_AR, SCAN_FR } from './helpers/scans.ts'
import { apiKey } from '../functions-shared/lib/keys.ts'
import { LOCAL_JWT_SECRET } from '../functions-shared/config.ts'
import { SourceSchema } from '../functions-shared/sources-file.ts'
import type { OcrEngine } from '../functions-shared/pdf/read.ts'
import { resolveHostNode } from '../scripts/lib/node-adapter.ts'
import { createNodeOcr } from '../scripts/lib/ocr.ts'
import { makePdf, makeScannedPdf } from '../scripts/lib/pdf.ts'
import { jobProgress } from '../scripts/lib/job-progress.ts'

let db: TestDatabase
let server: Server
let base: string
let engine: OcrEngine
let node: TestApp // a Node process: it recognizes
let edge: TestApp // an Edge Function: it cannot
let service: Record<string, string>

const source = (name: string, listing: string) =>
  SourceSchema.parse({
    name,
    index_urls: [`${base}/${listing}`],
    rules: [
      { field: 'grade', from: 'url', pattern: '/fichiers/(\\d+AS)/' },
      { field: 'subject', from: 'url', pattern: '/fichiers/\\d+AS/([a-z-]+)/' },
    ],
  })

beforeAll(async () => {
  db = await createTestDatabase()
  const files = new Map<string, Uint8Array>([
    ['/fichiers/3AS/sciences-naturelles/photosynthese.pdf', await makeScannedPdf(SCAN_FR)],
    ['/fichiers/3AS/geographie/nahr-senegal.pdf', await makeScannedPdf(SCAN_AR, { arabic: true })],
  ])
  files.set('/fichiers/3AS/sciences-naturelles/respiration.pdf', await makeScannedPdf([SCAN_FR[1]!, SCAN_FR[0]!]))
  // a blank page before the lesson: printed on nothing (a typeset PDF), or a white sheet through the scanner
  files.set('/fichiers/3AS/physique/mesures.pdf', await makePdf(['', BLANK_PAGE_LESSON]))
  files.set('/fichiers/3AS/physique/mesures-scan.pdf', await makeScannedPdf(['', BLANK_PAGE_SCAN]))
  // the same scan at another address (a mirror the Edge Function's sync finds)
  files.set('/fichiers/3AS/sciences-naturelles/copie.pdf', files.get('/fichiers/3AS/sciences-naturelles/photosynthese.pdf')!)
  const listings: Record<string, string[]> = {
    'scans.html': ['/fichiers/3AS/sciences-naturelles/photosynthese.pdf', '/fichiers/3AS/geographie/nahr-senegal.pdf'],
    'edge.html': ['/fichiers/3AS/sciences-naturelles/copie.pdf'],
    'sample.html': ['/fichiers/3AS/sciences-naturelles/respiration.pdf'],
    'blank.html': ['/fichiers/3AS/physique/mesures.pdf', '/fichiers/3AS/physique/mesures-scan.pdf'],
  }
  server = createServer((req, res) => {
    const path = new URL(req.url!, 'http://portal').pathname
    const listing = listings[path.slice(1)]
    if (listing) {
      return res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(
        `<!doctype html><ul>${listing.map((l) => `<li><a href="${l}">Leçon</a></li>`).join('')}</ul>`,
      )
    }
    const file = files.get(path)
    if (file) return res.writeHead(200, { 'content-type': 'application/pdf' }).end(Buffer.from(file))
    res.writeHead(404).end()
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  engine = createNodeOcr({ concurrency: 1, dpi: 200, pageDeadlineMs: 60_000, idleMs: 0 })
  const env = { FETCH_ALLOW_LOOPBACK: 'true', RATE_LIMIT_ADMIN_PER_MINUTE: '1000', RATE_LIMIT_PUBLIC_PER_MINUTE: '1000', RATE_LIMIT_CHAT_PER_MINUTE: '1000' }
  const sources = [source('scans', 'scans.html'), source('edge', 'edge.html')]
  node = createTestApp({ sql: db.sql, env, deps: { sources, resolveHost: resolveHostNode, ocr: engine } })
  edge = createTestApp({ sql: db.sql, env, deps: { sources, resolveHost: resolveHostNode } })
  service = bearer(await apiKey(LOCAL_JWT_SECRET, 'service_role'))
})
afterAll(async () => {
  await node?.deps.background.idle()
  await edge?.deps.background.idle()
  await engine?.close()
  await new Promise((r) => server?.close(r))
  await db?.close()
})

const post = async (t: TestApp, path: string, body?: unknown, headers = service) => {
  const res = await t.request(path, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  return { status: res.status, body: await json(res) }
}
const get = async (t: TestApp, path: string) => json(await t.request(path, { headers: service }))
async function dispatchAll(t: TestApp) {
  const out: string[] = []
  for (;;) {
    const r = await post(t, '/admin/jobs/dispatch')
    out.push(r.body.status)
    if (r.body.status === 'idle') break
    await t.deps.background.idle()
  }
  return out
}
const referenceOf = async (file: string) =>
  (await db.sql`select id, status, language from public.curriculum_references where pdf_source like ${`%${file}`}`)[0]!

describe('a scanned French and a scanned Arabic lesson, portal to cited answers', () => {
  it("the scraper recognizes the scans, judges them by the recognizer's confidence and queues them for a worker that can OCR", async () => {
    const sync = await post(node, '/scraping/scans/sync')
    expect(sync.body).toMatchObject({ status: 'completed', found_count: 2, new_count: 2, quality_failed: 0 })
    const jobs = await db.sql`select needs_ocr from public.ingestion_jobs`
    expect(jobs.map((j) => j.needs_ocr)).toEqual([true, true])
    expect((await referenceOf('nahr-senegal.pdf')).language).toBe('ar')
    expect((await referenceOf('photosynthese.pdf')).language).toBe('fr')
    expect(await node.deps.metrics.registry.getSingleMetricAsString('ingestion_ocr_pages_total')).toContain('ingestion_ocr_pages_total{outcome="used"} 4')
  })

  it("an Edge Function (no recognizer) leaves those jobs queued; the Node process ingests them, showing pages read and OCR'd", async () => {
    expect(await dispatchAll(edge)).toEqual(['idle'])
    expect(await dispatchAll(node)).toEqual(['dispatched', 'dispatched', 'idle'])
    const { items } = await get(node, '/admin/jobs')
    expect(items.map((j: Record<string, any>) => j.status)).toEqual(['ready', 'ready'])
    for (const job of items) {
      expect(job.progress).toEqual({ pages_done: 2, pages_total: 2, pages_ocr: 2 })
      const detail = await get(node, `/admin/jobs/${job.id}`)
      const tokenizing = detail.audit.find((a: Record<string, any>) => a.to_status === 'tokenizing')
      expect(tokenizing.details).toMatchObject({ pages: 2, page_count: 2, ocr_pages: 2, ocr_failed: 0 })
      expect(tokenizing.details.ocr_confidence).toBeGreaterThan(0.7)
    }
    const chunks = await db.sql`select metadata from public.vectors`
    expect(chunks.length).toBeGreaterThanOrEqual(4)
    for (const c of chunks) {
      expect(c.metadata.text_source).toBe('ocr')
      expect(c.metadata.ocr_confidence).toBeGreaterThan(0.7)
    }
  })

  it('answers paraphrased questions from the right page of each scan', async () => {
    const student = await createUser(db.sql)
    const ask = async (message: string) => {
      const res = await post(node, '/chat', { message }, { Authorization: `Bearer ${student.token}` })
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      return res.body
    }
    const cases = [
      ["Dans quelle partie de la cellule le glucose est-il dégradé pour libérer de l'énergie ?", 'photosynthese.pdf', 2],
      ['Où se trouve la chlorophylle qui permet aux plantes de fabriquer leur matière ?', 'photosynthese.pdf', 1],
      ['ماذا يزرع الناس على ضفة نهر السنغال؟', 'nahr-senegal.pdf', 2],
      ['أين ينبع نهر السنغال وأين يصب؟', 'nahr-senegal.pdf', 1],
    ] as const
    for (const [message, file, page] of cases) {
      const answer = await ask(message)
      expect(answer, message).toMatchObject({ path: 'answer', outcome: 'answered' })
      expect(answer.sources[0].source_url, message).toContain(file)
      expect(answer.sources[0].page_number, message).toBe(page)
    }
  })
})

describe('where no recognizer runs', () => {
  it('an ingestion that meets scanned pages goes back to the queue, marked, and a Node worker finishes it', async () => {
    const ref = await referenceOf('photosynthese.pdf')
    const queued = await post(edge, `/admin/ingest/${ref.id}?force=true`)
    expect(queued.status).toBe(202)
    expect(await dispatchAll(edge)).toEqual(['dispatched', 'idle'])
    const waiting = await get(edge, `/admin/jobs/${queued.body.job_id}`)
    expect(waiting).toMatchObject({ status: 'queued', needs_ocr: true, retry_count: 0, progress: { pages_total: null, pages_ocr: 0 } })
    expect(waiting.audit.at(-1)).toMatchObject({ from_status: 'parsing', to_status: 'queued', details: { needs_ocr: true, pages: 2 } })
    expect(waiting.audit.at(-1).details.reason).toContain('npm run worker')
    // the previous version is still served meanwhile
    const [served] = await db.sql`select d.status, count(v.id)::int as vectors from public.documents d join public.vectors v on v.file_id = d.id
                                   where d.reference_id = ${ref.id} group by d.status`
    expect(served).toMatchObject({ status: 'ready' })
    expect(served!.vectors).toBeGreaterThan(0)
    expect(await dispatchAll(node)).toEqual(['dispatched', 'idle'])
    expect(await get(node, `/admin/jobs/${queued.body.job_id}`)).toMatchObject({ status: 'ready', progress: { pages_done: 2, pages_total: 2, pages_ocr: 2 } })
  })

  it('the scraper on an Edge Function registers a scan it cannot read, with a warning, and queues it for a Node worker', async () => {
    const sync = await post(edge, '/scraping/edge/sync')
    expect(sync.body).toMatchObject({ status: 'completed', new_count: 1, quality_failed: 0, duplicates: 0 })
    const ref = await referenceOf('copie.pdf')
    expect(ref.language).toBeNull()
    const [audit] = await db.sql`select details from public.ingestion_audit where reference_id = ${ref.id} and to_status = 'queued'`
    expect(audit!.details.warnings).toEqual(['2 of 2 pages need OCR: the job waits for a Node worker'])
    expect(await dispatchAll(edge)).toEqual(['idle'])
    expect(await dispatchAll(node)).toEqual(['dispatched', 'idle'])
    // its language comes from the recognized pages
    expect(await referenceOf('copie.pdf')).toMatchObject({ status: 'ready', language: 'fr' })
  })

  it('OCR_MODE never refuses a scan at the quality gate, saying why', async () => {
    const never = createTestApp({
      sql: db.sql,
      env: { FETCH_ALLOW_LOOPBACK: 'true', OCR_MODE: 'never', RATE_LIMIT_ADMIN_PER_MINUTE: '1000' },
      deps: { sources: [{ ...source('never', 'scans.html') }], resolveHost: resolveHostNode, ocr: engine },
    })
    await db.sql`delete from public.curriculum_references`
    const sync = await post(never, '/scraping/never/sync')
    expect(sync.body).toMatchObject({ found_count: 2, new_count: 0, quality_failed: 2 })
    const rejected = await db.sql`select error_message from public.ingestion_audit where to_status = 'rejected' order by id`
    expect(rejected.map((r) => r.error_message)).toEqual(['no text layer (scanned PDF; OCR_MODE is never)', 'no text layer (scanned PDF; OCR_MODE is never)'])
  })
})

describe('a long scan', () => {
  it('the scraper reads a sample of it (OCR_SCRAPER_PAGES) and its job reads the rest, with progress', async () => {
    const sampling = createTestApp({
      sql: db.sql,
      env: { FETCH_ALLOW_LOOPBACK: 'true', OCR_SCRAPER_PAGES: '1', RATE_LIMIT_ADMIN_PER_MINUTE: '1000', RATE_LIMIT_PUBLIC_PER_MINUTE: '1000' },
      deps: { sources: [source('sample', 'sample.html')], resolveHost: resolveHostNode, ocr: engine },
    })
    const sync = await post(sampling, '/scraping/sample/sync')
    expect(sync.body).toMatchObject({ new_count: 1, quality_failed: 0 })
    const ref = await referenceOf('respiration.pdf')
    const [audit] = await db.sql`select job_id, details from public.ingestion_audit where reference_id = ${ref.id} and to_status = 'queued'`
    expect(audit!.details).toMatchObject({ ocr_pages: 1, warnings: ['1 more page needs OCR: the ingestion reads it'] })
    const progress: string[] = []
    sampling.deps.onJobProgress = ({ done, total }) => void progress.push(`${done}/${total}`)
    expect(await dispatchAll(sampling)).toEqual(['dispatched', 'idle'])
    expect(await get(sampling, `/admin/jobs/${audit!.job_id}`)).toMatchObject({ status: 'ready', progress: { pages_done: 2, pages_total: 2, pages_ocr: 2 } })
    expect(progress).toEqual(['0/2', '1/2', '2/2'])
  })
})

const BLANK_PAGE_LESSON =
  "Mesures et incertitudes. Toute mesure est entachée d'une incertitude : on écrit le résultat avec un nombre de chiffres significatifs adapté à l'instrument. Une règle graduée au millimètre donne une longueur à un demi-millimètre près ; un chronomètre manuel ajoute le temps de réaction de l'opérateur."

const BLANK_PAGE_SCAN =
  "La masse volumique. La masse volumique d'un corps est le quotient de sa masse par son volume. Elle s'exprime en kilogrammes par mètre cube. Pour un liquide, on pèse une éprouvette vide puis remplie, et l'on divise la différence des deux pesées par le volume lu sur la graduation."

describe('a blank page', () => {
  it('is no text missing: a lesson with a blank page, typeset or scanned, passes the quality gate and is ingested', async () => {
    const blank = createTestApp({
      sql: db.sql,
      env: { FETCH_ALLOW_LOOPBACK: 'true', RATE_LIMIT_ADMIN_PER_MINUTE: '1000', RATE_LIMIT_PUBLIC_PER_MINUTE: '1000' },
      deps: { sources: [source('blank', 'blank.html')], resolveHost: resolveHostNode, ocr: engine },
    })
    const sync = await post(blank, '/scraping/blank/sync')
    const rejected = await db.sql`select error_message from public.ingestion_audit where to_status = 'rejected' and details->>'source' = 'blank'`
    expect(rejected.map((r) => r.error_message)).toEqual([])
    expect(sync.body).toMatchObject({ found_count: 2, new_count: 2, quality_failed: 0 })
    expect(await dispatchAll(blank)).toEqual(['dispatched', 'dispatched', 'idle'])
    const ready = await db
      .sql`select d.status from public.documents d join public.curriculum_references r on r.id = d.reference_id where r.pdf_source like '%/physique/mesures%'`
    expect(ready.map((d) => d.status)).toEqual(['ready', 'ready'])
  })
})

describe('manual uploads of a scan', () => {
  const upload = async (t: TestApp, pdf: Uint8Array) => {
    const form = new FormData()
    for (const [k, v] of Object.entries({ grade: '3AS', subject: 'sciences-naturelles', language: 'fr' })) form.set(k, v)
    form.set('file', new File([Buffer.from(pdf)], 'scan.pdf', { type: 'application/pdf' }))
    const res = await t.request('/admin/upload-curriculum', { method: 'POST', headers: service, body: form })
    return { status: res.status, body: await json(res) }
  }

  it('are recognized in the request where this process can, and refused with the way forward where it cannot', async () => {
    const scan = await makeScannedPdf(SCAN_FR)
    const done = await upload(node, scan)
    expect(done.status, JSON.stringify(done.body)).toBe(201)
    expect(done.body).toMatchObject({ status: 'ready', pages: 2, content_pages: 2, ocr_pages: 2 })
    const [v] = await db.sql`select metadata from public.vectors where file_id = ${done.body.document_id} and metadata->>'page_number' = '1' limit 1`
    expect(v!.metadata).toMatchObject({ text_source: 'ocr' })
    expect(v!.metadata.text).toContain('photosynthèse')
    const refused = await upload(edge, scan)
    expect(refused.status).toBe(400)
    expect(refused.body).toMatchObject({ error: 'validation_failed', request_id: expect.any(String) })
    expect(refused.body.message).toContain('cannot recognize scanned pages')
    expect(refused.body.message).toContain('npm run worker')
  })
})

describe('npm run admin -- watch', () => {
  const job = (
    status: string,
    progress: { pages_done: number; pages_total: number | null; pages_ocr: number },
    extra: Partial<{ chunks_created: number; vectors_upserted: number; needs_ocr: boolean }> = {},
  ) => jobProgress({ status, progress, chunks_created: 0, vectors_upserted: 0, needs_ocr: false, ...extra })
  it('draws a progress bar per job: pages read while it reads them, then vectors stored', () => {
    expect(job('queued', { pages_done: 0, pages_total: null, pages_ocr: 0 }, { needs_ocr: true })).toBe('waiting for a worker that can OCR (npm run worker)')
    expect(job('parsing', { pages_done: 0, pages_total: null, pages_ocr: 0 })).toBe('reading pages')
    expect(job('parsing', { pages_done: 5, pages_total: 20, pages_ocr: 4 })).toBe('[#####...............] pages 5/20, 4 by OCR')
    expect(job('embedding_request_sent', { pages_done: 20, pages_total: 20, pages_ocr: 20 }, { chunks_created: 40, vectors_upserted: 40 })).toBe(
      '[####################] vectors 40/40 (20 pages by OCR)',
    )
  })
})
