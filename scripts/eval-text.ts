// `npm run eval:text`: is a lesson stored as it is written? Each PDF is read as the pipeline reads it
// (readPdf with the recognizer where a page needs it, running lines and broken words joined, the
// canonical text), and its sentences are looked for in what would be stored:
// - demo/*: the demo curriculum's born-digital lessons (pdfkit), each page's sentences;
// - science/*: lessons typeset by pdfTeX (OT1 and T1 fonts), LuaLaTeX, LibreOffice Writer and XeLaTeX
//   (Arabic with formulas), test/fixtures/science/expected.json: every sentence as the page shows it,
//   formulas in the documented forms (functions-shared/pdf/formulas.ts), and each formula alone
//   (compared without spaces);
// - typeset/*: the French and Arabic pages of test/fixtures/typeset/ (other typesetters' text layers),
//   whose sources type the apostrophe straight where TeX draws it curly (’ and ' compare equal there);
// - scans/*: the demo's scanned lessons, read by the recognizer: the character error rate of each page
//   against its source (spaces collapsed).
// A sentence counts when it stands in the stored text exactly (NFC, spaces collapsed). With --check, it
// exits 1 when a figure is below its floor in eval/text-floors.json (a character error rate above its
// ceiling); --json prints the figures as JSON. The sentences missed are printed, a few per set.
import { readFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { loadConfig } from '../functions-shared/config.ts'
import { type OcrEngine, readPdf, readPdfSettings } from '../functions-shared/pdf/read.ts'
import { canonicalize } from '../functions-shared/text/canonicalize.ts'
import { joinHyphenatedWords } from '../functions-shared/text/hyphenation.ts'
import { withoutRunningLines } from '../functions-shared/text/running-lines.ts'
import { type Curriculum, CURRICULUM_FILE, type Lesson, lessonPdf, resolveLesson } from './lib/demo-portal.ts'
import { createNodeOcr, defaultOcrConcurrency } from './lib/ocr.ts'
import { characterErrorRate } from '../test/helpers/scans.ts'

const root = fileURLToPath(new URL('..', import.meta.url))
const args = new Set(process.argv.slice(2))
const out = (line = '') => process.stdout.write(`${line}\n`)
const config = loadConfig({ OCR_MODE: 'auto' })

/** Text as compared: NFC, spaces collapsed. */
const plain = (text: string) => text.normalize('NFC').replace(/\s+/g, ' ').trim()
const sentencesOf = (page: string) => plain(page).split(/(?<=[.!?؟])\s+/).filter((s) => s.length > 0)

let engine: OcrEngine | undefined
const ocr =
  () => (engine ??= createNodeOcr({ concurrency: defaultOcrConcurrency(config.OCR_CONCURRENCY), dpi: config.OCR_DPI, pageDeadlineMs: 120_000, idleMs: 0 }))

/** The pages of a PDF as the pipeline would store them. */
async function stored(pdf: Uint8Array, language: 'fr' | 'ar'): Promise<string[]> {
  const read = await readPdf(pdf, { ...readPdfSettings(config), engine: ocr(), language })
  return joinHyphenatedWords(withoutRunningLines(read.pages)).map((p) => plain(canonicalize(p.text)))
}

interface Figures {
  sentences?: number
  formulas?: number
  cer?: number
}
const figures: Record<string, Figures> = {}
const rows: string[][] = []
const misses: string[] = []

/** Sentences (and formulas) looked for in the stored text of a PDF. */
async function measure(
  name: string,
  pdf: Uint8Array,
  language: 'fr' | 'ar',
  sentences: readonly string[],
  formulas: readonly string[] = [],
  apostrophes = false,
): Promise<void> {
  const unify = (t: string) => (apostrophes ? t.replace(/’/g, "'") : t)
  const text = unify((await stored(pdf, language)).join(' '))
  const missed = sentences.map(plain).filter((s) => !text.includes(unify(s)))
  const bare = text.replace(/\s+/g, '')
  const formulasMissed = formulas.filter((f) => !bare.includes(f.normalize('NFC').replace(/\s+/g, '')))
  const f: Figures = { sentences: (sentences.length - missed.length) / sentences.length }
  if (formulas.length > 0) f.formulas = (formulas.length - formulasMissed.length) / formulas.length
  figures[name] = f
  rows.push([
    name,
    `${sentences.length - missed.length}/${sentences.length}`,
    pct(f.sentences!),
    formulas.length > 0 ? `${formulas.length - formulasMissed.length}/${formulas.length}` : '',
    f.formulas === undefined ? '' : pct(f.formulas),
    '',
  ])
  for (const s of missed.slice(0, 4)) misses.push(`${name}  sentence: ${s}`)
  for (const s of formulasMissed.slice(0, 4)) misses.push(`${name}  formula:  ${s}`)
}

const pct = (x: number) => `${(x * 100).toFixed(1)} %`

// demo: the born-digital lessons, and the scans' character error rates
const curriculum = JSON.parse(await readFile(CURRICULUM_FILE, 'utf8')) as Curriculum
const byId = new Map<string, Lesson>(curriculum.lessons.map((l) => [l.id, l]))
const demo = { fr: { found: 0, total: 0 }, ar: { found: 0, total: 0 } }
const scans: Record<string, { errors: number; chars: number; pages: number }> = {}
for (const lesson of curriculum.lessons) {
  const { pages, language } = resolveLesson(lesson, byId)
  const pdf = await lessonPdf(lesson, byId)
  const read = await stored(pdf, language)
  if (lesson.scanned) {
    const s = (scans[language] ??= { errors: 0, chars: 0, pages: 0 })
    pages.forEach((page, i) => {
      const reference = plain(page)
      s.errors += characterErrorRate(reference, read[i] ?? '') * reference.length
      s.chars += reference.length
      s.pages++
    })
    continue
  }
  const text = read.join(' ')
  for (const sentence of pages.flatMap(sentencesOf)) {
    demo[language].total++
    if (text.includes(sentence)) demo[language].found++
    else if (misses.filter((m) => m.startsWith(`demo/${language}`)).length < 8) misses.push(`demo/${language}  sentence: ${sentence}`)
  }
}
for (const language of ['fr', 'ar'] as const) {
  const { found, total } = demo[language]
  figures[`demo/${language}`] = { sentences: found / total }
  rows.push([`demo/${language}`, `${found}/${total}`, pct(found / total), '', '', ''])
}

// lessons of other typesetters, with formulas
const science = JSON.parse(readFileSync(`${root}test/fixtures/science/expected.json`, 'utf8')) as Record<
  string,
  { typesetter: string; language: 'fr' | 'ar'; sentences: string[]; formulas: string[] }
>
for (const [file, want] of Object.entries(science)) {
  await measure(
    `science/${file.replace(/\.pdf$/, '')}`,
    new Uint8Array(readFileSync(`${root}test/fixtures/science/${file}`)),
    want.language,
    want.sentences,
    want.formulas,
  )
}

// the typesetters' pages of test/fixtures/typeset (fr.txt, ar.txt; the two-column page holds fr.txt twice)
const typeset = (name: string) => new Uint8Array(readFileSync(`${root}test/fixtures/typeset/${name}`))
const source = { fr: readFileSync(`${root}test/fixtures/typeset/fr.txt`, 'utf8'), ar: readFileSync(`${root}test/fixtures/typeset/ar.txt`, 'utf8') }
for (const name of ['pdflatex-t1-fr.pdf', 'gs-xelatex-fr.pdf', 'xelatex-twocolumn-fr.pdf']) {
  await measure(`typeset/${name.replace(/\.pdf$/, '')}`, typeset(name), 'fr', sentencesOf(source.fr), [], true)
}
for (
  const name of [
    'libreoffice-notonaskharabic.pdf',
    'libreoffice-amiri.pdf',
    'xelatex-amiri.pdf',
    'xelatex-notonaskharabic.pdf',
    'xelatex-notosansarabic.pdf',
    'chromium-notonaskharabic.pdf',
    'chromium-notosansarabic.pdf',
    'chromium-dejavusans.pdf',
    'fpdf2-amiri.pdf',
    'reportlab-amiri.pdf',
  ]
) {
  await measure(`typeset/${name.replace(/\.pdf$/, '')}`, typeset(name), 'ar', sentencesOf(source.ar))
}

for (const [language, s] of Object.entries(scans)) {
  figures[`scans/${language}`] = { cer: s.errors / s.chars }
  rows.push([`scans/${language}`, `${s.pages} page(s)`, '', '', '', pct(s.errors / s.chars)])
}
await engine?.close()

// born-digital, every typesetter: the sentences of demo/, science/ and typeset/ together
const bornDigital = Object.entries(figures).filter(([k]) => !k.startsWith('scans/'))
figures['born_digital'] = { sentences: bornDigital.reduce((sum, [, f]) => sum + (f.sentences ?? 0), 0) / bornDigital.length }

if (args.has('--json')) out(JSON.stringify(figures, null, 2))
else {
  const header = ['set', 'sentences', 'as written', 'formulas', 'in form', 'CER']
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
  for (const r of [header, ...rows]) out(r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd())
  out(`born-digital, mean of the sets: ${pct(figures['born_digital'].sentences!)}`)
  if (misses.length > 0) out(`\nmissed (a few per set):\n${misses.join('\n')}`)
}

if (args.has('--check')) {
  const floors = JSON.parse(readFileSync(`${root}eval/text-floors.json`, 'utf8')) as Record<string, Figures>
  const below: string[] = []
  for (const [key, want] of Object.entries(floors)) {
    if (key.startsWith('_')) continue
    const got = figures[key]
    for (const [metric, floor] of Object.entries(want) as [keyof Figures, number][]) {
      const value = got?.[metric]
      const fails = value === undefined || (metric === 'cer' ? value > floor : value < floor)
      if (fails) below.push(`${key} ${metric} ${value === undefined ? 'missing' : value.toFixed(3)} (${metric === 'cer' ? 'ceiling' : 'floor'} ${floor})`)
    }
  }
  if (below.length > 0) {
    process.stderr.write(`text evaluation past its floors: ${below.join('; ')}\n`)
    process.exit(1)
  }
  out('every figure is within its floor (eval/text-floors.json)')
}
