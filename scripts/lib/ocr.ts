// The recognizer of Node processes (npm start's background ingestion, npm run worker): pdf.js renders a
// page onto an @napi-rs/canvas at OCR_DPI in a thread of its own, stopped at the page's deadline
// (render-isolate.ts), tesseract.js (LSTM, the integer "best" models of @tesseract.js-data,
// read from node_modules: no network) recognizes it in a child process of its own (recognizer-isolate.ts). A pool of OCR_CONCURRENCY
// recognizers and as many drawing threads, kept warm between documents; a page is drawn while the
// recognizers read the pages before it, and at most two pages per recognizer are drawn or read at once
// (memory does not grow with the document); each page has a deadline, counting its own drawing and
// recognition and not its waits (page-clock.ts), after which its recognizer is stopped and replaced;
// recognizers and drawing threads idle for OCR_IDLE_MS are stopped. Readings are kept (by the file's hash, page, languages) for a while:
// the scraper reads a scan to judge and fingerprint it, and its ingestion then finds the pages read.
import { availableParallelism } from 'node:os'
import { createHash } from 'node:crypto'
import { LRUCache } from 'lru-cache'
import { OCR_BUDGET_SPENT, type OcrEngine, type OcrFailure, type OcrReading } from '../../functions-shared/pdf/ocr-port.ts'
import { createRenderPool, RenderDeadline } from './render-isolate.ts'
import { createRecognizer, languageFolder, type Recognizer, RecognizerError, type RecognizerReading } from './recognizer-isolate.ts'
import { PageClock, within } from './page-clock.ts'
import type { Turn } from './render-page.ts'
import type { Config } from '../../functions-shared/config.ts'

type Drawn = { image: Buffer; dpi: number }

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
  /** told of each drawing thread started, with the id of the process it runs in */
  onDrawer?: (pid: number | undefined) => void
  /** told of each page as its drawing begins */
  onDrawing?: (page: number) => void
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
  // as many drawing threads as recognizers, kept warm between documents as the recognizers are
  const drawers = createRenderPool({ size, idleMs: options.idleMs, onStart: options.onDrawer, onDrawing: options.onDrawing })

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
      if (slots.length < size) return start(languages)
      await new Promise<void>((resolve) => waiting.push(resolve))
    }
  }

  /** A new recognizer, busy; its models load meanwhile (one that cannot start fails its first page). */
  function start(languages: string): Slot {
    langPath ??= languageFolder()
    const slot: Slot = { worker: createRecognizer(languages, langPath, options.dpi), languages, busy: true, dpi: options.dpi }
    slots.push(slot)
    options.onRecognizer?.(slot.worker.pid)
    return slot
  }

  // pages drawn or being read at once: two a recognizer (one read, the next drawn meanwhile), so the
  // images held do not grow with the document
  let entered = 0
  const entering: (() => void)[] = []
  async function enter() {
    while (entered >= 2 * size && !closed) await new Promise<void>((resolve) => entering.push(resolve))
    entered++
  }
  function leave() {
    entered--
    entering.shift()?.()
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
      // the pages are drawn by the pool's warm threads (render-isolate.ts), stopped at a page's deadline
      const renderer = drawers.open(pdf)
      // the recognizers the pages will need start (their models load) while the first pages are drawn
      while (slots.length < Math.min(size, missing.length) && !closed) release(start(code))
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
          await enter()
          const started = performance.now()
          // the page's own time: its clock runs while it is drawn and while it is read, not while it waits
          const clock = new PageClock(options.pageDeadlineMs, budgetEnd)
          let slot: Slot | undefined
          const read = async (recognizer: Slot, drawn: Promise<Drawn>): Promise<OcrReading> => {
            const { image, dpi } = await drawn
            if (recognizer.dpi !== dpi) {
              await recognizer.worker.setDpi(dpi)
              recognizer.dpi = dpi
            }
            // out of time before the recognizer took the page: it is free (a Deadline would have it replaced)
            if (performance.now() >= clock.deadline) throw new RenderDeadline()
            const data = await within(recognizer.worker.recognize(image), clock.start(), () => new Deadline())
            clock.stop()
            return { number, text: keptLines(data), confidence: Math.max(0, Math.min(1, data.confidence / 100)) }
          }
          const run = (async () => {
            try {
              // the page is drawn while the recognizers read the pages before it, and takes one once drawn
              const drawn = renderer.render(number, options.dpi, clock)
              await drawn
              slot = await acquire(code)
              // a recognizer's start (its process, its models) is not the page's time, nor longer than it has
              await within(slot.worker.ready(), clock.deadline, () => new Deadline())
              let reading = await read(slot, drawn)
              // a page scanned upside down or sideways reads as noise the recognizer doubts: it is read
              // turned, and the turn read with clearly more confidence is the page's reading
              let busy = false
              for (const turn of TURNS) {
                // (a page that holds next to nothing, blank or a picture, is not worth three more readings)
                if (reading.confidence >= TURN_BELOW_CONFIDENCE || reading.text.replace(/\s/g, '').length < TURN_MIN_CHARS) break
                try {
                  const turned = await read(slot, renderer.render(number, options.dpi, clock, turn))
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
              const spent = late && clock.budgetSpent
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
              if (slot && (err instanceof Deadline || err instanceof RecognizerError)) {
                await stop(slot)
                waiting.shift()?.()
              } else if (slot) release(slot)
            } finally {
              leave()
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
      for (const resolve of [...waiting.splice(0), ...entering.splice(0)]) resolve()
      await Promise.all([...slots.map(stop), drawers.close()])
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
