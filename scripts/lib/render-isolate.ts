// The pages of PDFs rendered for the recognizer in worker threads (render-isolate-worker.ts), each in a
// child process of its own (process-worker.ts). pdf.js
// draws a page in one piece that gives no timer a turn: a 1 KB PDF whose Type3 glyph draws 2,000 lines,
// shown 20,000 times, held the thread of the process that rendered it for minutes, past the page's
// deadline and every request. Here a page that is not rendered by its deadline has its thread stopped
// (a new one opens the PDF for the next page), and the process that asked goes on meanwhile.
//
// A pool of such drawing threads is kept warm between documents (a thread's start, its process and
// pdf.js loaded, cost about a second, on the first page of every document when each had its own): a
// document is opened in a thread when one of its pages is drawn there, and closed there when its
// renderer is closed. Threads idle for `idleMs` are stopped; so are those a page failed in.
import { ProcessWorker as Worker } from './process-worker.ts'
import { RENDER_CANVAS_MB, type Turn } from './render-page.ts'
import { type PageClock, within } from './page-clock.ts'

/** A page not rendered by its deadline. */
export class RenderDeadline extends Error {
  override name = 'RenderDeadline'
}

/**
 * When a page must be drawn by: a moment (performance.now()), its wait for a thread included, or the
 * page's clock, which runs only while a thread that has started draws it (page-clock.ts).
 */
export type DrawDeadline = number | PageClock

export interface PageRenderer {
  /**
   * page `number` as an image for the recognizer (an 8-bit grey PGM), rendered at `dpi` or at its scan's own resolution (renderDpi), by `deadline`,
   * turned `turn` degrees clockwise (0 by default)
   */
  render(number: number, dpi: number, deadline: DrawDeadline, turn?: Turn): Promise<{ image: Buffer; dpi: number }>
  close(): Promise<void>
}

export interface RenderPool {
  /** A renderer of one PDF's pages, drawn by the pool's threads. */
  open(pdf: Uint8Array): PageRenderer
  /** Stops every thread (a page being drawn fails). */
  close(): Promise<void>
}

export interface RenderPoolOptions {
  /** threads at once (at least 1) */
  size?: number
  /** a thread idle this long is stopped; 0: once no document is open */
  idleMs?: number
  heapMb?: number
  externalMb?: number
  canvasMb?: number
  /** told of each drawing thread started, with the id of the process it runs in */
  onStart?: (pid: number | undefined) => void
  /** told of each page as its drawing begins */
  onDrawing?: (page: number) => void
}

/** The heap of a drawing thread: pdf.js keeps a page's operator list there, which a hostile page makes huge. */
export const RENDER_WORKER_HEAP_MB = 1024
/**
 * The memory a drawing thread may hold outside its heap (typed arrays, canvases), which the heap's bound
 * does not count: pdf.js keeps every image a page paints decoded until the page is done, so a 1.9 MB PDF
 * painting 40 images of 4,000 by 4,000 pixels on one page grew the process to 8.7 GB within the page's
 * deadline. Looked at every EXTERNAL_CHECK_MS; a scanned page at 400 dpi holds about 150 MB.
 */
export const RENDER_WORKER_EXTERNAL_MB = 1024
const EXTERNAL_CHECK_MS = 100

interface Drawer {
  worker: Worker
  /** its thread has started (pdf.js loaded) */
  started: Promise<void>
  /** the documents opened in its thread */
  docs: Set<number>
  busy: boolean
  idleTimer?: ReturnType<typeof setTimeout> | undefined
}

