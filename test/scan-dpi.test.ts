// A scanned page is recognized at its scan's own resolution when that is finer than OCR_DPI (bounded),
// read from the widest image the page paints.
import { describe, expect, it } from 'vitest'
import { getDocument, OPS } from 'pdfjs-dist/legacy/build/pdf.mjs'
import PDFDocument from 'pdfkit'
import { loadImage } from '@napi-rs/canvas'
import { imageDpi, MAX_RENDER_PIXELS, MAX_RENDER_SIDE, renderPage } from '../scripts/lib/render-page.ts'
import { makePdf, makeScannedPdf } from '../scripts/lib/pdf.ts'
import { MAX_SCAN_DPI, renderDpi } from '../scripts/lib/ocr.ts'
import { rawPdf } from './helpers/raw-pdf.ts'

const dpiOf = async (pdf: Uint8Array) => {
  const task = getDocument({ data: pdf.slice(), verbosity: 0 })
  try {
    return await imageDpi(await task.promise, 1, OPS)
  } finally {
    await task.destroy()
  }
}

describe('the resolution a scan is recognized at', () => {
  it("reads a scan's own resolution from its page image; a page of text has none", async () => {
    expect(await dpiOf(await makeScannedPdf(['Une page numérisée.'], { dpi: 150 }))).toBeCloseTo(150, 0)
    expect(await dpiOf(await makeScannedPdf(['Une page numérisée.'], { dpi: 300 }))).toBeCloseTo(300, 0)
    expect(await dpiOf(await makePdf(['Une page de texte.']))).toBeNull()
  })

  it('renders at OCR_DPI, or finer for a finer scan, never past MAX_SCAN_DPI', () => {
    expect(renderDpi(200, null)).toBe(200)
    expect(renderDpi(200, 150)).toBe(200)
    expect(renderDpi(200, 300.08)).toBe(300)
    expect(renderDpi(200, 1200)).toBe(MAX_SCAN_DPI)
    expect(renderDpi(450, 300)).toBe(450)
  })

  it('renders a page of any declared size to MAX_RENDER_PIXELS at the most', async () => {
    // a page 200 inches square: at 400 dpi it would be 6.4 billion pixels
    const doc = new PDFDocument({ size: [14_400, 14_400], margin: 72 })
    const chunks: Buffer[] = []
    doc.on('data', (c: Buffer) => chunks.push(c))
    const done = new Promise<void>((resolve) => doc.on('end', () => resolve()))
    doc.fontSize(400).text('Une très grande page.')
    doc.end()
    await done
    const task = getDocument({ data: new Uint8Array(Buffer.concat(chunks)), verbosity: 0 })
    try {
      const image = await loadImage(await renderPage(await task.promise, 1, 400))
      expect(image.width * image.height).toBeLessThanOrEqual(MAX_RENDER_PIXELS)
      expect(image.width).toBeGreaterThan(5000)
    } finally {
      await task.destroy()
    }
  })

  it('renders a page of any shape to MAX_RENDER_PIXELS and MAX_RENDER_SIDE at the most', async () => {
    // a strip 20 million points long and a twentieth of a point high has an area of a million points,
    // and was drawn 55 million pixels long (one high: the canvas rounds up); 190 million points, 2.1 GB
    for (
      const box of [
        '/MediaBox [0 0 20000000 0.05]',
        '/MediaBox [0 0 0.05 20000000] /Rotate 90',
        '/MediaBox [0 0 612 792] /UserUnit 50000 /CropBox [0 0 400 0.0001]',
      ]
    ) {
      const content = 'BT /F1 12 Tf 0 0 Td (Page) Tj ET'
      const pdf = rawPdf([
        '<< /Type /Catalog /Pages 2 0 R >>',
        '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
        `<< /Type /Page /Parent 2 0 R ${box} /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>`,
        `<< /Length ${content.length} >>\nstream\n${content}\nendstream`,
        '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
      ])
      const task = getDocument({ data: pdf, verbosity: 0 })
      try {
        const image = await loadImage(await renderPage(await task.promise, 1, 400))
        expect(Math.max(image.width, image.height), box).toBeLessThanOrEqual(MAX_RENDER_SIDE)
        expect(image.width * image.height, box).toBeLessThanOrEqual(MAX_RENDER_PIXELS)
      } finally {
        await task.destroy()
      }
    }
  })
})
