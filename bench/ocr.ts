// OCR: pages per second per core and the character error rate, French and Arabic, on the demo
// curriculum's lessons typeset, rendered and put back as images (scans made here, at BENCH_SCAN_DPI),
// recognized at OCR_DPI (the default setting) by one recognizer, then by the default pool. The baseline
// of the same run: reading the same pages' text layers from the typeset PDFs (each pages/s figure's
// ratio to it printed). Also: the SimHash Hamming distance between each lesson's text PDF and its scan
// (would the scraper take the scan for a near-duplicate of the text it already has?). Prints figures;
// asserts nothing, but says whether each language's mean CER is under its floor (CER_FLOORS). Also the
// CPU time each page took, in every process of the recognizer (its drawing threads and recognizers,
// which overlap: pages per second with one recognizer can use more than one core).
// Run: npm run bench:ocr   (BENCH_PAGES per language, default 8)
import { readdirSync, readFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { makePdf, makeScannedPdf } from '../scripts/lib/pdf.ts'
import { createNodeOcr, defaultOcrConcurrency } from '../scripts/lib/ocr.ts'
import { CURRICULUM_FILE } from '../scripts/lib/demo-portal.ts'
import { loadConfig } from '../functions-shared/config.ts'
import { extractPdf } from '../functions-shared/pdf/extract.ts'
import { canonicalize, matchingForm } from '../functions-shared/text/canonicalize.ts'
import { hammingDistance, simhash } from '../functions-shared/text/simhash.ts'
import type { OcrLanguage } from '../functions-shared/pdf/read.ts'
import { characterErrorRate } from '../test/helpers/scans.ts'
import { machine } from './lib/machine.ts'

const config = loadConfig({ LOG_LEVEL: 'silent' })
const PAGES = Number(process.env.BENCH_PAGES ?? 8)
const SCAN_DPI = Number(process.env.BENCH_SCAN_DPI ?? 200)
const curriculum = JSON.parse(readFileSync(CURRICULUM_FILE, 'utf8')) as { lessons: { id: string; language?: string; pages?: string[] }[] }

interface Sample {
  lesson: string
  pages: string[]
  text: Uint8Array
  scan: Uint8Array
}

async function samples(arabic: boolean): Promise<Sample[]> {
  const out: Sample[] = []
  let count = 0
  for (const lesson of curriculum.lessons) {
    if (!lesson.pages || (lesson.language === 'ar') !== arabic || count >= PAGES) continue
    const pages = lesson.pages.slice(0, PAGES - count)
    count += pages.length
    out.push({ lesson: lesson.id, pages, text: await makePdf(pages, { arabic, rtl: arabic }), scan: await makeScannedPdf(pages, { arabic, dpi: SCAN_DPI }) })
  }
  return out
}

/**
 * The mean CER each language must stay under on the default set (BENCH_PAGES 8, scans at 200 dpi): the
 * figures the recognizer had before its speed-up (docs/pipeline.md), the upper edge of their printed
 * rounding. A change that reads faster may not read worse.
 */
const CER_FLOORS: Record<string, number> = { French: 0.0085, Arabic: 0.0455 }
const DEFAULT_SET = PAGES === 8 && SCAN_DPI === 200

/**
 * The CPU time, in seconds, of process `pid` and of every process under it (Linux: /proc): their own, and
 * that of their children that ended (counted by their parent once reaped).
 */
function treeCpuSeconds(pid = process.pid): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  // utime, stime, cutime, cstime: fields 14 to 17, in clock ticks (100 a second)
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  const own = [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i]), 0) / 100
  const children = readdirSync(`/proc/${pid}/task`).flatMap((task) =>
    readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').split(' ').filter(Boolean).map(Number)
  )
  return children.reduce((sum, child) => {
    try {
      return sum + treeCpuSeconds(child)
    } catch {
      return sum // ended meanwhile: counted by its parent
    }
  }, own)
}

const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!
const pct = (x: number) => `${(x * 100).toFixed(1)} %`

