// One PDF page rendered by pdf.js onto an @napi-rs/canvas: as an 8-bit grey PGM, the recognizer's input,
// or as a PNG, the scans the tests and the demo make from typeset lessons.
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import type { getDocument } from 'pdfjs-dist/legacy/build/pdf.mjs'
import type { Canvas } from '@napi-rs/canvas'
import { MIN_SKEW, skewAngle } from './deskew.ts'

/**
 * pdf.js's metrics and outlines of the fourteen standard fonts, which a PDF may use without embedding
 * them: without this folder a page set in Helvetica or Times renders as empty boxes.
 */
export const STANDARD_FONTS = join(dirname(createRequire(import.meta.url).resolve('pdfjs-dist/package.json')), 'standard_fonts/')

/**
 * pdf.js's WebAssembly decoders (OpenJPEG for JPXDecode, JBIG2 for JBIG2Decode), which scanners use for
 * page images: without this folder such an image is not decoded, and a scan made of it is read as blank.
 */
export const PDFJS_WASM = join(dirname(createRequire(import.meta.url).resolve('pdfjs-dist/package.json')), 'wasm/')

type PdfDocument = Awaited<ReturnType<typeof getDocument>['promise']>

/**
 * A scanned page is rendered at its scan's own resolution when that is finer than OCR_DPI, up to this:
 * a 300 dpi scan read at 200 dpi lost detail the recognizer uses (Arabic lessons scanned at 300 dpi,
 * slightly skewed and noisy: 69 % of a page's content words found in the reading at 200 dpi, 74 % at 300), while a coarser
 * scan gains nothing from a finer rendering.
 */
export const MAX_SCAN_DPI = 400

/** The resolution a page is rendered at: OCR_DPI, or its scan's own when finer (up to MAX_SCAN_DPI). */
export const renderDpi = (configured: number, scan: number | null): number => Math.round(Math.max(configured, Math.min(MAX_SCAN_DPI, scan ?? 0)))

/**
 * The most pixels an image the renderer decodes may have: an A4 page scanned at 1,200 dpi is 139 million
 * (the text layer's reader stops at 16 million, MAX_IMAGE_PIXELS: a finer scan is decoded here only, in
 * the renderer's thread and under its canvas budget, and drawn downscaled to the page's render size).
 */
export const MAX_SCAN_IMAGE_PIXELS = 150_000_000

/** The most pixels a page is rendered to: an A4 page at 400 dpi is 15.5 million, an A3 one 31 million. */
export const MAX_RENDER_PIXELS = 36_000_000
/**
 * The most pixels a rendered page has on a side. The canvas has whole pixels on each side, at least one:
 * a page of 190 million by 0.005 points has an area of under a million points but was drawn on a canvas
 * 528 million pixels wide and one high (2.1 GB, the drawing thread's heap does not count a canvas), twice
 * with a scan's straightening. An A0 poster at MAX_SCAN_DPI is 18,700 pixels high.
 */
export const MAX_RENDER_SIDE = 32_767

/**
 * The scale a page of `width` by `height` points (its viewport at scale 1) is rendered at for `dpi`: at
 * most MAX_RENDER_PIXELS in all (its area, scaled, plus a pixel on each side for rounding up) and
 * MAX_RENDER_SIDE on a side.
 */
export function renderScale(width: number, height: number, dpi: number): number {
  const w = Math.max(1, width)
  const h = Math.max(1, height)
  return Math.min(dpi / 72, Math.sqrt(MAX_RENDER_PIXELS / (w * h)), MAX_RENDER_SIDE / w, MAX_RENDER_SIDE / h)
}
/**
 * The canvases pdf.js may hold at once while it draws a page, in megabytes of pixels (4 bytes each): the
 * page's own and the scratch canvases it draws transparency groups, soft masks and patterns on. Their
 * memory is the canvas library's, which neither the thread's heap nor its external memory counts: a page
 * of form XObjects each a transparency group of the page's size, nested 40 deep (10 KB), held a canvas
 * per level and grew the process to 17 GB within its deadline.
 */
