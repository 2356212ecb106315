// One PDF page as a PNG, rendered by pdf.js onto an @napi-rs/canvas (the recognizer's input, and the
// scans the tests and the demo make from typeset lessons).
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import type { getDocument } from 'pdfjs-dist/legacy/build/pdf.mjs'

/**
 * pdf.js's metrics and outlines of the fourteen standard fonts, which a PDF may use without embedding
 * them: without this folder a page set in Helvetica or Times renders as empty boxes.
 */
export const STANDARD_FONTS = join(dirname(createRequire(import.meta.url).resolve('pdfjs-dist/package.json')), 'standard_fonts/')

type PdfDocument = Awaited<ReturnType<typeof getDocument>['promise']>
interface CanvasFactory {
  create(w: number, h: number): { canvas: { toBuffer(mime: string): Buffer } }
  destroy(target: unknown): void
}

/** Page `number` at `dpi`, white behind transparent content; the canvas is released after. */
export async function renderPage(doc: PdfDocument, number: number, dpi: number): Promise<Buffer> {
  const page = await doc.getPage(number)
  try {
    const viewport = page.getViewport({ scale: dpi / 72 })
    const factory = (doc as unknown as { canvasFactory: CanvasFactory }).canvasFactory
    const target = factory.create(Math.ceil(viewport.width), Math.ceil(viewport.height))
    await page.render({ canvas: target.canvas as never, viewport, background: 'white' }).promise
    const png = target.canvas.toBuffer('image/png')
    factory.destroy(target)
    return png
  } finally {
    page.cleanup()
  }
}
