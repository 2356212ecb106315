// One PDF page as a PNG, rendered by pdf.js onto an @napi-rs/canvas (the recognizer's input, and the
// scans the tests and the demo make from typeset lessons).
import type { getDocument } from 'pdfjs-dist/legacy/build/pdf.mjs'

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
