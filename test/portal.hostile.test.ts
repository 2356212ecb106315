// A curriculum portal the scraper has never seen, on loopback: grades and subjects said only by the
// headings above its lists, broken and redirected links, PDFs served under the wrong type, a link broken
// on one sync and mended by the next. What the runs report and what the catalogue ends up holding.
import { readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { createTestApp, type TestApp } from './helpers/app.ts'
import { makePdf } from '../scripts/lib/pdf.ts'
import { SourceSchema } from '../functions-shared/sources-file.ts'
import { connectGuardNode, resolveHostNode } from '../scripts/lib/node-adapter.ts'
import { syncSource } from '../functions-shared/catalogue/sync.ts'

interface Lesson {
  id: string
  language: 'fr' | 'ar'
  pages: string[]
  near_duplicate_of?: string
  scanned?: boolean
}
const LESSONS = (JSON.parse(readFileSync(new URL('../demo/curriculum.json', import.meta.url), 'utf8')) as { lessons: Lesson[] }).lessons
const lesson = (id: string) => LESSONS.find((l) => l.id === id)!
const pdfOf = (id: string) => makePdf(lesson(id).pages, { arabic: lesson(id).language === 'ar' })

let db: TestDatabase
let t: TestApp
let server: Server
let url = ''
/** what each path of the portal answers; a test changes it to mend or break a link */
const routes = new Map<string, (res: import('node:http').ServerResponse) => void>()
const requested: string[] = []

const pdf = (bytes: Uint8Array, type = 'application/pdf') => (res: import('node:http').ServerResponse) => void res.writeHead(200, { 'content-type': type }).end(Buffer.from(bytes))
const html = (body: string) => (res: import('node:http').ServerResponse) =>
  void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<!doctype html><html lang="fr"><head><meta charset="utf-8"><title>Ressources</title></head><body>${body}</body></html>`)

beforeAll(async () => {
  db = await createTestDatabase()
  server = createServer((req, res) => {
    const path = new URL(req.url!, 'http://portal').pathname
    requested.push(req.url!)
    const route = routes.get(path)
    if (route) return route(res)
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found')
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  t = createTestApp({ sql: db.sql, env: { FETCH_ALLOW_LOOPBACK: 'true', FETCH_TIMEOUT_MS: '5000' }, deps: { resolveHost: resolveHostNode, connectGuard: connectGuardNode } })
})
afterAll(async () => {
  server?.closeAllConnections()
  await new Promise((r) => server?.close(r))
  await db?.close()
})

const sync = (source: Record<string, unknown>) =>
  syncSource({ ctx: { deps: t.deps, requestId: String(source.name) }, source: SourceSchema.parse({ allowed_hosts: [new URL(url).host], ...source }) })
const references = async (source: string) =>
  Object.fromEntries(
    (await db.sql`select r.pdf_source, r.grade, r.subject, r.title, r.status, j.status as job from public.curriculum_references r left join public.ingestion_jobs j on j.reference_id = r.id where r.source = ${source}`).map((r) => [
      new URL(r.pdf_source as string).pathname,
      r,
    ]),
  )

describe('a portal that says grade and subject only in the headings above its lists', () => {
  it('gives each lesson the grade and subject of the headings it sits under, and queues it', async () => {
    routes.set('/ressources/index.html', html(`
      <h1>Ressources pédagogiques</h1>
      <h2>Cinquième année secondaire (5AS)</h2>
        <h3>Mathématiques</h3>
        <ul><li><a href="/dl/101.pdf">Leçon 6 : proportionnalité et pourcentages</a></li></ul>
        <h3>Géographie</h3>
        <ul><li><a href="/dl/102.pdf">Leçon 4 : le fleuve Sénégal</a></li></ul>
      <h2>Sixième année secondaire (6AS)</h2>
        <div class="bloc"><h3>Histoire</h3>
          <ul><li><a href="/dl/103.pdf">Chapitre 5 : l'indépendance</a></li></ul></div>
        <ul><li><a href="/dl/104.pdf">Chapitre 6 : l'État moderne</a></li></ul>`))
    routes.set('/dl/101.pdf', pdf(await pdfOf('maths-5as-pourcentages')))
    routes.set('/dl/102.pdf', pdf(await pdfOf('geographie-5as-fleuve-senegal')))
    routes.set('/dl/103.pdf', pdf(await pdfOf('histoire-6as-independance')))
    routes.set('/dl/104.pdf', pdf(await pdfOf('histoire-6as-etat')))
    const result = await sync({
      name: 'headings',
      index_urls: [`${url}/ressources/index.html`],
      rules: [
        { field: 'grade', from: 'heading', pattern: '\\((\\d+AS)\\)' },
        { field: 'subject', from: 'heading', pattern: '› ([^›]+)$' },
      ],
    })
    expect(result).toMatchObject({ status: 'completed', found_count: 4, new_count: 4, needs_metadata: 0, errors: 0 })
    const refs = await references('headings')
    expect(refs['/dl/101.pdf']).toMatchObject({ grade: '5AS', subject: 'mathematiques', job: 'queued' })
    expect(refs['/dl/102.pdf']).toMatchObject({ grade: '5AS', subject: 'geographie', job: 'queued' })
    // a heading inside a block still heads what follows it in the page
    expect(refs['/dl/103.pdf']).toMatchObject({ grade: '6AS', subject: 'histoire', job: 'queued' })
    expect(refs['/dl/104.pdf']).toMatchObject({ grade: '6AS', subject: 'histoire', job: 'queued' })
  })
})
