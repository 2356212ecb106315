// Metadata that operators can fix: scraper rules that read a link's attributes and its table column's
// header (a loopback portal whose grade and subject live only in markup), a reference without a grade or
// subject registered but not queued, its ingestion refused with a 409 that says how to fix it,
// PATCH /admin/references/{id} (validated, audited, 404, 409 once vectors carry the old values) and
// `npm run admin -- references set`.
import { execFile } from 'node:child_process'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { promisify } from 'node:util'
import { fileURLToPath } from 'node:url'
import * as cheerio from 'cheerio'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { createTestApp, json, type TestApp, testConfig } from './helpers/app.ts'
import { bearer } from './helpers/tokens.ts'
import { AR_LESSON, FR_LESSON, PHYSICS_LESSON } from './helpers/portal.ts'
import { makePdf } from '../scripts/lib/pdf.ts'
import { startGateway } from '../scripts/lib/gateway.ts'
import { apiKey } from '../functions-shared/lib/keys.ts'
import { LOCAL_JWT_SECRET } from '../functions-shared/config.ts'
import { linkMetadata } from '../functions-shared/catalogue/sources.ts'
import { SourceSchema } from '../functions-shared/sources-file.ts'
import { discoverLinks, MAX_LISTING_DEPTH, nestingDepth } from '../functions-shared/catalogue/discover.ts'
import { columnHeader } from '../functions-shared/catalogue/listing-dom.ts'
import { resolveHostNode } from '../scripts/lib/node-adapter.ts'
import { createLogRoot } from '../functions-shared/lib/logger.ts'

const run = promisify(execFile)
const root = fileURLToPath(new URL('..', import.meta.url))

let db: TestDatabase
let t: TestApp
let portal: { url: string; close: () => Promise<void> }
let service: Record<string, string>

// the grade is in a data attribute, the subject only in the column's heading, the title in the title
// attribute; the last link says nothing at all
const LISTING = `<!doctype html><html><head><meta charset="utf-8"><title>Programmes</title></head><body>
  <table>
    <thead><tr><th>Niveau</th><th>Géographie</th><th>التربية الإسلامية</th></tr></thead>
    <tbody><tr><td>5e année</td>
      <td><a href="/f/a.pdf" data-grade="5AS" title="Le fleuve Sénégal">Leçon 1</a></td>
      <td><a href="/f/b.pdf" data-grade="5AS" title="أركان الإسلام">الدرس 1</a></td></tr></tbody>
  </table>
  <p><a href="/f/c.pdf">Document</a></p>
</body></html>`

async function startListingPortal() {
  const files = new Map<string, Uint8Array>([
    ['/f/a.pdf', await makePdf([FR_LESSON])],
    ['/f/b.pdf', await makePdf([AR_LESSON], { arabic: true })],
    ['/f/c.pdf', await makePdf([PHYSICS_LESSON])],
  ])
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url!, 'http://portal').pathname
    if (path === '/index.html') return res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(LISTING)
    const file = files.get(path)
    if (file) return res.writeHead(200, { 'content-type': 'application/pdf', 'content-length': file.byteLength }).end(Buffer.from(file))
    res.writeHead(404).end()
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    url,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections()
        server.close(() => r())
      }),
  }
}

const source = () =>
  SourceSchema.parse({
    name: 'markup',
    index_urls: [`${portal.url}/index.html`],
    allowed_hosts: [new URL(portal.url).host],
    rules: [
      { field: 'grade', from: 'attr', attr: 'data-grade', pattern: '^(\\d+AS)$' },
      { field: 'subject', from: 'column_header', pattern: 'géographie', value: 'geographie' },
      { field: 'subject', from: 'column_header', pattern: 'التربية الإسلامية', value: 'tarbiya-islamiya' },
      { field: 'title', from: 'attr', attr: 'TITLE', pattern: '(.+)' },
    ],
  })

