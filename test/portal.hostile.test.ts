// A curriculum portal the scraper has never seen, on loopback: grades and subjects said only by the
// headings above its lists, broken and redirected links, PDFs served under the wrong type, a link broken
// on one sync and mended by the next. What the runs report and what the catalogue ends up holding.
import { readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { createTestApp, json, type TestApp } from './helpers/app.ts'
import { bearer } from './helpers/tokens.ts'
import { apiKey } from '../functions-shared/lib/keys.ts'
import { LOCAL_JWT_SECRET } from '../functions-shared/config.ts'
import { createOfflineEmbedder } from '../functions-shared/ai/offline-embedder.ts'
import { makePdf } from '../scripts/lib/pdf.ts'
import { AR_LESSON, FR_LESSON, FR_LESSON_NEAR, PHYSICS_LESSON } from './helpers/portal.ts'
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

const pdf = (bytes: Uint8Array, type = 'application/pdf') => (res: import('node:http').ServerResponse) =>
  void res.writeHead(200, { 'content-type': type }).end(Buffer.from(bytes))
const html = (body: string) => (res: import('node:http').ServerResponse) =>
  void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(
    `<!doctype html><html lang="fr"><head><meta charset="utf-8"><title>Ressources</title></head><body>${body}</body></html>`,
  )

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
  t = createTestApp({
    sql: db.sql,
    env: { FETCH_ALLOW_LOOPBACK: 'true', FETCH_TIMEOUT_MS: '5000', FETCH_ALLOWED_HOSTS: new URL(url).host },
    deps: { resolveHost: resolveHostNode, connectGuard: connectGuardNode, embedder: createOfflineEmbedder(), sleep: async () => {} },
  })
})
afterAll(async () => {
  await t?.deps.background.idle()
  server?.closeAllConnections()
  await new Promise((r) => server?.close(r))
  await db?.close()
})

const sync = (source: Record<string, unknown>) =>
  syncSource({ ctx: { deps: t.deps, requestId: String(source.name) }, input: SourceSchema.parse({ allowed_hosts: [new URL(url).host], ...source }) })
const references = async (source: string) =>
  Object.fromEntries(
    (await db
      .sql`select r.pdf_source, r.grade, r.subject, r.title, r.status, j.status as job from public.curriculum_references r left join public.ingestion_jobs j on j.reference_id = r.id where r.source = ${source}`)
      .map((r) => [
        new URL(r.pdf_source as string).pathname,
        r,
      ]),
  )