machine()
console.log(`OCR_DPI ${config.OCR_DPI}, scans at ${SCAN_DPI} dpi, ${PAGES} pages per language; ${availableParallelism()} cores\n`)
const rows: string[][] = []
const dupRows: string[][] = []
for (const [label, arabic, languages] of [['French', false, ['fra']], ['Arabic', true, ['ara']]] as [string, boolean, OcrLanguage[]][]) {
  const set = await samples(arabic)
  const pages = set.reduce((n, s) => n + s.pages.length, 0)
  // baseline: the text layers of the same pages
  const t = performance.now()
  for (const s of set) await extractPdf(s.text, { deadlineMs: 60_000 })
  const layerPerSecond = pages / ((performance.now() - t) / 1000)

  const run = async (concurrency: number) => {
    // idle processes kept as configured (OCR_IDLE_MS), as a server keeps them between documents
    const engine = createNodeOcr({ concurrency, dpi: config.OCR_DPI, pageDeadlineMs: 120_000, idleMs: config.OCR_IDLE_MS })
    try {
      // the recognizers' start-up (model load) is not a per-page cost: one page first, untimed
      await engine.recognize(await makeScannedPdf(['.'.repeat(10)], { arabic, dpi: 72 }), [1], languages)
      const cpu = treeCpuSeconds()
      const start = performance.now()
      const results = await Promise.all(set.map((s) => engine.recognize(s.scan, s.pages.map((_, i) => i + 1), languages)))
      return { seconds: (performance.now() - start) / 1000, cpu: treeCpuSeconds() - cpu, results }
    } finally {
      await engine.close()
    }
  }
  const one = await run(1)
  const pool = defaultOcrConcurrency(config.OCR_CONCURRENCY)
  const many = pool > 1 ? await run(pool) : one
  const errors: number[] = []
  const confidences: number[] = []
  for (const [k, s] of set.entries()) {
    const readings = one.results[k]!
    for (const [i, reading] of readings.entries()) {
      if ('error' in reading) {
        errors.push(1)
        continue
      }
      errors.push(characterErrorRate(canonicalize(s.pages[i]!), canonicalize(reading.text)))
      confidences.push(reading.confidence)
    }
    // the scan against the text PDF it was made from, as the scraper fingerprints them
    const textFp = simhash(matchingForm(canonicalize(s.pages.join('\n'))))
    const scanText = readings.map((r) => ('error' in r ? '' : canonicalize(r.text))).join('\n')
    const distance = hammingDistance(textFp, simhash(matchingForm(scanText)))
    dupRows.push([label, s.lesson, String(s.pages.length), String(distance), distance <= config.DUPLICATE_HAMMING_THRESHOLD ? 'yes' : 'no'])
  }
  const mean = errors.reduce((a, b) => a + b, 0) / errors.length
  rows.push([
    label,
    String(pages),
    (pages / one.seconds).toFixed(2),
    `${(pages / many.seconds).toFixed(2)} (${pool})`,
    layerPerSecond.toFixed(0),
    `${(layerPerSecond / (pages / one.seconds)).toFixed(0)}x`,
    `${(layerPerSecond / (pages / many.seconds)).toFixed(0)}x`,
    `${(mean * 100).toFixed(2)} %`,
    `${(CER_FLOORS[label]! * 100).toFixed(2)} %${DEFAULT_SET ? (mean < CER_FLOORS[label]! ? ' met' : ' MISSED') : ' (n/a: not the default set)'}`,
    pct(quantile(errors, 0.9)),
    (one.cpu / pages).toFixed(2),
    (confidences.reduce((a, b) => a + b, 0) / Math.max(1, confidences.length)).toFixed(2),
  ])
}

const table = (head: string[], body: string[][]) => {
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)))
  const line = (r: string[]) => r.map((c, i) => c.padEnd(widths[i]!)).join('  ')
  console.log([line(head), line(widths.map((w) => '-'.repeat(w))), ...body.map(line)].join('\n'))
}
table(
  [
    'language',
    'pages',
    'pages/s 1 core',
    'pages/s pool',
    'layer pages/s',
    'layer/ocr',
    'layer/pool',
    'CER mean',
    'CER floor',
    'CER p90',
    'CPU s/page',
    'confidence',
  ],
  rows,
)
console.log(`\nnear-duplicates: SimHash distance between a lesson's text PDF and its scan (threshold ${config.DUPLICATE_HAMMING_THRESHOLD})\n`)
table(['language', 'lesson', 'pages', 'distance', 'duplicate'], dupRows)
