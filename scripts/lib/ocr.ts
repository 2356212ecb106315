// The recognizer of Node processes (npm start's background ingestion, npm run worker): pdf.js renders a
// page onto an @napi-rs/canvas at OCR_DPI, tesseract.js (LSTM, the integer "best" models of @tesseract.js-data,
// read from node_modules: no network) recognizes it in a worker thread. A pool of OCR_CONCURRENCY
// recognizers; at most that many rendered pages exist at once (memory does not grow with the
// document); each page has a deadline, after which its recognizer is stopped and replaced; recognizers
// idle for OCR_IDLE_MS are stopped. Readings are kept (by the file's hash, page, languages) for a while:
// the scraper reads a scan to judge and fingerprint it, and its ingestion then finds the pages read.
import { createRequire } from 'node:module'
import { availableParallelism, tmpdir } from 'node:os'
import { mkdirSync, symlinkSync } from 'node:fs'
import { createHash } from 'node:crypto'
import { LRUCache } from 'lru-cache'
import { dirname, join } from 'node:path'
import { createWorker, OEM, PSM, type Worker } from 'tesseract.js'
import { getDocument, OPS } from 'pdfjs-dist/legacy/build/pdf.mjs'
import type { OcrEngine, OcrFailure, OcrReading } from '../../functions-shared/ingestion/ocr-port.ts'
import { imageDpi, renderPage, STANDARD_FONTS } from './render-page.ts'
import type { Config } from '../../functions-shared/config.ts'

const require = createRequire(import.meta.url)

/**
 * A scanned page is rendered at its scan's own resolution when that is finer than OCR_DPI, up to this:
 * a 300 dpi scan read at 200 dpi lost detail the recognizer uses (Arabic lessons scanned at 300 dpi,
 * slightly skewed and noisy: 69 % of a page's content words found in the reading at 200 dpi, 74 % at 300), while a coarser
 * scan gains nothing from a finer rendering.
 */
export const MAX_SCAN_DPI = 400

/** The resolution a page is rendered at: OCR_DPI, or its scan's own when finer (up to MAX_SCAN_DPI). */
export const renderDpi = (configured: number, scan: number | null): number => Math.round(Math.max(configured, Math.min(MAX_SCAN_DPI, scan ?? 0)))

export interface NodeOcrOptions {
  /** recognizers at once; 0: one per core but one, at least 1 */
  concurrency: number
  dpi: number
  pageDeadlineMs: number
  idleMs: number
  /** told of each page recognized (metrics) */
  onPage?: (event: { seconds: number; ok: boolean }) => void
}

/**
 * The traineddata of every language in one folder (tesseract.js reads `<langPath>/<code>.traineddata.gz`
 * and takes one langPath per recognizer, while each package has its own folder): links in a temporary
 * folder to the files in node_modules.
 */
function languageFolder(): string {
  const dir = join(tmpdir(), `curriculum-tutor-tessdata-${process.getuid?.() ?? 0}-best-int`)
  mkdirSync(dir, { recursive: true })
  for (const code of ['ara', 'fra']) {
    const source = join(dirname(require.resolve(`@tesseract.js-data/${code}/package.json`)), '4.0.0_best_int', `${code}.traineddata.gz`)
    try {
      symlinkSync(source, join(dir, `${code}.traineddata.gz`))
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
    }
  }
  return dir
}

class Deadline extends Error {}

interface Slot {
  worker: Worker
  languages: string
  /** the resolution the recognizer is told its pages have */
  dpi?: number
  busy: boolean
  idleTimer?: ReturnType<typeof setTimeout> | undefined
}

export function defaultOcrConcurrency(setting: number): number {
  return setting > 0 ? setting : Math.max(1, availableParallelism() - 1)
}

/** The recognizer a Node process runs with its settings; none when OCR_MODE is never. */
export function ocrFromConfig(config: Config, onPage?: NodeOcrOptions['onPage']): OcrEngine | undefined {
  if (config.OCR_MODE === 'never') return undefined
  return createNodeOcr({ concurrency: config.OCR_CONCURRENCY, dpi: config.OCR_DPI, pageDeadlineMs: config.OCR_PAGE_DEADLINE_MS, idleMs: config.OCR_IDLE_MS, onPage })
}