export const RENDER_CANVAS_MB = 1024

/** A page whose drawing needs more canvas than RENDER_CANVAS_MB. */
export class CanvasBudgetError extends Error {
  override name = 'CanvasBudgetError'
}

interface CanvasEntry {
  canvas: { width: number; height: number } | null
  context: unknown
}

/**
 * pdf.js's canvas factory (getDocument's CanvasFactory) on @napi-rs/canvas, counting the pixels of the
 * canvases alive: one that would take them past `budgetMb` is refused, and the page fails.
 */
export function boundedCanvasFactory(
  budgetMb: number,
  createCanvas: (
    w: number,
    h: number,
  ) => { width: number; height: number; getContext(kind: '2d', options?: { alpha?: boolean; willReadFrequently?: boolean }): unknown },
) {
  const budget = (budgetMb * 1024 * 1024) / 4
  let live = 0
  const claim = (pixels: number) => {
    if (live + pixels > budget) throw new CanvasBudgetError(`drawing the page needs more than ${budgetMb} MB of canvases`)
    live += pixels
  }
  return class BoundedCanvasFactory {
    static get live(): number {
      return live
    }
    create(width: number, height: number): CanvasEntry {
      if (!(width > 0 && height > 0)) throw new Error('Invalid canvas size')
      claim(width * height)
      const canvas = createCanvas(width, height)
      return { canvas, context: canvas.getContext('2d', { willReadFrequently: true }) }
    }
    getNoAlphaContext(canvas: ReturnType<typeof createCanvas>): unknown {
      return canvas.getContext('2d', { alpha: false, willReadFrequently: true })
    }
    reset(entry: CanvasEntry, width: number, height: number): void {
      if (!entry.canvas) throw new Error('Canvas is not specified')
      if (!(width > 0 && height > 0)) throw new Error('Invalid canvas size')
      claim(width * height - entry.canvas.width * entry.canvas.height)
      entry.canvas.width = width
      entry.canvas.height = height
    }
    destroy(entry: CanvasEntry): void {
      if (!entry.canvas) throw new Error('Canvas is not specified')
      live -= entry.canvas.width * entry.canvas.height
      entry.canvas.width = entry.canvas.height = 0
      entry.canvas = null
      entry.context = null
    }
  }
}

interface CanvasFactory {
  create(w: number, h: number): { canvas: { toBuffer(mime: string): Buffer } }
  destroy(target: unknown): void
}

/**
 * The resolution of the widest image a page paints, as if it spanned the page's width (pixels per inch
 * of the page): a scan's own resolution. An image narrower than the page (a figure, a logo) gives less
 * than its own, never more. Null for a page without images.
 */
export async function imageDpi(doc: PdfDocument, number: number, ops: { paintImageXObject: number; paintInlineImageXObject: number }): Promise<number | null> {
  const page = await doc.getPage(number)
  try {
    const list = await page.getOperatorList()
    const inches = page.getViewport({ scale: 1 }).width / 72
    let widest = 0
    list.fnArray.forEach((fn, i) => {
      if (fn === ops.paintImageXObject) widest = Math.max(widest, Number((list.argsArray[i] as unknown[])[1]) || 0)
      else if (fn === ops.paintInlineImageXObject) widest = Math.max(widest, Number(((list.argsArray[i] as unknown[])[0] as { width?: number })?.width) || 0)
    })
    return widest > 0 && inches > 0 ? widest / inches : null
  } finally {
    page.cleanup()
  }
}

/**
 * Page `number` at `dpi`, white behind transparent content; the canvas is released after. With
 * `straighten`, a page whose lines of text stand askew (a scan) is turned straight first (deskew.ts), and
 * `onSkew` is told the angle found. With `grey`, an 8-bit grey PGM instead of a PNG: what the recognizer
 * reads, without a PNG's compression here and its decompression in the recognizer.
 */
