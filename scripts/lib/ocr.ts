// The recognizer of Node processes (npm start's background ingestion, npm run worker): pdf.js renders a
// page onto an @napi-rs/canvas at OCR_DPI in a thread of its own, stopped at the page's deadline
// (render-isolate.ts), tesseract.js (LSTM, the integer "best" models of @tesseract.js-data,
// read from node_modules: no network) recognizes it in a child process of its own (recognizer-isolate.ts). A pool of OCR_CONCURRENCY
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
import { OCR_BUDGET_SPENT, type OcrEngine, type OcrFailure, type OcrReading } from '../../functions-shared/pdf/ocr-port.ts'
import { createPageRenderer, RenderDeadline } from './render-isolate.ts'
import { createRecognizer, type Recognizer, RecognizerError, type RecognizerReading } from './recognizer-isolate.ts'
import type { Turn } from './render-page.ts'
import type { Config } from '../../functions-shared/config.ts'

const require = createRequire(import.meta.url)

export { MAX_SCAN_DPI, renderDpi } from './render-page.ts'

export interface NodeOcrOptions {
  /** recognizers at once; 0: one per core but one, at least 1 */
  concurrency: number
  dpi: number
  pageDeadlineMs: number
  idleMs: number
  /** told of each page recognized (metrics) */
  onPage?: (event: { seconds: number; ok: boolean }) => void
  /** told of each recognizer started, with the id of the process it runs in */
  onRecognizer?: (pid: number | undefined) => void
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
  worker: Recognizer
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
  return createNodeOcr({
    concurrency: config.OCR_CONCURRENCY,
    dpi: config.OCR_DPI,
    pageDeadlineMs: config.OCR_PAGE_DEADLINE_MS,
    idleMs: config.OCR_IDLE_MS,
    onPage,
  })
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
          await idle.worker.setLanguages(languages)
          idle.languages = languages
          idle.dpi = undefined // told again before its next page
        }
        return idle
      }
      if (slots.length < size) {
        langPath ??= languageFolder()
        // its models load as it reads its first page: a recognizer that cannot start fails that page
        const slot: Slot = { worker: createRecognizer(languages, langPath, options.dpi), languages, busy: true, dpi: options.dpi }
        slots.push(slot)
        options.onRecognizer?.(slot.worker.pid)
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
    async recognize(pdf, pages, languages, onPage, budget = {}) {
      const budgetEnd = performance.now() + (budget.budgetMs ?? Number.POSITIVE_INFINITY)
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
      // the pages are drawn in a thread of their own, stopped at a page's deadline (render-isolate.ts)
      const renderer = createPageRenderer(pdf)
      try {
        const inFlight: Promise<void>[] = []
        for (const number of missing) {
          // past the document's budget no page is begun: each comes back as unread
          if (performance.now() >= budgetEnd) {
            results.push({ number, error: OCR_BUDGET_SPENT })
            done++
            await onPage?.(done)
            continue
          }
          const slot = await acquire(code)
          const started = performance.now()
          const deadlineAt = Math.min(started + options.pageDeadlineMs, budgetEnd)
          let timer: ReturnType<typeof setTimeout> | undefined
          const read = async (turn: Turn): Promise<OcrReading> => {
            const { image, dpi } = await renderer.render(number, options.dpi, deadlineAt, turn)
            if (slot.dpi !== dpi) {
              await slot.worker.setDpi(dpi)
              slot.dpi = dpi
            }
            // out of time before the recognizer took the page: it is free (a Deadline would have it replaced)
            if (performance.now() > deadlineAt) throw new RenderDeadline()
            const left = Math.max(1, deadlineAt - performance.now())
            const late = new Promise<never>((_, reject) => {
              timer = setTimeout(() => reject(new Deadline()), left)
            })
            const data = await Promise.race([slot.worker.recognize(image), late])
            clearTimeout(timer)
            return { number, text: keptLines(data), confidence: Math.max(0, Math.min(1, data.confidence / 100)) }
          }
          const run = (async () => {
            try {
              let reading = await read(0)
              // a page scanned upside down or sideways reads as noise the recognizer doubts: it is read
              // turned, and the turn read with clearly more confidence is the page's reading
              let busy = false
              for (const turn of TURNS) {
                // (a page that holds next to nothing, blank or a picture, is not worth three more readings)
                if (reading.confidence >= TURN_BELOW_CONFIDENCE || reading.text.replace(/\s/g, '').length < TURN_MIN_CHARS) break
                try {
                  const turned = await read(turn)
                  if (turned.confidence >= reading.confidence + TURN_MARGIN) reading = turned
                } catch (err) {
                  // out of time for turns: the page keeps the reading it has (a recognizer still busy
                  // with the turned page is stopped, as below)
                  busy = err instanceof Deadline
                  if (busy || err instanceof RenderDeadline) break
                  throw err
                }
              }
              readings.set(`${key}:${number}`, reading)
              results.push(reading)
              options.onPage?.({ seconds: (performance.now() - started) / 1000, ok: true })
              if (busy) {
                await stop(slot)
                waiting.shift()?.()
              } else release(slot)
            } catch (err) {
              const late = err instanceof Deadline || err instanceof RenderDeadline
              const spent = late && deadlineAt === budgetEnd && started + options.pageDeadlineMs > budgetEnd
              const message = spent
                ? OCR_BUDGET_SPENT
                : late
                ? `recognition took longer than ${options.pageDeadlineMs} ms`
                : `recognition failed: ${(err as Error).message}`
              results.push({ number, error: message })
              options.onPage?.({ seconds: (performance.now() - started) / 1000, ok: false })
              // a late recognizer may still be busy with the page, and one that failed is not trusted with
              // another: it is stopped, a new one takes its place (a page late in its rendering, or that
              // could not be drawn, never reached the recognizer, which is free)
              if (err instanceof Deadline || err instanceof RecognizerError) {
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
        await renderer.close()
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

/**
 * A page read with less confidence than this is read again turned (TURNS, in that order, until one reads
 * with this much): upright lessons read at 0.81 to 0.95 (Arabic, French), the same pages upside down at
 * 0.33 to 0.42.
 */
export const TURN_BELOW_CONFIDENCE = 0.6
/** A turned reading replaces the page's when its confidence is higher by this much at least. */
export const TURN_MARGIN = 0.1
/** A reading of fewer characters than this (blank, a picture) is not read again turned. */
export const TURN_MIN_CHARS = 20
/** Upside down first (a sheet fed the wrong way round), then sideways either way. */
const TURNS: Turn[] = [180, 90, 270]

// A line read with less confidence than this is noise taken for text (the dots and tall letters of an
// Arabic line found as a line of their own, a smudge): it is left out of the page's text.
const MIN_LINE_CONFIDENCE = 30

/** The page's text, line by line, without the lines the recognizer itself doubts most. */
function keptLines(data: RecognizerReading): string {
  if (!data.blocks) return data.text
  const paragraphs = data.blocks.flatMap((b) =>
    b.paragraphs.map((p) => p.lines.filter((l) => l.confidence >= MIN_LINE_CONFIDENCE).map((l) => l.text.trimEnd()).join('\n'))
  )
  return paragraphs.filter((p) => p.trim() !== '').join('\n\n')
}
