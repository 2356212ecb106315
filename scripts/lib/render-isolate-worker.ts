// The worker thread of render-isolate.ts: opens one PDF and renders its pages for the recognizer, one at a
// time, posting back each page's grey image and the resolution it was rendered at. pdf.js draws here, not on the
// thread of the server or the worker process.
import { parentPort, workerData } from 'node:worker_threads'
import { getDocument, OPS } from 'pdfjs-dist/legacy/build/pdf.mjs'
import { createCanvas } from '@napi-rs/canvas'
import { boundedCanvasFactory, imageDpi, MAX_SCAN_IMAGE_PIXELS, PDFJS_WASM, renderDpi, renderPage, STANDARD_FONTS, type Turn } from './render-page.ts'

const { pdf, canvasMb } = workerData as { pdf: Uint8Array; canvasMb: number }
// the canvases pdf.js draws on are counted: their memory is outside the heap's bound and outside the
// external memory render-isolate.ts looks at
const CanvasFactory = boundedCanvasFactory(canvasMb, createCanvas)
const task = getDocument(
  {
    data: pdf,
    disableFontFace: true,
    useSystemFonts: false,
    standardFontDataUrl: STANDARD_FONTS,
    wasmUrl: PDFJS_WASM,
    maxImageSize: MAX_SCAN_IMAGE_PIXELS,
    verbosity: 0,
    CanvasFactory,
  } as Parameters<typeof getDocument>[0],
)

parentPort!.on('message', async ({ id, number, dpi, turn }: { id: number; number: number; dpi: number; turn: Turn }) => {
  try {
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