describe('a portal that says grade and subject only in the headings above its lists', () => {
  it('gives each lesson the grade and subject of the headings it sits under, and queues it', async () => {
    routes.set(
      '/ressources/index.html',
      html(`
      <h1>Ressources pédagogiques</h1>
      <h2>Cinquième année secondaire (5AS)</h2>
        <h3>Mathématiques</h3>
        <ul><li><a href="/dl/101.pdf">Leçon 6 : proportionnalité et pourcentages</a></li></ul>
        <h3>Géographie</h3>
        <ul><li><a href="/dl/102.pdf">Leçon 4 : le fleuve Sénégal</a></li></ul>
      <h2>Sixième année secondaire (6AS)</h2>
        <div class="bloc"><h3>Histoire</h3>
          <ul><li><a href="/dl/103.pdf">Chapitre 5 : l'indépendance</a></li></ul></div>
        <ul><li><a href="/dl/104.pdf">Chapitre 6 : l'État moderne</a></li></ul>`),
    )
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

describe('a portal with broken links, wrong types and files that are no lessons', () => {
  const LISTING = `
    <h2>Physique-chimie 7C</h2>
    <ul>
      <li><a href="/pc/absent.pdf">Leçon 1 (retirée)</a></li>
      <li><a href="/pc/gone.pdf">Leçon 2 (supprimée)</a></li>
      <li><a href="/pc/error.pdf">Leçon 3 : lois de Newton</a></li>
      <li><a href="/pc/loop.pdf">Leçon 4 (boucle)</a></li>
      <li><a href="/pc/elsewhere.pdf">Leçon 5 (hébergée ailleurs)</a></li>
      <li><a href="/pc/login.pdf">Leçon 6 : l'énergie</a></li>
      <li><a href="/pc/page.pdf">Leçon 7 (page)</a></li>
      <li><a href="/pc/empty.pdf">Leçon 8 (vide)</a></li>
      <li><a href="/pc/cut.pdf">Leçon 9 (tronquée)</a></li>
      <li><a href="/pc/locked.pdf">Leçon 10 (protégée)</a></li>
      <li><a href="/pc/octets.pdf">Cinématique du point</a></li>
      <li><a href="/pc/typed-html.pdf">Acides et bases</a></li>
      <li><a href="/pc/get.pdf?id=7&amp;dl=1">Acides faibles</a></li>
      <li><a href="../pc/fragment.pdf#page=2">La respiration cellulaire</a></li>
    </ul>`
  const source = () => ({
    name: 'broken',
    index_urls: [`${url}/physique/liste.html`],
    rules: [{ field: 'grade', from: 'heading', pattern: '(\\d+C)$' }, { field: 'subject', from: 'heading', pattern: '^(\\S+)' }],
  })

  it('registers every lesson it can read, and names each link it could not, with why', async () => {
    routes.set('/physique/liste.html', html(LISTING))
    routes.set('/pc/gone.pdf', (res) => void res.writeHead(410).end('gone'))
    routes.set('/pc/error.pdf', (res) => void res.writeHead(500).end('database down'))
    routes.set('/pc/loop.pdf', (res) => void res.writeHead(302, { location: '/pc/loop.pdf' }).end())
    routes.set('/pc/elsewhere.pdf', (res) => void res.writeHead(302, { location: 'http://127.0.0.2:9/pc/elsewhere.pdf' }).end())
    routes.set('/pc/login.pdf', (res) => void res.writeHead(302, { location: '/connexion.html' }).end())
    // the portal's template links its user guide on every page, the login page too: no lesson's PDF
    routes.set('/connexion.html', html('<form><input name="login"></form><footer><a href="/aide/guide.pdf">Guide</a></footer>'))
    routes.set('/aide/guide.pdf', pdf(await makePdf([lesson('svt-6c-muscle').pages[0]!, lesson('maths-7c').pages.at(-1)!])))
    routes.set('/pc/page.pdf', html('<p>Document en cours de mise à jour</p>'))
    routes.set('/pc/empty.pdf', pdf(new Uint8Array()))
    routes.set('/pc/cut.pdf', pdf((await pdfOf('physique-7c-energie')).subarray(0, 1500)))
    routes.set('/pc/locked.pdf', pdf(new Uint8Array(readFileSync(new URL('./fixtures/encrypted/aes-256-user-password.pdf', import.meta.url)))))
    routes.set('/pc/octets.pdf', pdf(await pdfOf('physique-6c-cinematique'), 'application/octet-stream'))
    routes.set('/pc/typed-html.pdf', pdf(await pdfOf('chimie-7d-acides-bases'), 'text/html'))
    routes.set('/pc/get.pdf', pdf(await pdfOf('chimie-7d-acides-faibles')))
    routes.set('/pc/fragment.pdf', pdf(await pdfOf('svt-6c-respiration')))

    const result = await sync(source())
    expect(result).toMatchObject({ status: 'completed', found_count: 14, new_count: 4, duplicates: 0, quality_failed: 5, errors: 5 })
    const refs = await references('broken')
    expect(Object.keys(refs).sort()).toEqual(['/pc/fragment.pdf', '/pc/get.pdf', '/pc/octets.pdf', '/pc/typed-html.pdf'])
    expect(Object.values(refs).every((r) => r.grade === '7C' && r.subject === 'physique-chimie' && r.job === 'queued')).toBe(true)
    const [run] = await db.sql`select error_message from public.scrape_runs where id = ${result.run_id}`
    const message = run!.error_message as string
    // every link that gave no lesson is named, with what it gave
    const named: [string, RegExp][] = [
      ['absent.pdf', /HTTP 404/],
      ['gone.pdf', /HTTP 410/],
      ['error.pdf', /HTTP 500/],
      ['loop.pdf', /too many redirects/],
      ['elsewhere.pdf', /blocked destination/],
      ['login.pdf', /not a PDF \(served as text\/html/],
      ['page.pdf', /not a PDF \(served as text\/html/],
      ['empty.pdf', /not a PDF/],
      ['cut.pdf', /unreadable PDF/],
      ['locked.pdf', /encrypted with a password/],
    ]
    for (const [file, why] of named) {
      const said = message.split('; ').find((part) => part.includes(`/pc/${file}:`))
      expect(said, `${file} named in: ${message}`).toBeDefined()
      expect(said).toMatch(why)
    }
  })

  it('picks up, on the next sync, the links that were broken and now give a lesson', async () => {
    routes.set('/pc/error.pdf', pdf(await pdfOf('physique-7c-newton')))
    routes.set('/pc/login.pdf', pdf(await pdfOf('physique-7c-energie')))
    const result = await sync(source())
    expect(result).toMatchObject({ status: 'completed', found_count: 14, new_count: 2, known: 4, quality_failed: 4, errors: 4 })
    const refs = await references('broken')
    expect(refs['/pc/error.pdf']).toMatchObject({ grade: '7C', subject: 'physique-chimie', status: 'discovered', job: 'queued' })
    expect(refs['/pc/login.pdf']).toMatchObject({ grade: '7C', subject: 'physique-chimie', status: 'discovered', job: 'queued' })
  })
})

describe('a listing whose rows say grade and subject in cells of their own', () => {
  it('reads the row as its cells, apart: "5AS" and "Mathématiques" are words a rule can find', async () => {
    routes.set(
      '/tableau/index.html',
      html(`<table>
      <tr><td>5AS</td><td>Mathématiques</td><td><a href="/tableau/a.pdf">Télécharger</a></td></tr>
      <tr><td>6AS</td><td>Histoire</td><td><a href="/tableau/b.pdf">Télécharger</a></td></tr>
      </table>
      <ul><li><p>7C</p><p>Physique</p><div><a href="/tableau/c.pdf">Télécharger</a></div></li></ul>`),
    )
    routes.set('/tableau/a.pdf', pdf(await pdfOf('maths-7c')))
    routes.set('/tableau/b.pdf', pdf(await pdfOf('svt-5c')))
    routes.set('/tableau/c.pdf', pdf(await pdfOf('physique-7c')))
    const result = await sync({
      name: 'cells',
      index_urls: [`${url}/tableau/index.html`],
      rules: [
        { field: 'grade', from: 'context', pattern: '\\b(\\d+(?:AS|C|D))\\b' },
        { field: 'subject', from: 'context', pattern: '\\b(Mathématiques|Histoire|Physique)\\b' },
      ],
    })
    expect(result).toMatchObject({ status: 'completed', found_count: 3, new_count: 3, needs_metadata: 0 })
    const refs = await references('cells')
    expect(refs['/tableau/a.pdf']).toMatchObject({ grade: '5AS', subject: 'mathematiques', job: 'queued' })
    expect(refs['/tableau/b.pdf']).toMatchObject({ grade: '6AS', subject: 'histoire', job: 'queued' })
    // blocks of a list item are apart as well
    expect(refs['/tableau/c.pdf']).toMatchObject({ grade: '7C', subject: 'physique', job: 'queued' })
  })
})

describe('a portal that writes one grade several ways', () => {
  it('stores the one level whatever the spelling: "5ème AS", "5e AS", "5 AS", "5-as", "٥ AS" and "5AS" are 5AS', async () => {
    const spellings = ['5ème AS', '5e AS', '5 AS', '5-as', '5AS', '7ème C', '1ère AS', '٥ AS']
    const ids = ['maths-5as-statistiques', 'arabe-5as-tashbih', 'maths-4as', 'islam-4as', 'arabe-6as', 'islam-5as-zakat', 'histoire-7d', 'islam-5as-siyam']
    routes.set(
      '/niveaux/index.html',
      html(`<table><thead><tr><th>Niveau</th><th>Cours</th></tr></thead><tbody>${
        spellings
          .map((grade, i) =>
            `<tr><td>${grade}</td><td><a href="/niveaux/${i}.pdf" data-niveau="${grade}" data-matiere="Mathématiques">Cours ${i}</a></td></tr>`
          )
          .join('')
      }</tbody></table>`),
    )
    for (const [i, id] of ids.entries()) routes.set(`/niveaux/${i}.pdf`, pdf(await pdfOf(id)))
    const result = await sync({
      name: 'spellings',
      index_urls: [`${url}/niveaux/index.html`],
      rules: [
        { field: 'grade', from: 'attr', attr: 'data-niveau', pattern: '(.+)' },
        { field: 'subject', from: 'attr', attr: 'data-matiere', pattern: '(.+)' },
      ],
    })
    expect(result).toMatchObject({ status: 'completed', found_count: 8, errors: 0 })
    const refs = await references('spellings')
    expect(Object.keys(refs).sort().map((p) => [p, refs[p]!.grade])).toEqual([
      ['/niveaux/0.pdf', '5AS'],
      ['/niveaux/1.pdf', '5AS'],
      ['/niveaux/2.pdf', '5AS'],
      ['/niveaux/3.pdf', '5AS'],
      ['/niveaux/4.pdf', '5AS'],
      ['/niveaux/5.pdf', '7C'],
      ['/niveaux/6.pdf', '1AS'],
      // Arabic-Indic digits are digits: "٥ AS" was stored as "AS", a grade of no level
      ['/niveaux/7.pdf', '5AS'],
    ])
    expect(new Set(Object.values(refs).map((r) => r.subject))).toEqual(new Set(['mathematiques']))
  })
})

describe('one lesson filed under two grades, and a second edition', () => {
  it('ingests the lesson for each grade it is filed under; the second edition of a lesson of one grade is its duplicate', async () => {
    const commune = await pdfOf('civique-5as-commune')
    const peche = lesson('svt-6c-muscle')
    routes.set(
      '/civique/index.html',
      html(`
      <ul>
        <li><a href="/civique/5AS/education-civique/la-commune.pdf">La commune (5AS)</a></li>
        <li><a href="/civique/6AS/education-civique/la-commune-rappel.pdf">La commune, rappel (6AS)</a></li>
        <li><a href="/civique/6C/sciences-naturelles/muscle.pdf">Le muscle (6C)</a></li>
        <li><a href="/civique/6C/sciences-naturelles/muscle-2e-edition.pdf">Le muscle, 2e édition (6C)</a></li>
        <li><a href="/civique/sans-niveau/muscle-copie.pdf">Copie</a></li>
      </ul>`),
    )
    routes.set('/civique/5AS/education-civique/la-commune.pdf', pdf(commune))
    // the same file, linked again under another grade
    routes.set('/civique/6AS/education-civique/la-commune-rappel.pdf', pdf(commune, 'application/octet-stream'))
    routes.set('/civique/6C/sciences-naturelles/muscle.pdf', pdf(await makePdf(peche.pages)))
    const edited = peche.pages.map((p, i) => (i === 0 ? p.replace(/\bLe\b/, 'Ce') : p))
    routes.set('/civique/6C/sciences-naturelles/muscle-2e-edition.pdf', pdf(await makePdf(edited)))
    routes.set('/civique/sans-niveau/muscle-copie.pdf', pdf(await makePdf(peche.pages)))
    const result = await sync({
      name: 'two-grades',
      index_urls: [`${url}/civique/index.html`],
      rules: [
        { field: 'grade', from: 'url', pattern: '/civique/(\\d+(?:AS|C))/' },
        { field: 'subject', from: 'url', pattern: '/civique/\\d+(?:AS|C)/([a-z-]+)/' },
      ],
    })
    expect(result).toMatchObject({ status: 'completed', found_count: 5, new_count: 3, duplicates: 2, errors: 0 })
    const refs = await references('two-grades')
    expect(refs['/civique/5AS/education-civique/la-commune.pdf']).toMatchObject({ grade: '5AS', status: 'discovered', job: 'queued' })
    expect(refs['/civique/6AS/education-civique/la-commune-rappel.pdf']).toMatchObject({ grade: '6AS', status: 'discovered', job: 'queued' })
    expect(refs['/civique/6C/sciences-naturelles/muscle.pdf']).toMatchObject({ grade: '6C', status: 'discovered', job: 'queued' })
    expect(refs['/civique/6C/sciences-naturelles/muscle-2e-edition.pdf']).toMatchObject({ grade: '6C', status: 'duplicate', job: null })
    // a copy that says no grade adds nothing: a duplicate
    expect(refs['/civique/sans-niveau/muscle-copie.pdf']).toMatchObject({ grade: null, status: 'duplicate', job: null })
  })
})

describe('a portal that names subjects its own way', () => {
  it('stores each subject as the catalogue names it: SVT, SN, "Sciences naturelles" and العلوم الطبيعية are sciences-naturelles', async () => {
    const subjects: [string, string][] = [
      ['SVT', 'sciences-naturelles'],
      ['SN', 'sciences-naturelles'],
      ['Sciences naturelles', 'sciences-naturelles'],
      ['العلوم الطبيعية', 'sciences-naturelles'],
      ['Maths', 'mathematiques'],
      ['التربية الإسلامية', 'education-islamique'],
      ['PC', 'physique-chimie'],
    ]
    const texts = [
      [FR_LESSON],
      [PHYSICS_LESSON],
      [FR_LESSON_NEAR],
      [AR_LESSON],
      lesson('histoire-7d-muqawama').pages,
      lesson('histoire-7d-mahadir').pages,
      lesson('arabe-5as-istiara').pages,
    ]
    routes.set(
      '/matieres/index.html',
      html(`<table><thead><tr>${subjects.map(([name]) => `<th>${name}</th>`).join('')}</tr></thead><tbody><tr>${
        subjects
          .map((_, i) => `<td><a href="/matieres/${i}.pdf">Leçon</a></td>`)
          .join('')
      }</tr></tbody></table>`),
    )
    for (const [i, pages] of texts.entries()) routes.set(`/matieres/${i}.pdf`, pdf(await makePdf(pages, { arabic: /[\u0600-\u06ff]/u.test(pages.join('')) })))
    const result = await sync({
      name: 'subjects',
      index_urls: [`${url}/matieres/index.html`],
      defaults: { grade: '5AS' },
      rules: [{ field: 'subject', from: 'column_header', pattern: '(.+)' }],
    })
    expect(result).toMatchObject({ status: 'completed', found_count: 7, errors: 0 })
    const refs = await references('subjects')
    expect(subjects.map((_, i) => refs[`/matieres/${i}.pdf`]?.subject)).toEqual(subjects.map(([, slug]) => slug))
  })
})

describe('a portal that links its PDFs through a viewer or a download page', () => {
  // texts of their own: a page of one lesson and a page of another
  const mixed = (a: string, b: string) => [lesson(a).pages[0]!, lesson(b).pages.at(-1)!]
  const source = () => ({ name: 'viewer', index_urls: [`${url}/viewer/index.html`], defaults: { grade: '6C', subject: 'physique' } })

  it('downloads the PDF a viewer link names, or the one PDF a download page leads to, and says what a page of several PDFs is', async () => {
    routes.set(
      '/viewer/index.html',
      html(`<ul>
      <li><a href="/pdfjs/web/viewer.html?file=%2Fstock%2Fa.pdf">Cinématique (lire en ligne)</a></li>
      <li><a href="/telecharger/b.pdf">Newton (téléchargement)</a></li>
      <li><a href="/telecharger/c.pdf">Énergie (téléchargement)</a></li>
      <li><a href="/telecharger/d.pdf">Dossier</a></li>
    </ul>`),
    )
    // the viewer's page names no PDF: it reads it from its query with a script
    routes.set('/pdfjs/web/viewer.html', html('<div id="viewerContainer"></div><script src="viewer.mjs"></script>'))
    routes.set('/telecharger/b.pdf', html('<meta http-equiv="refresh" content="0; url=/stock/b.pdf"><p>Le téléchargement va commencer.</p>'))
    routes.set('/telecharger/c.pdf', html('<h1>Énergie</h1><iframe src="../stock/c.pdf" width="100%"></iframe><a href="/">Accueil</a>'))
    routes.set('/telecharger/d.pdf', html('<a href="/stock/d1.pdf">Cours</a> <a href="/stock/d2.pdf">Exercices</a>'))
    routes.set('/stock/a.pdf', pdf(await makePdf(mixed('physique-6c-cinematique', 'svt-6c-respiration'))))
    routes.set('/stock/b.pdf', pdf(await makePdf(mixed('physique-7c-newton', 'chimie-7d-acides-bases'))))
    routes.set('/stock/c.pdf', pdf(await makePdf(mixed('physique-7c-energie', 'histoire-6as-etat'))))
    routes.set('/stock/d1.pdf', pdf(await makePdf(mixed('maths-7c', 'geographie-5as-fleuve-senegal'))))
    const result = await sync(source())
    expect(result).toMatchObject({ status: 'completed', found_count: 4, new_count: 3, quality_failed: 1, errors: 0 })
    const refs = await references('viewer')
    expect(Object.keys(refs).sort()).toEqual(['/stock/a.pdf', '/stock/b.pdf', '/stock/c.pdf'])
    expect(Object.values(refs).every((r) => r.status === 'discovered' && r.job === 'queued')).toBe(true)
    const [run] = await db.sql`select error_message from public.scrape_runs where id = ${result.run_id}`
    expect(run!.error_message).toMatch(/\/telecharger\/d\.pdf: not a PDF \(served as text\/html[^)]*\): the page links 2 PDFs/)
  })

  it('knows those PDFs on the next sync', async () => {
    const result = await sync(source())
    expect(result).toMatchObject({ status: 'completed', found_count: 4, new_count: 0, known: 3, duplicates: 0 })
  })
})

describe('a portal in Arabic that lists lessons written in French', () => {
  it('stores the language the PDF is written in, not the one its link text is in', async () => {
    // the demo portal's rule: a link text in Arabic script makes the lesson Arabic
    routes.set(
      '/ar/index.html',
      html(`<ul dir="rtl">
      <li><a href="/ar/maths.pdf">الرياضيات — الدرس الثالث</a></li>
      <li><a href="/ar/fiqh.pdf">الفقه — الدرس الأول</a></li>
      <li><a href="/ar/arabic-by-french-link.pdf">Leçon d'arabe</a></li>
    </ul>`),
    )
    routes.set('/ar/maths.pdf', pdf(await makePdf([lesson('chimie-7d-acides-faibles').pages[0]!, lesson('svt-6c-muscle').pages.at(-1)!])))
    routes.set(
      '/ar/fiqh.pdf',
      pdf(await makePdf([lesson('islam-5as-siyam').pages[0]!, lesson('arabe-5as-istiara').pages.at(-1)!], { arabic: true, rtl: true })),
    )
    routes.set(
      '/ar/arabic-by-french-link.pdf',
      pdf(await makePdf([lesson('histoire-7d-mahadir').pages[0]!, lesson('islam-4as').pages.at(-1)!], { arabic: true, rtl: true })),
    )
    const result = await sync({
      name: 'arabic-portal',
      index_urls: [`${url}/ar/index.html`],
      defaults: { grade: '7D', subject: 'chimie', language: 'fr' },
      rules: [{ field: 'language', from: 'text', pattern: '[\\u0600-\\u06FF]', value: 'ar' }],
    })
    expect(result).toMatchObject({ status: 'completed', found_count: 3, new_count: 3, errors: 0 })
    const rows = await db.sql`select pdf_source, language from public.curriculum_references where source = 'arabic-portal'`
    expect(Object.fromEntries(rows.map((r) => [new URL(r.pdf_source as string).pathname, r.language]))).toEqual({
      '/ar/maths.pdf': 'fr',
      '/ar/fiqh.pdf': 'ar',
      '/ar/arabic-by-french-link.pdf': 'ar',
    })
  })
})

describe('a portal that adds a new query string to its links on every page view', () => {
  it('knows the lesson on the next sync instead of registering it again as its own duplicate', async () => {
    let views = 0
    routes.set('/cache/index.html', (res) => html(`<a href="/cache/5AS/histoire/lecon.pdf?v=${++views}">Histoire 5AS</a>`)(res))
    routes.set(
      '/cache/5AS/histoire/lecon.pdf',
      pdf(await makePdf([lesson('histoire-6as-etat').pages[0]!, lesson('islam-4as').pages.at(-1)!], { arabic: true })),
    )
    const source = {
      name: 'cache-buster',
      index_urls: [`${url}/cache/index.html`],
      rules: [{ field: 'grade', from: 'url', pattern: '/(\\d+AS)/' }, { field: 'subject', from: 'url', pattern: '/\\d+AS/([a-z]+)/' }],
    }
    expect(await sync(source)).toMatchObject({ status: 'completed', found_count: 1, new_count: 1 })
    for (let run = 0; run < 2; run++) expect(await sync(source)).toMatchObject({ status: 'completed', found_count: 1, new_count: 0, duplicates: 0, known: 1 })
    const rows = await db.sql`select status from public.curriculum_references where source = 'cache-buster'`
    expect(rows.map((r) => r.status)).toEqual(['discovered'])
  })
})

describe('a portal whose links all say "Télécharger"', () => {
  it('titles each lesson with what its row or list item says, not with the word of its link', async () => {
    routes.set(
      '/titres/index.html',
      html(`<table>
      <tr><td>Leçon 3 : les lois de Newton</td><td><a href="/titres/a.pdf">Télécharger</a></td></tr>
      <tr><td>Leçon 4 : l'énergie</td><td><a href="/titres/b.pdf"><img src="/pdf.png" alt="PDF"></a></td></tr>
      </table>
      <ul><li>الدرس الأول: أركان الإسلام <a href="/titres/c.pdf">تحميل</a></li>
      <li><a href="/titres/d.pdf">Les acides faibles</a> — <a href="/titres/e.pdf">Télécharger</a></li></ul>`),
    )
    routes.set('/titres/a.pdf', pdf(await makePdf([lesson('physique-7c').pages[0]!, lesson('chimie-7d-acides-bases').pages.at(-1)!])))
    routes.set('/titres/b.pdf', pdf(await makePdf([lesson('svt-5c').pages[0]!, lesson('histoire-6as-independance').pages.at(-1)!])))
    routes.set('/titres/c.pdf', pdf(await makePdf([lesson('islam-5as-zakat').pages[0]!, lesson('arabe-6as').pages.at(-1)!], { arabic: true })))
    routes.set('/titres/d.pdf', pdf(await makePdf([lesson('maths-5as-pourcentages').pages[0]!, lesson('physique-6c-cinematique').pages.at(-1)!])))
    routes.set('/titres/e.pdf', pdf(await makePdf([lesson('maths-5as-statistiques').pages[0]!, lesson('svt-6c-respiration').pages.at(-1)!])))
    const result = await sync({ name: 'titles', index_urls: [`${url}/titres/index.html`], defaults: { grade: '7C', subject: 'physique' } })
    expect(result).toMatchObject({ status: 'completed', found_count: 5, errors: 0 })
    const rows = await db.sql`select pdf_source, title from public.curriculum_references where source = 'titles'`
    expect(Object.fromEntries(rows.map((r) => [new URL(r.pdf_source as string).pathname, r.title]))).toEqual({
      '/titres/a.pdf': 'Leçon 3 : les lois de Newton',
      '/titres/b.pdf': "Leçon 4 : l'énergie",
      '/titres/c.pdf': 'الدرس الأول: أركان الإسلام',
      '/titres/d.pdf': 'Les acides faibles',
      // an item with two links says whose title is whose no better than the link: its word stays
      '/titres/e.pdf': 'Télécharger',
    })
  })
})

describe('the catalogue the portal leaves', () => {
  it('ingests every queued lesson, whatever type or address it was served under, and lists each level once', async () => {
    const service = bearer(await apiKey(LOCAL_JWT_SECRET, 'service_role'))
    for (let i = 0; i < 60; i++) {
      const res = await t.request('/admin/jobs/dispatch', { method: 'POST', headers: service })
      const body = await json(res)
      if (body.status === 'idle') break
    }
    await t.deps.background.idle()
    const jobs = await db
      .sql`select r.pdf_source, j.status, j.error_message from public.ingestion_jobs j join public.curriculum_references r on r.id = j.reference_id where j.status <> 'ready' and not (j.status = 'queued' and j.needs_ocr)`
    expect(jobs.map((j) => [j.pdf_source, j.status, j.error_message])).toEqual([])
    const all = await json(await t.request('/curriculum/textbooks'))
    // each level once, as the curriculum writes it, however the portal spelt it
    expect(all.levels).toEqual(['1AS', '5AS', '6AS', '6C', '7C', '7D'])
    const served = await db
      .sql`select r.pdf_source from public.documents d join public.curriculum_references r on r.id = d.reference_id where d.status = 'ready'`
    const paths = served.map((r) => new URL(r.pdf_source as string).pathname + new URL(r.pdf_source as string).search)
    // served as application/octet-stream, as text/html, with a query string, linked with a fragment and ../
    expect(paths).toEqual(expect.arrayContaining(['/pc/octets.pdf', '/pc/typed-html.pdf', '/pc/get.pdf?id=7&dl=1', '/pc/fragment.pdf']))
  }, 240_000)
})
