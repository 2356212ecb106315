// pdf.js in a worker thread, for Node processes (npm start, npm run worker). In the process that calls it,
// pdf.js works through one page as a chain of promises that never gives the event loop a turn: a page of
// 15 million path operators (a 400 KB PDF) or of form XObjects drawing each other twice, 30 deep (6 KB),
// held the server's thread past any timer and grew it to the heap limit, which ended the process. Here
// the page text is read in a worker thread of bounded heap, in a child process of its own
// (process-worker.ts), stopped at the extraction's deadline: the PDF fails, the server goes on.
import { ProcessWorker as Worker } from './process-worker.ts'
import { type ExtractedPdf, mergeShares, PdfError, type PdfExtractor } from '../../functions-shared/pdf/extract.ts'
import { PdfReadersBusy } from '../../functions-shared/pdf/types.ts'

/** The heap of a reading thread: a 100 MB PDF of text reads in well under it. */
export const PDF_WORKER_HEAP_MB = 1024
/** Time given past the deadline for the thread to say so itself, before it is stopped. */
const GRACE_MS = 1000

interface Reader {
  worker: Worker
  busy: boolean
}

/**
 * One pool of readers for the process (uploads, jobs and the scraper alike): at most `size` child
 * processes read at once, each with up to `heapMb` of heap (three concurrent uploads of 100,000-page PDFs
 * reached 4.3 GB when each had its own); a reading past them waits its turn, and past `maxQueue` waiting
 * it is refused at once (PdfReadersBusy: the caller says 503 with Retry-After).
 */
export function createIsolatedExtractor(
  options: { heapMb?: number; maxIdle?: number; size?: number; maxQueue?: number } = {},
): PdfExtractor & { close(): Promise<void>; stats(): { readers: number; busy: number; waiting: number } } {
  const heapMb = options.heapMb ?? PDF_WORKER_HEAP_MB
  const size = Math.max(1, options.size ?? 2)
  const maxIdle = options.maxIdle ?? size
  const maxQueue = Math.max(0, options.maxQueue ?? 32)
  const readers: Reader[] = []
  const waiting: (() => void)[] = []
  let next = 0

  const spawn = (): Reader => {
    const worker = new Worker(new URL('./pdf-isolate-worker.ts', import.meta.url), { resourceLimits: { maxOldGenerationSizeMb: heapMb } })
    worker.unref() // an idle reader does not keep the process alive
    const reader = { worker, busy: false }
    readers.push(reader)
    return reader
  }
  const stop = (reader: Reader) => {
    readers.splice(readers.indexOf(reader), 1)
    void reader.worker.terminate().catch(() => {})
  }

  /** A reader free now: an idle one, or one spawned while the pool has room. */
  const free = (): Reader | undefined => readers.find((r) => !r.busy) ?? (readers.length < size ? spawn() : undefined)
  /** A free reader, after waiting for one to be released if need be; it is busy from then on. */
  const acquire = async (): Promise<Reader> => {
    for (;;) {
      const reader = free()
      if (reader) return Object.assign(reader, { busy: true })
      if (waiting.length >= maxQueue) throw new PdfReadersBusy(5)
      await new Promise<void>((resolve) => waiting.push(resolve))
    }
  }
  // a document is read by every reader free when it comes (never waiting for a second one), each
  // reading a share of its pages: a book alone in the pool is read on as many cores as there are readers
  const extract = async (bytes: Uint8Array, extractOptions: Parameters<PdfExtractor>[1]): Promise<ExtractedPdf> => {
    const team = [await acquire()]
    for (let reader; team.length < size && (reader = free());) team.push(Object.assign(reader, { busy: true }))
    try {
      if (team.length === 1) return await readWith(team[0]!, bytes, extractOptions)
      const reading = new Set(team)
      const shares = team.map((r, index) => readWith(r, bytes, { ...extractOptions, share: { index, of: team.length } }).finally(() => reading.delete(r)))
      try {
        return mergeShares(await Promise.all(shares))
      } catch (err) {
        // a share that fails fails the document: the readers of the others stop rather than read on
        for (const r of reading) void r.worker.terminate().catch(() => {})
        await Promise.allSettled(shares)
        throw err
      }
    } finally {
      for (let i = 0; i < team.length; i++) waiting.shift()?.()
    }
  }
  const readWith = (reader: Reader, bytes: Uint8Array, extractOptions: Parameters<PdfExtractor>[1]): Promise<ExtractedPdf> => {
    reader.busy = true
    reader.worker.ref()
    const id = next++
    return new Promise<ExtractedPdf>((resolve, reject) => {
      const done = (settle: () => void, keep: boolean) => {
        clearTimeout(timer)
        reader.worker.off('message', onMessage).off('error', onError).off('exit', onExit)
        if (keep && readers.filter((r) => !r.busy && r !== reader).length < maxIdle) {
          reader.busy = false
          reader.worker.unref()
        } else stop(reader)
        settle()
      }
      const onMessage = (message: { id: number; result?: ExtractedPdf; error?: { message: string; pdf: boolean } }) => {
        if (message.id !== id) return
        if (message.result) done(() => resolve(message.result!), true)
        else done(() => reject(message.error!.pdf ? new PdfError(message.error!.message) : new Error(message.error!.message)), true)
      }
      const onError = (err: Error & { code?: string }) =>
        done(
          () =>
            reject(
              err.code === 'ERR_WORKER_OUT_OF_MEMORY'
                ? new PdfError(`unreadable PDF: reading it needs more than ${heapMb} MB of memory`)
                : new PdfError(`unreadable PDF: ${err.message}`),
            ),
          false,
        )
      const onExit = () => done(() => reject(new PdfError('unreadable PDF: the reader stopped')), false)
      const timer = setTimeout(
        () => done(() => reject(new PdfError(`PDF parsing took longer than ${extractOptions.deadlineMs} ms`)), false),
        extractOptions.deadlineMs + GRACE_MS,
      )
      reader.worker.on('message', onMessage).on('error', onError).on('exit', onExit)
      // the thread's process gets a copy: the caller keeps its bytes (the recognizer reads them next)
      reader.worker.postMessage({ id, bytes, options: extractOptions })
    })
  }
  return Object.assign(extract, {
    async close() {
      await Promise.all(readers.splice(0).map((r) => r.worker.terminate().catch(() => {})))
      for (const resolve of waiting.splice(0)) resolve()
    },
    stats: () => ({ readers: readers.length, busy: readers.filter((r) => r.busy).length, waiting: waiting.length }),
  })
}