beforeAll(async () => {
  db = await createTestDatabase()
  portal = await startListingPortal()
  t = createTestApp({
    sql: db.sql,
    env: { FETCH_ALLOW_LOOPBACK: 'true', RATE_LIMIT_ADMIN_PER_MINUTE: '1000', RATE_LIMIT_PUBLIC_PER_MINUTE: '1000' },
    deps: { sources: [source()], resolveHost: resolveHostNode },
  })
  service = bearer(await apiKey(LOCAL_JWT_SECRET, 'service_role'))
})
afterAll(async () => {
  await t?.deps.background.idle()
  await portal?.close()
  await db?.close()
})

const call = async (method: string, path: string, body?: unknown) => {
  const res = await t.request(path, {
    method,
    headers: { ...service, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  return { status: res.status, body: await json(res) }
}
const refs: Record<string, Record<string, any>> = {}

describe('scraper rules over markup', () => {
  it('read a link attribute and the header of its table column', () => {
    const $ = cheerio.load(`<table><tr><th colspan="2">Maths</th><th>Physique</th></tr>
      <tr><td>a</td><td><a id="m" href="/m.pdf">m</a></td><td><a id="p" href="/p.pdf">p</a></td></tr></table><p><a id="x" href="/x.pdf">x</a></p>`)
    expect(columnHeader($, $('#m'))).toBe('Maths')
    expect(columnHeader($, $('#p'))).toBe('Physique')
    expect(columnHeader($, $('#x'))).toBeNull()
    const meta = linkMetadata(source(), {
      url: 'http://p/a.pdf',
      text: 'Leçon',
      attrs: { 'data-grade': '6AS', title: 'Un titre' },
      column_header: 'Géographie',
    })
    expect(meta).toMatchObject({ grade: '6AS', subject: 'geographie', title: 'Un titre' })
    // a rule whose input the link does not have is skipped
    expect(linkMetadata(source(), { url: 'http://p/a.pdf', text: 'Leçon' })).toMatchObject({ grade: null, subject: null, title: 'Leçon' })
  })

  it("reads a URL whose escapes are not UTF-8 (a legacy portal's %E9) as windows-1252 and a bare % as written, instead of failing the link", () => {
    const byUrl = SourceSchema.parse({
      name: 'legacy-urls',
      index_urls: ['http://p/'],
      rules: [
        { field: 'grade', from: 'url', pattern: '/(\\d+AS)/' },
        { field: 'subject', from: 'url', pattern: '/\\d+AS/([^/]+)/' },
      ],
    })
    // decodeURIComponent threw "URI malformed" on these: the sync counted each such PDF as an error, every run
    expect(linkMetadata(byUrl, { url: 'http://p/4AS/math%E9matiques/cours%20de%20g%E9om%E9trie.pdf', text: '' })).toMatchObject({
      grade: '4AS',
      subject: 'mathematiques',
      title: 'cours de géométrie',
    })
    expect(linkMetadata(byUrl, { url: 'http://p/5AS/physique/r%C3%A9ussir%20%C3%A0%20100%.pdf', text: ' ' })).toMatchObject({
      grade: '5AS',
      subject: 'physique',
      title: 'réussir à 100%',
    })
    // Arabic escapes (UTF-8) still read as Arabic
    expect(linkMetadata(byUrl, { url: 'http://p/6AS/%D8%AF%D8%B1%D8%B3/a.pdf', text: 'x' })).toMatchObject({ subject: 'درس' })
    // a grade and subject as a question names them (an upload stores them so): a column headed
    // "Sciences Naturelles", a path's "Education_Islamique" or "4 AS"
    expect(linkMetadata(byUrl, { url: 'http://p/4AS/Education_Islamique/a.pdf', text: 'x' })).toMatchObject({ grade: '4AS', subject: 'education-islamique' })
    const byHeader = SourceSchema.parse({
      name: 'headers',
      index_urls: ['http://p/'],
      rules: [
        { field: 'grade', from: 'context', pattern: 'Niveau : (.+)' },
        { field: 'subject', from: 'column_header', pattern: '(.+)' },
      ],
    })
    expect(linkMetadata(byHeader, { url: 'http://p/a.pdf', text: 'x', context: 'Niveau : 4ème AS', column_header: ' Sciences Naturelles ' })).toMatchObject({
      grade: '4AS',
      subject: 'sciences-naturelles',
    })
  })

  it("bounds what a listing's text gives a reference: a title to 300 characters, a major or category to 100", () => {
    const byText = SourceSchema.parse({
      name: 'long-texts',
      index_urls: ['http://p/'],
      rules: [
        { field: 'category', from: 'text', pattern: '^(.*)$' },
        { field: 'major', from: 'context', pattern: 'Série (.*)' },
      ],
    })
    const text = `Manuel de mathématiques ${'très '.repeat(20_000)}complet`
    const meta = linkMetadata(byText, { url: 'http://p/a.pdf', text, context: `Série ${'C '.repeat(1000)}` })
    // the title went to the model with every passage of the document a chat turn quoted (120,000 characters)
    expect(Array.from(meta.title!).length).toBeLessThanOrEqual(300)
    expect(meta.title).toMatch(/^Manuel de mathématiques très très .*…$/)
    expect(Array.from(meta.category!).length).toBeLessThanOrEqual(100)
    expect(Array.from(meta.major!).length).toBeLessThanOrEqual(100)
    // cut between characters, never inside a surrogate pair
    const astral = linkMetadata(byText, { url: 'http://p/a.pdf', text: '𝐀'.repeat(400) })
    expect(astral.title).toBe(`${'𝐀'.repeat(299)}…`)
    expect(linkMetadata(byText, { url: 'http://p/a.pdf', text: 'Leçon 3' })).toMatchObject({ title: 'Leçon 3', category: 'Leçon 3' })
  })

  it('reads a hostile listing in time: links sharing one section or one row, or nested one level deeper each', async () => {
    // every link read its whole container, its whole row and every ancestor again: 8,000 links in one
    // section took 9 s and 600 MB, in one table row 23 s, nested 3,000 deep 12 s, all of it on the
    // server's only thread (a page nested deeper than MAX_LISTING_DEPTH, 2,000, is now refused before it is parsed)
    const n = 8000
    const section = `<section>Série C ${Array.from({ length: n }, (_, i) => `<a href="/s/${i}.pdf">s${i}</a> `).join('')}</section>`
    const row = `<table><tr><th>Niveau</th><th>Maths</th></tr><tr><td>4AS</td>${
      Array.from({ length: n }, (_, i) => `<td><a href="/r/${i}.pdf">r</a></td>`).join('')
    }</tr></table>`
    const nested = Array.from({ length: MAX_LISTING_DEPTH }, (_, i) => `<div><a href="/n/${i}.pdf">n</a>`).join('')
    const html = `<html><body>${section}${row}<ul><li>Série D <a href="/li.pdf">li</a></li></ul>${nested}</body></html>`
    const listing = SourceSchema.parse({ name: 'hostile', index_urls: ['http://portal.test/index.html'], allowed_hosts: ['portal.test'] })
    const started = performance.now()
    const links = await discoverLinks(listing, {
      maxBytes: 5 * 1024 * 1024,
      timeoutMs: 30_000,
      resolve: async () => ['93.184.216.34'],
      fetch: (async () => new Response(html, { headers: { 'content-type': 'text/html' } })) as typeof fetch,
    })
    const ms = performance.now() - started
    expect(links).toHaveLength(2 * n + MAX_LISTING_DEPTH + 1)
    expect(ms, `${Math.round(ms)} ms`).toBeLessThan(4000)
    const byPath = new Map(links.map((l) => [new URL(l.url).pathname, l]))
    // what a link is read with is unchanged: its context (500 characters at most), its column's header
    expect(byPath.get('/s/7.pdf')!.context).toMatch(/^Série C s0 s1 s2/)
    expect(byPath.get('/s/7.pdf')!.context.length).toBe(500)
    expect(byPath.get('/r/0.pdf')!.column_header).toBe('Maths')
    expect(byPath.get('/r/5.pdf')!.column_header).toBeNull()
    expect(byPath.get('/li.pdf')!.context).toBe('Série D li')
    expect(byPath.get('/n/10.pdf')!.context).toBe('')
  }, 60_000)

  it('refuses a listing page that nests its elements deeper than MAX_LISTING_DEPTH, which the parser reads in time growing with its square', async () => {
    const read = (html: string) =>
      discoverLinks(SourceSchema.parse({ name: 'deep', index_urls: ['http://portal.test/index.html'], allowed_hosts: ['portal.test'] }), {
        maxBytes: 5 * 1024 * 1024,
        timeoutMs: 30_000,
        resolve: async () => ['93.184.216.34'],
        fetch: (async () => new Response(html, { headers: { 'content-type': 'text/html' } })) as typeof fetch,
      })
    const nested = (n: number) => `<html><body>${'<div class="c">'.repeat(n)}<a href="/f/a.pdf">a</a>${'</div>'.repeat(n)}</body></html>`
    await expect(read(nested(MAX_LISTING_DEPTH + 1))).rejects.toThrow(
      `the listing page http://portal.test/index.html nests elements ${MAX_LISTING_DEPTH + 1} deep (more than ${MAX_LISTING_DEPTH})`,
    )
    expect((await read(nested(MAX_LISTING_DEPTH))).map((l) => l.url)).toEqual(['http://portal.test/f/a.pdf'])
    // tags the parser closes by itself, or that close themselves, are not counted as nesting
    expect(nestingDepth(`${'<li><p><td><b>'.repeat(5000)}<div/><br><span>x</span>`)).toBe(1)
    expect(nestingDepth('<div>'.repeat(3) + '</div>'.repeat(10) + '<section>')).toBe(3)
  })

  it('a next-page link that is no URL is passed over, as a document link that is none is', async () => {
    const html = '<html><body><a href="/f/a.pdf">a</a><a rel="next" href="http://[portal">suivant</a></body></html>'
    const listing = SourceSchema.parse({ name: 'broken-next', index_urls: ['http://portal.test/index.html'], allowed_hosts: ['portal.test'] })
    const links = await discoverLinks(listing, {
      maxBytes: 1024 * 1024,
      timeoutMs: 30_000,
      resolve: async () => ['93.184.216.34'],
      fetch: (async () => new Response(html, { headers: { 'content-type': 'text/html' } })) as typeof fetch,
    })
    expect(links.map((l) => l.url)).toEqual(['http://portal.test/f/a.pdf'])
  })

  it('says when the walk stops at max_listing_pages with pages left, and reads a next page named with a fragment once', async () => {
    // page n links to page n+1, and back to page 1 with a fragment; 5 pages, 2 PDFs each
    const pages = new Map(Array.from({ length: 5 }, (_, i) => [
      `/liste/${i + 1}.html`,
      `<html><body>
      <a href="/f/${i}-a.pdf">a</a><a href="/f/${i}-b.pdf">b</a><a href="/liste/1.html#haut">début</a>
      ${i < 4 ? `<a rel="next" href="/liste/${i + 2}.html#contenu">suivant</a>` : ''}<a rel="next" href="/liste/1.html#haut">début</a></body></html>`,
    ]))
    const fetched: string[] = []
    const walk = async (max: number) => {
      const failures: { url: string; message: string }[] = []
      const source = SourceSchema.parse({
        name: 'paged',
        index_urls: ['http://portal.test/liste/1.html'],
        allowed_hosts: ['portal.test'],
        max_listing_pages: max,
      })
      const links = await discoverLinks(source, {
        maxBytes: 1024 * 1024,
        timeoutMs: 30_000,
        resolve: async () => ['93.184.216.34'],
        fetch: (async (url: URL) => {
          fetched.push(url.pathname + url.hash)
          const html = pages.get(url.pathname)
          return html ? new Response(html, { headers: { 'content-type': 'text/html' } }) : new Response('', { status: 404 })
        }) as typeof fetch,
      }, (f) => failures.push(f))
      return { links, failures }
    }
    // the walk stopped at 3 of 5 pages and said nothing: a run that looked complete, 4 PDFs never seen
    const cut = await walk(3)
    expect(cut.links).toHaveLength(6)
    expect(cut.failures).toEqual([{ url: 'http://portal.test/liste/4.html', message: "not read: the source's max_listing_pages (3) was reached" }])
    // page 1 named again with #haut was read again, and took a page of the limit
    expect(fetched).toEqual(['/liste/1.html', '/liste/2.html', '/liste/3.html'])
    fetched.length = 0
    const whole = await walk(5)
    expect(whole.links).toHaveLength(10)
    expect(whole.failures).toEqual([])
  })

  it('reads a listing in the encoding it says it is in, or the one its bytes show, and links relative to its <base href>', async () => {
    // legacy single-byte encodings, by inverting their decoders
    const encoder = (label: string) => {
      const table = new Map(Array.from({ length: 256 }, (_, b) => [new TextDecoder(label).decode(Uint8Array.of(b)), b]))
      return (text: string) => Uint8Array.from(Array.from(text, (ch) => table.get(ch) ?? 0x3f))
    }
    const cp1256 = encoder('windows-1256')
    const cp1252 = encoder('windows-1252')
    const arabic = (head: string) =>
      `<html><head>${head}</head><body><ul><li>الجغرافيا — السنة الخامسة <a href="/f/ar.pdf">درس نهر السنغال</a></li></ul></body></html>`
    const french = '<html><body><p>Géographie, 5e année : <a href="/f/fr.pdf">Le fleuve Sénégal et sa vallée</a></p></body></html>'
    const read = async (bytes: Uint8Array, contentType: string) =>
      discoverLinks(SourceSchema.parse({ name: 'encodings', index_urls: ['http://portal.test/listes/index.html'], allowed_hosts: ['portal.test'] }), {
        maxBytes: 1024 * 1024,
        timeoutMs: 30_000,
        resolve: async () => ['93.184.216.34'],
        fetch: (async () => new Response(bytes as Uint8Array<ArrayBuffer>, { headers: { 'content-type': contentType } })) as typeof fetch,
      })
    const cases: [string, Uint8Array, string, string, string][] = [
      ['windows-1256 in the header', cp1256(arabic('')), 'text/html; charset=windows-1256', 'درس نهر السنغال', 'الجغرافيا — السنة الخامسة درس نهر السنغال'],
      [
        'windows-1256 in a <meta charset>',
        cp1256(arabic('<meta charset="windows-1256">')),
        'text/html',
        'درس نهر السنغال',
        'الجغرافيا — السنة الخامسة درس نهر السنغال',
      ],
      [
        'windows-1256 in a <meta http-equiv>',
        cp1256(arabic('<meta http-equiv="Content-Type" content="text/html; charset=windows-1256">')),
        'text/html',
        'درس نهر السنغال',
        'الجغرافيا — السنة الخامسة درس نهر السنغال',
      ],
      ['windows-1256 unsaid', cp1256(arabic('')), 'text/html', 'درس نهر السنغال', 'الجغرافيا — السنة الخامسة درس نهر السنغال'],
      ['windows-1252 unsaid', cp1252(french), 'text/html', 'Le fleuve Sénégal et sa vallée', 'Géographie, 5e année : Le fleuve Sénégal et sa vallée'],
      ['UTF-8 unsaid', new TextEncoder().encode(arabic('')), 'text/html', 'درس نهر السنغال', 'الجغرافيا — السنة الخامسة درس نهر السنغال'],
      [
        'UTF-8 with a byte order mark, whatever the header says',
        new Uint8Array([0xef, 0xbb, 0xbf, ...new TextEncoder().encode(french)]),
        'text/html; charset=windows-1252',
        'Le fleuve Sénégal et sa vallée',
        'Géographie, 5e année : Le fleuve Sénégal et sa vallée',
      ],
      [
        'an encoding no decoder knows, read as its bytes show',
        cp1252(french),
        'text/html; charset=x-unknown',
        'Le fleuve Sénégal et sa vallée',
        'Géographie, 5e année : Le fleuve Sénégal et sa vallée',
      ],
    ]
    for (const [what, bytes, contentType, text, context] of cases) {
      const [link] = await read(bytes, contentType)
      expect(link, what).toMatchObject({ text, context })
    }
    const based = await read(new TextEncoder().encode('<html><head><base href="/documents/"></head><body><a href="maths.pdf">m</a></body></html>'), 'text/html')
    expect(based.map((l) => l.url)).toEqual(['http://portal.test/documents/maths.pdf'])
    // links that are no document to download, whatever their names end with, are not links to PDFs
    const others = await read(
      new TextEncoder().encode(
        '<a href="mailto:prof@portal.test?subject=cours.pdf">m</a><a href="ftp://portal.test/a.pdf">f</a><a href="file:///c/a.pdf">l</a><a href="https://portal.test/b.pdf">b</a>',
      ),
      'text/html',
    )
    expect(others.map((l) => l.url)).toEqual(['https://portal.test/b.pdf'])
  })

  it('refuses a rule that could never match', () => {
    expect(() => SourceSchema.parse({ name: 'x', index_urls: ['http://p/'], rules: [{ field: 'grade', from: 'attr', pattern: '(.+)' }] })).toThrow(/attr/)
    expect(() => SourceSchema.parse({ name: 'x', index_urls: ['http://p/'], rules: [{ field: 'grade', from: 'text', attr: 'title', pattern: '(.+)' }] }))
      .toThrow(/attr/)
  })

  it('sync registers the three links; the one without grade or subject is not queued', async () => {
    const res = await call('POST', '/scraping/markup/sync')
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    expect(res.body).toMatchObject({ status: 'completed', found_count: 3, new_count: 3, needs_metadata: 1, duplicates: 0, errors: 0 })
    const list = await call('GET', '/admin/references?limit=10')
    for (const r of list.body.items) refs[new URL(r.source_url).pathname] = r
    expect(refs['/f/a.pdf']).toMatchObject({ grade: '5AS', subject: 'geographie', title: 'Le fleuve Sénégal', status: 'discovered' })
    // tarbiya-islamiya is one of the slugs of education-islamique: stored as the catalogue names the subject
    expect(refs['/f/b.pdf']).toMatchObject({ grade: '5AS', subject: 'education-islamique', title: 'أركان الإسلام', language: 'ar' })
    expect(refs['/f/c.pdf']).toMatchObject({ grade: null, subject: null, status: 'discovered' })
    const jobs = await db.sql`select reference_id from public.ingestion_jobs`
    expect(jobs.map((j) => j.reference_id).sort()).toEqual([refs['/f/a.pdf']!.id, refs['/f/b.pdf']!.id].sort())
  })
})

describe('a reference without a namespace', () => {
  it('is refused at ingestion with a 409 that says what is missing and how to set it', async () => {
    const id = refs['/f/c.pdf']!.id
    const res = await call('POST', `/admin/ingest/${id}`)
    expect(res.status).toBe(409)
    expect(res.body).toMatchObject({ error: 'conflict', reference_id: id, missing: ['grade', 'subject'], request_id: expect.any(String) })
    expect(res.body.message).toContain(`PATCH /admin/references/${id}`)
    expect(res.body.message).toContain(`references set ${id} --grade`)
    expect(await db.sql`select 1 from public.ingestion_jobs where reference_id = ${id}`).toHaveLength(0)
  })

  it('PATCH validates, answers 404 for an unknown reference, and audits what it changes', async () => {
    const id = refs['/f/c.pdf']!.id
    expect((await call('PATCH', `/admin/references/${id}`, {})).status).toBe(400)
    const bad = await call('PATCH', `/admin/references/${id}`, { subject: 'Sciences Physiques' })
    expect(bad.status).toBe(400)
    expect(bad.body).toMatchObject({ error: 'validation_failed' })
    expect((await call('PATCH', `/admin/references/${id}`, { grade: '5AS', colour: 'red' })).status).toBe(400)
    expect((await call('PATCH', `/admin/references/${crypto.randomUUID()}`, { grade: '5AS' })).status).toBe(404)

    const ok = await call('PATCH', `/admin/references/${id}`, { grade: '5AS', subject: 'physique', title: 'Les ondes', weight: 2 })
    expect(ok.status, JSON.stringify(ok.body)).toBe(200)
    expect(ok.body).toMatchObject({ id, grade: '5AS', subject: 'physique', title: 'Les ondes', weight: 2 })
    const [audit] = await db.sql`select details from public.ingestion_audit where reference_id = ${id} and details->>'trigger' = 'reference update'`
    expect(audit!.details.changes).toEqual({
      grade: { from: null, to: '5AS' },
      subject: { from: null, to: 'physique' },
      title: { from: 'Document', to: 'Les ondes' },
      weight: { from: 0, to: 2 },
    })
    expect(audit!.details.by).toBeTruthy()

    const queued = await call('POST', `/admin/ingest/${id}`)
    expect(queued.status).toBe(202)
  })

  it('ingests with the new values, and then refuses to change what the vectors carry', async () => {
    const id = refs['/f/a.pdf']!.id
    for (let i = 0; i < 3; i++) await call('POST', '/admin/jobs/dispatch')
    await t.deps.background.idle()
    const [doc] = await db.sql`select id, status, vectordb_namespace from public.documents where reference_id = ${refs['/f/c.pdf']!.id}`
    expect(doc).toMatchObject({ status: 'ready', vectordb_namespace: 'grade-5as-physique' })
    const [ready] = await db.sql`select id, status from public.documents where reference_id = ${id}`
    expect(ready!.status).toBe('ready')
    const refused = await call('PATCH', `/admin/references/${id}`, { subject: 'histoire' })
    expect(refused.status).toBe(409)
    expect(refused.body.message).toContain(`DELETE /admin/documents/${ready!.id}`)
    // what the vectors do not carry can change
    const title = await call('PATCH', `/admin/references/${id}`, { title: 'Le fleuve' })
    expect(title.status).toBe(200)
    const [after] = await db.sql`select title from public.documents where id = ${ready!.id}`
    expect(after!.title).toBe('Le fleuve')
  })
})

describe('npm run admin -- references set', () => {
  it('fixes a reference through the API', async () => {
    const url = `http://${portal.url.split('//')[1]}/f/d.pdf`
    const [ref] = await db
      .sql`insert into public.curriculum_references (source, pdf_source, source_url, language) values ('markup', ${url}, ${url}, 'fr') returning id`
    const gw = await startGateway({
      config: testConfig({ LOG_LEVEL: 'silent', EXPIRY_INTERVAL_SECONDS: '0' }),
      sql: db.connect(2),
      port: 0,
      deps: { logs: createLogRoot({ level: 'silent' }), sources: [] },
    })
    try {
      const token = await apiKey(LOCAL_JWT_SECRET, 'service_role')
      const { stdout } = await run(process.execPath, [
        `${root}scripts/admin.ts`,
        'references',
        'set',
        ref!.id as string,
        '--grade',
        '6C',
        '--subject',
        'chimie',
        '--url',
        gw.url,
        '--token',
        token,
      ], { cwd: root })
      expect(stdout).toContain('grade 6C, subject chimie')
      const [row] = await db.sql`select grade, subject from public.curriculum_references where id = ${ref!.id}`
      expect(row).toEqual({ grade: '6C', subject: 'chimie' })
      const usage = await run(process.execPath, [`${root}scripts/admin.ts`, 'references', 'set', ref!.id as string, '--url', gw.url, '--token', token], {
        cwd: root,
      }).catch((e: { stderr: string; code: number }) => e)
      expect((usage as { code: number }).code).not.toBe(0)
      expect((usage as { stderr: string }).stderr).toContain('--grade')
    } finally {
      await gw.close(1000)
    }
  })
})
