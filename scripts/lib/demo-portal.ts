// The bundled demo curriculum portal: listing pages with pagination and curriculum PDFs generated from
// demo/curriculum.json (pdfkit; French in DejaVu Sans, Arabic in the Amiri font; the lessons marked scanned as page images with
// no text layer) the first time they are needed, kept under
// DATA_DIR/demo-portal/<hash of the lessons>/ so a change of the text regenerates them. Served by the
// local gateway at /demo-portal (DEMO_PORTAL); the "demo" scraper source points at it.
import { mkdir, readFile, rename, stat, writeFile } from 'node:fs/promises'
import { createHash } from 'node:crypto'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Hono } from 'hono'
import { makePdf, makeScannedPdf } from './pdf.ts'

export const DEMO_PORTAL_BASE = '/demo-portal'
export const CURRICULUM_FILE = fileURLToPath(new URL('../../demo/curriculum.json', import.meta.url))

export interface Lesson {
  id: string
  path: string
  link: string
  language?: 'fr' | 'ar'
  pages?: string[]
  near_duplicate_of?: string
  /** a scan: the typeset pages rendered and put back as images, no text layer */
  scanned?: boolean
  /** degrees the scan's pages lie askew (clockwise) */
  skew?: number
  replace?: [string, string][]
}

export interface Curriculum {
  title: string
  listing_pages: string[][]
  lessons: Lesson[]
}

export interface DemoPortal {
  /** the Hono app to mount at /demo-portal */
  app: Hono
  /** every PDF's path under the portal, e.g. fichiers/4AS/mathematiques/equations-premier-degre.pdf */
  files: string[]
  dir: string
}

/** A lesson's pages and language, near-duplicates resolved. */
export function resolveLesson(lesson: Lesson, byId: Map<string, Lesson>): { pages: string[]; language: 'fr' | 'ar' } {
  if (!lesson.near_duplicate_of) return { pages: lesson.pages ?? [], language: lesson.language ?? 'fr' }
  const original = byId.get(lesson.near_duplicate_of)
  if (!original) throw new Error(`demo lesson ${lesson.id}: unknown near_duplicate_of ${lesson.near_duplicate_of}`)
  const base = resolveLesson(original, byId)
  const pages = base.pages.map((p) => (lesson.replace ?? []).reduce((text, [from, to]) => text.replace(from, to), p))
  return { pages, language: base.language }
}

/** A lesson's PDF as the portal serves it. */
export function lessonPdf(lesson: Lesson, byId: Map<string, Lesson>): Promise<Uint8Array> {
  const { pages, language } = resolveLesson(lesson, byId)
  return lesson.scanned
    ? makeScannedPdf(pages, { arabic: language === 'ar', dpi: 200, skew: lesson.skew ?? 0 })
    : makePdf(pages, { arabic: language === 'ar', rtl: true, title: lesson.link })
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(() => true, () => false)
}

/** Writes the PDFs that are missing (atomically: a temporary file, then a rename). */
/** onMaking: told how many PDFs are missing before they are made (on the first start, some 10 s). */
export async function buildDemoPortal(dataDir: string, onMaking?: (missing: number) => void): Promise<DemoPortal> {
  const raw = await readFile(CURRICULUM_FILE, 'utf8')
  const curriculum = JSON.parse(raw) as Curriculum
  const byId = new Map(curriculum.lessons.map((l) => [l.id, l]))
  const dir = join(dataDir, 'demo-portal', createHash('sha256').update(raw).digest('hex').slice(0, 12))
  const missing = []
  for (const lesson of curriculum.lessons) if (!(await exists(join(dir, lesson.path)))) missing.push(lesson)
  if (missing.length > 0) onMaking?.(missing.length)
  for (const lesson of missing) {
    const target = join(dir, lesson.path)
    const pdf = await lessonPdf(lesson, byId)
    await mkdir(dirname(target), { recursive: true })
    const tmp = `${target}.${process.pid}.tmp`
    await writeFile(tmp, pdf)
    await rename(tmp, target)
  }

  const escape = (s: string) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!)
  const listing = (n: number) => {
    const ids = curriculum.listing_pages[n - 1]
    if (!ids) return null
    const items = ids
      .map((id) => byId.get(id)!)
      .map((l) => `<li><a href="${DEMO_PORTAL_BASE}/${escape(l.path)}">${escape(l.link)}</a></li>`)
      .join('\n      ')
    const prev = n > 1 ? `<a rel="prev" href="page${n - 1}.html">Page précédente</a>` : ''
    const next = n < curriculum.listing_pages.length ? `<a rel="next" href="page${n + 1}.html">Page suivante</a>` : ''
    return `<!doctype html>
<html lang="fr"><head><meta charset="utf-8"><title>${escape(curriculum.title)} — page ${n}</title></head>
<body>
  <h1>${escape(curriculum.title)}</h1>
  <ul>
      ${items}
  </ul>
  <nav>${prev} ${next}</nav>
</body></html>`
  }

  const app = new Hono()
  app.get('/', (c) => c.redirect(`${DEMO_PORTAL_BASE}/programmes/page1.html`))
  app.get('/programmes/:page{page[0-9]+\\.html}', (c) => {
    const html = listing(Number(c.req.param('page').replace(/\D/g, '')))
    return html ? c.html(html) : c.text('not found', 404)
  })
  const files = curriculum.lessons.map((l) => l.path)
  app.get('/fichiers/*', async (c) => {
    const path = c.req.path.slice(c.req.path.indexOf('/fichiers/') + 1)
    if (!files.includes(path)) return c.text('not found', 404)
    const bytes = await readFile(join(dir, path))
    return c.body(new Uint8Array(bytes), 200, { 'content-type': 'application/pdf', 'content-length': String(bytes.byteLength) })
  })
  return { app, files, dir }
}
