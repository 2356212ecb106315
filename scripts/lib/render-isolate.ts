// The pages of one PDF rendered for the recognizer in a worker thread (render-isolate-worker.ts), in a
// child process of its own (process-worker.ts). pdf.js
// draws a page in one piece that gives no timer a turn: a 1 KB PDF whose Type3 glyph draws 2,000 lines,
// shown 20,000 times, held the thread of the process that rendered it for minutes, past the page's
// deadline and every request. Here a page that is not rendered by its deadline has its thread stopped
// (a new one opens the PDF for the next page), and the process that asked goes on meanwhile.
import { ProcessWorker as Worker } from './process-worker.ts'
import { RENDER_CANVAS_MB, type Turn } from './render-page.ts'

/** A page not rendered by its deadline. */
export class RenderDeadline extends Error {
  override name = 'RenderDeadline'
}

export interface PageRenderer {
  /**
   * page `number` as an image for the recognizer (an 8-bit grey PGM), rendered at `dpi` or at its scan's own resolution (renderDpi), by `deadlineAt`
   * (performance.now()), turned `turn` degrees clockwise (0 by default)
   */
  render(number: number, dpi: number, deadlineAt: number, turn?: Turn): Promise<{ image: Buffer; dpi: number }>
  close(): Promise<void>
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

export function createPageRenderer(pdf: Uint8Array, options: { heapMb?: number; externalMb?: number; canvasMb?: number } = {}): PageRenderer {
  const heapMb = options.heapMb ?? RENDER_WORKER_HEAP_MB
  const externalMb = options.externalMb ?? RENDER_WORKER_EXTERNAL_MB
  const canvasMb = options.canvasMb ?? RENDER_CANVAS_MB
  let worker: Worker | undefined
  let next = 0
  // one page at a time (one thread draws them); a page whose deadline passed while it waited is not drawn
  let queue: Promise<unknown> = Promise.resolve()

  const open = () => {
    // the thread gets its own copy of the file, and a heap of its own: past it the thread ends with
    // ERR_WORKER_OUT_OF_MEMORY, and at the worst its own process (process-worker.ts), never the caller's
    worker ??= new Worker(new URL('./render-isolate-worker.ts', import.meta.url), {
      workerData: { pdf, canvasMb },
      resourceLimits: { maxOldGenerationSizeMb: heapMb },
    })
    return worker
  }
  const stop = (w: Worker) => {
    if (worker === w) worker = undefined
    void w.terminate().catch(() => {})
  }

  const draw = (number: number, dpi: number, deadlineAt: number, turn: Turn) =>
    new Promise<{ image: Buffer; dpi: number }>((resolve, reject) => {
      if (performance.now() >= deadlineAt) return reject(new RenderDeadline())
      const w = open()
      const id = next++
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
      const onError = (err: Error & { code?: string }) =>
        finish(() => (stop(w), reject(err.code === 'ERR_WORKER_OUT_OF_MEMORY' ? new Error(`drawing the page needs more than ${heapMb} MB of memory`) : err)))
      const onExit = () => finish(() => (stop(w), reject(new Error('the page renderer stopped'))))
      const timer = setTimeout(() => finish(() => (stop(w), reject(new RenderDeadline()))), Math.max(1, deadlineAt - performance.now()))
      const watch = setInterval(() => {
        w.getHeapStatistics()
          .then((stats) => {
            if (stats.external_memory > externalMb * 1024 * 1024) {
              finish(() => (stop(w), reject(new Error(`drawing the page needs more than ${externalMb} MB of memory outside its heap`))))
            }
          })
          .catch(() => {}) // a thread stopped meanwhile: its own events settle the page
      }, EXTERNAL_CHECK_MS)
      w.on('message', onMessage).on('error', onError).on('exit', onExit)
      w.postMessage({ id, number, dpi, turn })
    })

  return {
    render(number, dpi, deadlineAt, turn = 0) {
      const page = queue.then(() => draw(number, dpi, deadlineAt, turn))
      queue = page.catch(() => {})
      return page
    },
    async close() {
      await queue
      if (worker) await worker.terminate().catch(() => {})
      worker = undefined
    },
  }
}
