// A scanned page is recognized at its scan's own resolution when that is finer than OCR_DPI (bounded),
// read from the widest image the page paints.
import { describe, expect, it } from 'vitest'
import { getDocument, OPS } from 'pdfjs-dist/legacy/build/pdf.mjs'
import { imageDpi } from '../scripts/lib/render-page.ts'
import { makePdf, makeScannedPdf } from '../scripts/lib/pdf.ts'
import { MAX_SCAN_DPI, renderDpi } from '../scripts/lib/ocr.ts'

const dpiOf = async (pdf: Uint8Array) => {
  const task = getDocument({ data: pdf.slice(), verbosity: 0 })
  try {
    return await imageDpi(await task.promise, 1, OPS)
  } finally {
    await task.destroy()
  }
}

describe('the resolution a scan is recognized at', () => {
  it('reads a scan\'s own resolution from its page image; a page of text has none', async () => {
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
})