export async function renderPage(
  doc: PdfDocument,
  number: number,
  dpi: number,
  options: { straighten?: boolean; onSkew?: (degrees: number) => void; turn?: Turn; grey?: boolean } = {},
): Promise<Buffer> {
  const drawn = await drawPage(doc, number, dpi, options.turn ?? 0)
  try {
    const page = options.straighten ? await straightened(drawn.canvas, options.onSkew) : { canvas: drawn.canvas, pixels: undefined }
    return options.grey ? greyImage(page.canvas, page.pixels) : page.canvas.toBuffer('image/png')
  } finally {
    drawn.release()
  }
}

/** Page `number` drawn at `dpi` on a canvas of the document's factory (which `release` frees). */
export async function drawPage(doc: PdfDocument, number: number, dpi: number, turn: Turn): Promise<{ canvas: Canvas; release: () => void }> {
  const page = await doc.getPage(number)
  try {
    // a page of any size or shape renders to MAX_RENDER_PIXELS at the most (a PDF may declare a page of
    // 200 inches, or of 2,600 miles by a tenth of a millimetre)
    const base = page.getViewport({ scale: 1 })
    // turned by `turn` degrees clockwise beyond the page's own /Rotate (a page scanned upside down or sideways)
    const viewport = page.getViewport({ scale: renderScale(base.width, base.height, dpi), rotation: (page.rotate + turn) % 360 })
    const factory = (doc as unknown as { canvasFactory: CanvasFactory }).canvasFactory
    const target = factory.create(Math.ceil(viewport.width), Math.ceil(viewport.height))
    try {
      await page.render({ canvas: target.canvas as never, viewport, background: 'white' }).promise
    } catch (err) {
      factory.destroy(target)
      throw err
    }
    return { canvas: target.canvas as unknown as Canvas, release: () => factory.destroy(target) }
  } finally {
    page.cleanup()
  }
}

/** A quarter turn of a page, clockwise, in degrees. */
export type Turn = 0 | 90 | 180 | 270

/**
 * The canvas turned by the opposite of its skew when that is MIN_SKEW or more (a new canvas), with the
 * pixels read to find the skew when it was left as it is.
 */
export async function straightened(canvas: Canvas, onSkew?: (degrees: number) => void): Promise<{ canvas: Canvas; pixels?: Uint8ClampedArray }> {
  const { width, height } = canvas
  const pixels = canvas.getContext('2d').getImageData(0, 0, width, height).data
  const angle = skewAngle(pixels, width, height)
  onSkew?.(angle)
  if (Math.abs(angle) < MIN_SKEW) return { canvas, pixels }
  const { createCanvas } = await import('@napi-rs/canvas')
  const turned = createCanvas(width, height)
  const g = turned.getContext('2d')
  g.fillStyle = 'white'
  g.fillRect(0, 0, width, height)
  g.translate(width / 2, height / 2)
  g.rotate((-angle * Math.PI) / 180)
  g.translate(-width / 2, -height / 2)
  g.drawImage(canvas, 0, 0)
  return { canvas: turned }
}

/** The canvas (or its RGBA `pixels`, read already) as an 8-bit grey PGM (P5): luminance, as the recognizer would take it. */
export function greyImage(canvas: Canvas, pixels?: Uint8ClampedArray): Buffer {
  const { width, height } = canvas
  const rgba = pixels ?? canvas.getContext('2d').getImageData(0, 0, width, height).data
  const header = Buffer.from(`P5\n${width} ${height}\n255\n`, 'latin1')
  const out = Buffer.allocUnsafe(header.length + width * height)
  header.copy(out)
  for (let i = 0, j = header.length; i < rgba.length; i += 4, j++) out[j] = (rgba[i]! * 77 + rgba[i + 1]! * 150 + rgba[i + 2]! * 29) >> 8
  return out
}
