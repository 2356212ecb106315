// The worker thread of render-isolate.ts: opens the PDFs it is given and renders their pages for the
// recognizer, one at a time, posting back each page's grey image and the resolution it was rendered at.
// pdf.js draws here, not on the thread of the server or the worker process. The thread outlives a
// document: its caller closes each document it opened, and the next one is drawn without a new start.
import { parentPort, workerData } from 'node:worker_threads'
import { getDocument, OPS } from 'pdfjs-dist/legacy/build/pdf.mjs'
import { createCanvas } from '@napi-rs/canvas'
import { boundedCanvasFactory, imageDpi, MAX_SCAN_IMAGE_PIXELS, PDFJS_WASM, renderDpi, renderPage, STANDARD_FONTS, type Turn } from './render-page.ts'

type PdfTask = ReturnType<typeof getDocument>
type Request =
  | { op: 'open'; doc: number; pdf: Uint8Array }
  | { op: 'close'; doc: number }
  | { op: 'render'; id: number; doc: number; number: number; dpi: number; turn: Turn }

const { canvasMb } = workerData as { canvasMb: number }
// the canvases pdf.js draws on are counted: their memory is outside the heap's bound and outside the
// external memory render-isolate.ts looks at
const CanvasFactory = boundedCanvasFactory(canvasMb, createCanvas)
const open = new Map<number, PdfTask>()

parentPort!.on('message', async (request: Request) => {
  if (request.op === 'open') {
    const task = getDocument(
      {
        data: request.pdf,
        disableFontFace: true,
        useSystemFonts: false,
        standardFontDataUrl: STANDARD_FONTS,
        wasmUrl: PDFJS_WASM,
        maxImageSize: MAX_SCAN_IMAGE_PIXELS,
        verbosity: 0,
        CanvasFactory,
      } as Parameters<typeof getDocument>[0],
    )
    task.promise.catch(() => {}) // a PDF that cannot be opened fails each of its pages, below
    open.set(request.doc, task)
    return
  }
  if (request.op === 'close') {
    void open.get(request.doc)?.destroy()
    open.delete(request.doc)
    return
  }
  const { id, doc: key, number, dpi, turn } = request
  try {
    const task = open.get(key)
    if (!task) throw new Error('the document is not open')
    const doc = await task.promise
    const scan = await imageDpi(doc, number, OPS)
    const rendered = renderDpi(dpi, scan)
    const image = await renderPage(doc, number, rendered, { straighten: scan !== null, turn, grey: true })
    const bytes = new Uint8Array(image.buffer, image.byteOffset, image.byteLength).slice()
    parentPort!.postMessage({ id, image: bytes, dpi: rendered }, [bytes.buffer])
  } catch (err) {
    parentPort!.postMessage({ id, error: (err as Error).message })
  }
})

// the thread has started, pdf.js loaded: what it does from here on is the pages' own work
parentPort!.postMessage({ ready: true })