export function createNodeOcr(options: NodeOcrOptions): OcrEngine {
  const size = defaultOcrConcurrency(options.concurrency)
  // recognized text of recent documents, 16 MB of characters at most
  const readings = new LRUCache<string, OcrReading>({ maxSize: 16 * 1024 * 1024, sizeCalculation: (r) => Math.max(1, r.text.length) })
  const slots: Slot[] = []
  const waiting: (() => void)[] = []
  let langPath: string | undefined
  let closed = false

  const stop = async (slot: Slot) => {
    clearTimeout(slot.idleTimer)
    const i = slots.indexOf(slot)
    if (i >= 0) slots.splice(i, 1)
    await slot.worker.terminate().catch(() => {})
  }

  async function acquire(languages: string): Promise<Slot> {
    for (;;) {
      if (closed) throw new Error('the recognizer is closed')
      const idle = slots.find((s) => !s.busy && s.languages === languages) ?? slots.find((s) => !s.busy)
      if (idle) {
        idle.busy = true
        clearTimeout(idle.idleTimer)
        if (idle.languages !== languages) {
          await idle.worker.reinitialize(languages, OEM.LSTM_ONLY)
          idle.languages = languages
          idle.dpi = undefined // told again before its next page
        }
        return idle
      }
      if (slots.length < size) {
        const slot: Slot = { worker: undefined as unknown as Worker, languages, busy: true }
        slots.push(slot)
        try {
          langPath ??= languageFolder()
          slot.worker = await createWorker(languages, OEM.LSTM_ONLY, { langPath, gzip: true, cacheMethod: 'none' })
          await slot.worker.setParameters({ tessedit_pageseg_mode: PSM.AUTO, preserve_interword_spaces: '1', user_defined_dpi: String(options.dpi) })
          slot.dpi = options.dpi
        } catch (err) {
          slots.splice(slots.indexOf(slot), 1)
          throw err
        }
        return slot
      }
      await new Promise<void>((resolve) => waiting.push(resolve))
    }
  }

  function release(slot: Slot) {
    slot.busy = false
    if (options.idleMs > 0) {
      slot.idleTimer = setTimeout(() => void stop(slot), options.idleMs)
      slot.idleTimer.unref?.()
    }
    waiting.shift()?.()
  }

  return {
    async recognize(pdf, pages, languages, onPage) {
      const code = [...languages].sort().join('+')
      const key = `${createHash('sha256').update(pdf).digest('hex')}:${code}:${options.dpi}`
      const results: (OcrReading | OcrFailure)[] = []
      let done = 0
      const missing: number[] = []
      for (const number of pages) {
        const known = readings.get(`${key}:${number}`)
        if (!known) {
          missing.push(number)
          continue
        }
        results.push(known)
        done++
        await onPage?.(done)
      }
      if (missing.length === 0) return results.sort((a, b) => a.number - b.number)
      const task = getDocument({ data: pdf.slice(), disableFontFace: true, useSystemFonts: false, standardFontDataUrl: STANDARD_FONTS, maxImageSize: 64 * 1024 * 1024, verbosity: 0 })
      const doc = await task.promise
      try {
        const inFlight: Promise<void>[] = []
        for (const number of missing) {
          const slot = await acquire(code)
          const started = performance.now()
          const deadlineAt = started + options.pageDeadlineMs
          let timer: ReturnType<typeof setTimeout> | undefined
          const run = (async () => {
            try {
              const scan = await imageDpi(doc, number, OPS)
              const dpi = renderDpi(options.dpi, scan)
              if (slot.dpi !== dpi) {
                await slot.worker.setParameters({ user_defined_dpi: String(dpi) })
                slot.dpi = dpi
              }
              const image = await renderPage(doc, number, dpi, { straighten: scan !== null })
              if (performance.now() > deadlineAt) throw new Deadline()
              const left = Math.max(1, deadlineAt - performance.now())
              const late = new Promise<never>((_, reject) => {
                timer = setTimeout(() => reject(new Deadline()), left)
              })
              const { data } = await Promise.race([slot.worker.recognize(image, {}, { text: true, blocks: true }), late])
                            const reading = { number, text: keptLines(data), confidence: Math.max(0, Math.min(1, data.confidence / 100)) }
              readings.set(`${key}:${number}`, reading)
              results.push(reading)
              options.onPage?.({ seconds: (performance.now() - started) / 1000, ok: true })
              release(slot)
            } catch (err) {
              const message = err instanceof Deadline ? `recognition took longer than ${options.pageDeadlineMs} ms` : `recognition failed: ${(err as Error).message}`
              results.push({ number, error: message })
              options.onPage?.({ seconds: (performance.now() - started) / 1000, ok: false })
              // a late recognizer may still be busy with the page: it is stopped, a new one takes its place
              if (err instanceof Deadline) {
                await stop(slot)
                waiting.shift()?.()
              } else release(slot)
            } finally {
              clearTimeout(timer)
              done++
              await onPage?.(done)
            }
          })()
          inFlight.push(run)
        }
        await Promise.all(inFlight)
      } finally {
        await task.destroy().catch(() => {})
        if (options.idleMs === 0) await Promise.all(slots.filter((s) => !s.busy).map(stop))
      }
      return results.sort((a, b) => a.number - b.number)
    },
    async close() {
      closed = true
      for (const resolve of waiting.splice(0)) resolve()
      await Promise.all([...slots].map(stop))
    },
  }
}

// A line read with less confidence than this is noise taken for text (the dots and tall letters of an
// Arabic line found as a line of their own, a smudge): it is left out of the page's text.
const MIN_LINE_CONFIDENCE = 30

/** The page's text, line by line, without the lines the recognizer itself doubts most. */
function keptLines(data: { text: string; blocks?: { paragraphs: { lines: { text: string; confidence: number }[] }[] }[] | null }): string {
  if (!data.blocks) return data.text
  const paragraphs = data.blocks.flatMap((b) => b.paragraphs.map((p) => p.lines.filter((l) => l.confidence >= MIN_LINE_CONFIDENCE).map((l) => l.text.trimEnd()).join('\n')))
  return paragraphs.filter((p) => p.trim() !== '').join('\n\n')
}