export function createRenderPool(options: RenderPoolOptions = {}): RenderPool {
  const size = Math.max(1, options.size ?? 1)
  const idleMs = options.idleMs ?? 0
  const heapMb = options.heapMb ?? RENDER_WORKER_HEAP_MB
  const externalMb = options.externalMb ?? RENDER_WORKER_EXTERNAL_MB
  const canvasMb = options.canvasMb ?? RENDER_CANVAS_MB
  const drawers: Drawer[] = []
  const waiting: (() => void)[] = []
  const openDocs = new Set<number>()
  let nextDoc = 0
  let nextPage = 0
  let closed = false

  const stop = (d: Drawer) => {
    clearTimeout(d.idleTimer)
    const i = drawers.indexOf(d)
    if (i >= 0) drawers.splice(i, 1)
    // an idle thread's process was let go of (unref): held again until it has ended, for whoever awaits it
    d.worker.ref()
    return d.worker.terminate().catch(() => {})
  }

  async function acquire(doc: number): Promise<Drawer> {
    for (;;) {
      if (closed) throw new Error('the page renderer is closed')
      const idle = drawers.find((d) => !d.busy && d.docs.has(doc)) ?? drawers.find((d) => !d.busy)
      if (idle) {
        idle.busy = true
        clearTimeout(idle.idleTimer)
        idle.worker.ref()
        return idle
      }
      if (drawers.length < size) {
        // the thread has a heap of its own: past it the thread ends with ERR_WORKER_OUT_OF_MEMORY, and at
        // the worst its own process (process-worker.ts), never the caller's
        const worker = new Worker(new URL('./render-isolate-worker.ts', import.meta.url), {
          workerData: { canvasMb },
          resourceLimits: { maxOldGenerationSizeMb: heapMb },
        })
        const started = new Promise<void>((resolve, reject) => {
          const ready = (m: { ready?: boolean }) => {
            if (!m.ready) return
            worker.off('message', ready)
            resolve()
          }
          worker.on('message', ready).once('exit', () => reject(stopThread(new Error('the page renderer stopped'))))
        })
        started.catch(() => {}) // the page that waits for it hears of it
        const d: Drawer = { worker, started, docs: new Set(), busy: true }
        drawers.push(d)
        // a thread that ends or fails while idle (its process killed, an error of a document it closed)
        // is not given another page: the next page starts a new one
        const gone = () => void stop(d)
        worker.on('exit', gone).on('error', gone)
        options.onStart?.(worker.pid)
        return d
      }
      await new Promise<void>((resolve) => waiting.push(resolve))
    }
  }

  /** Frees the thread of a page; one the page failed in is stopped, and has ended once this resolves. */
  async function release(d: Drawer, failed: boolean) {
    d.busy = false
    if (failed) await stop(d)
    else if (idleMs > 0 || openDocs.size > 0) {
      // an idle thread keeps no script alive: it is stopped by its timer or by close()
      d.worker.unref()
      if (idleMs > 0) {
        d.idleTimer = setTimeout(() => void stop(d), idleMs)
        d.idleTimer.unref?.()
      }
    } else void stop(d)
    waiting.shift()?.()
  }

  const draw = (w: Worker, doc: number, number: number, dpi: number, deadlineAt: number, turn: Turn) =>
    new Promise<{ image: Buffer; dpi: number }>((resolve, reject) => {
      const id = nextPage++
      let settled = false
      const finish = (settle: () => void) => {
        if (settled) return // a look at the memory that came back after the page was settled
        settled = true
        clearTimeout(timer)
        clearInterval(watch)
        w.off('message', onMessage).off('error', onError).off('exit', onExit)
        settle()
      }
      const onMessage = (m: { id: number; image?: Uint8Array; dpi?: number; error?: string }) => {
        if (m.id !== id) return
        finish(
          () => (m.image ? resolve({ image: Buffer.from(m.image.buffer, m.image.byteOffset, m.image.byteLength), dpi: m.dpi! }) : reject(new Error(m.error))),
        )
      }
      const failed = stopThread
      const onError = (err: Error & { code?: string }) =>
        finish(() => reject(failed(err.code === 'ERR_WORKER_OUT_OF_MEMORY' ? new Error(`drawing the page needs more than ${heapMb} MB of memory`) : err)))
      const onExit = () => finish(() => reject(failed(new Error('the page renderer stopped'))))
      const timer = setTimeout(() => finish(() => reject(failed(new RenderDeadline()))), Math.max(1, deadlineAt - performance.now()))
      const watch = setInterval(() => {
        w.getHeapStatistics()
          .then((stats) => {
            if (stats.external_memory > externalMb * 1024 * 1024) {
              finish(() => reject(failed(new Error(`drawing the page needs more than ${externalMb} MB of memory outside its heap`))))
            }
          })
          .catch(() => {}) // a thread stopped meanwhile: its own events settle the page
      }, EXTERNAL_CHECK_MS)
      w.on('message', onMessage).on('error', onError).on('exit', onExit)
      w.postMessage({ op: 'render', id, doc, number, dpi, turn })
    })

  return {
    open(pdf) {
      const doc = nextDoc++
      openDocs.add(doc)
      // one page of a document at a time; a page out of time (or budget) while it waited is not drawn
      let queue: Promise<unknown> = Promise.resolve()
      const page = async (number: number, dpi: number, deadline: DrawDeadline, turn: Turn) => {
        const due = () => typeof deadline === 'number' ? deadline : deadline.deadline
        if (performance.now() >= due()) throw new RenderDeadline()
        const d = await acquire(doc)
        let failed = false
        try {
          // a thread's start is not the page's time (its clock stands), but takes no longer than the page has
          await within(d.started, due(), () => stopThread(new RenderDeadline()))
          if (performance.now() >= due()) throw new RenderDeadline()
          if (!d.docs.has(doc)) {
            // the thread gets its own copy of the file
            d.worker.postMessage({ op: 'open', doc, pdf })
            d.docs.add(doc)
          }
          const deadlineAt = typeof deadline === 'number' ? deadline : deadline.start()
          options.onDrawing?.(number)
          return await draw(d.worker, doc, number, dpi, deadlineAt, turn)
        } catch (err) {
          failed = (err as { stopThread?: boolean }).stopThread === true
          throw err
        } finally {
          if (typeof deadline !== 'number') deadline.stop()
          await release(d, failed)
        }
      }
      return {
        render(number, dpi, deadline, turn = 0) {
          const drawn = queue.then(() => page(number, dpi, deadline, turn))
          queue = drawn.catch(() => {})
          return drawn
        },
        async close() {
          await queue
          openDocs.delete(doc)
          for (const d of [...drawers]) {
            if (!d.docs.delete(doc)) continue
            d.worker.postMessage({ op: 'close', doc })
            if (!d.busy && idleMs === 0 && openDocs.size === 0) await stop(d)
          }
        },
      }
    },
    async close() {
      closed = true
      for (const resolve of waiting.splice(0)) resolve()
      await Promise.all([...drawers].map(stop))
    },
  }
}

/** A failure after which the thread is not given another page. */
const stopThread = (err: Error) => Object.assign(err, { stopThread: true })

/** A renderer of one PDF with a drawing thread of its own, stopped when the renderer is closed. */
export function createPageRenderer(pdf: Uint8Array, options: Omit<RenderPoolOptions, 'size' | 'idleMs'> = {}): PageRenderer {
  const pool = createRenderPool({ ...options, size: 1, idleMs: 0 })
  const renderer = pool.open(pdf)
  return {
    render: renderer.render,
    async close() {
      await renderer.close()
      await pool.close()
    },
  }
}
