// A tesseract.js recognizer in a child process of its own (process-worker.ts), as the PDF readers and
// page renderers are: its model and images (about 150 MB a recognizer, more on a large page) stay out of
// the server's process, a recognizer that aborts takes only its own process with it, and stopping a late
// one ends its process at once, native code and all.
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { mkdirSync, symlinkSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { ProcessWorker as Worker } from './process-worker.ts'

const require = createRequire(import.meta.url)

/**
 * The traineddata of every language in one folder (tesseract.js reads `<langPath>/<code>.traineddata.gz`
 * and takes one langPath per recognizer, while each package has its own folder): links in a temporary
 * folder to the files in node_modules.
 */
export function languageFolder(): string {
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

/** The recognizer could not read: it failed, stopped or was stopped (its process is not worth keeping). */
export class RecognizerError extends Error {
  override name = 'RecognizerError'
}

export interface RecognizerReading {
  text: string
  /** 0-100, as tesseract gives it */
  confidence: number
  blocks: { paragraphs: { lines: { text: string; confidence: number }[] }[] }[] | null
}

type Ask = { op: 'ready' } | { op: 'dpi'; dpi: number } | { op: 'languages'; languages: string } | { op: 'recognize'; image: Uint8Array }
export type RecognizerRequest = Ask & { id: number }

export interface RecognizerReply {
  id: number
  reading?: RecognizerReading
  error?: string
}

export interface Recognizer {
  /** the child process the recognizer runs in */
  readonly pid: number | undefined
  /** resolves once the recognizer has started, its models loaded */
  ready(): Promise<void>
  setDpi(dpi: number): Promise<void>
  setLanguages(languages: string): Promise<void>
  recognize(image: Uint8Array): Promise<RecognizerReading>
  terminate(): Promise<void>
}

/** A recognizer of `languages` ("ara+fra") that reads its models from `langPath`, told its pages have `dpi`. */
export function createRecognizer(languages: string, langPath: string, dpi: number): Recognizer {
  const worker = new Worker(new URL('./recognizer-isolate-worker.ts', import.meta.url), { workerData: { languages, langPath, dpi } })
  const pending = new Map<number, { resolve: (r: RecognizerReply) => void; reject: (err: Error) => void }>()
  let next = 0
  let ended: RecognizerError | null = null
  const fail = (err: RecognizerError) => {
    ended ??= err
    for (const p of pending.values()) p.reject(ended)
    pending.clear()
  }
  worker.on('message', (reply: RecognizerReply) => {
    const p = pending.get(reply.id)
    if (!p) return
    pending.delete(reply.id)
    p.resolve(reply)
  })
  worker.on('error', (err: Error) => fail(new RecognizerError(`the recognizer failed: ${err.message}`)))
  worker.on('exit', () => fail(new RecognizerError('the recognizer stopped')))

  const ask = async (request: Ask): Promise<RecognizerReply> => {
    if (ended) throw ended
    const id = next++
    const reply = await new Promise<RecognizerReply>((resolve, reject) => {
      pending.set(id, { resolve, reject })
      worker.postMessage({ ...request, id })
    })
    if (reply.error !== undefined) throw new RecognizerError(reply.error)
    return reply
  }

  return {
    get pid() {
      return worker.pid
    },
    async ready() {
      await ask({ op: 'ready' })
    },
    async setDpi(dpi) {
      await ask({ op: 'dpi', dpi })
    },
    async setLanguages(codes) {
      await ask({ op: 'languages', languages: codes })
    },
    async recognize(image) {
      return (await ask({ op: 'recognize', image })).reading!
    },
    async terminate() {
      fail(new RecognizerError('the recognizer was stopped'))
      await worker.terminate()
    },
  }
}
