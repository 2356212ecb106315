// Scans as scanners write them, read by the recognizer: a page at 300, 600 and 1,200 dpi (past the text
// reader's image limit), JBIG2 page images, and a document whose pages take longer to draw than its
// recognition budget.
import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { createCanvas, loadImage } from '@napi-rs/canvas'
import PDFDocument from 'pdfkit'
import { canonicalize } from '../functions-shared/text/canonicalize.ts'
import { extractPdf } from '../functions-shared/pdf/extract.ts'
import { type OcrEngine, readPdf, type ReadPdfOptions } from '../functions-shared/pdf/read.ts'
import { OCR_BUDGET_SPENT } from '../functions-shared/pdf/ocr-port.ts'
import { createNodeOcr } from '../scripts/lib/ocr.ts'
import { createIsolatedExtractor } from '../scripts/lib/pdf-isolate.ts'
import { makePdf, renderPages } from '../scripts/lib/pdf.ts'
import { characterErrorRate, SCAN_AR, SCAN_FR } from './helpers/scans.ts'
import { type3Storm } from './helpers/raw-pdf.ts'

describe('scans as scanners write them', () => {
  let engine: OcrEngine
  const options = (over: Partial<ReadPdfOptions> = {}): ReadPdfOptions => ({
    deadlineMs: 60_000,
    mode: 'auto',
    engine,
    minPageChars: 50,
    maxOcrPages: 100,
    minConfidence: (l) => (l === 'fr' ? 0.8 : 0.7),
    ...over,
  })
  beforeAll(() => {
    engine = createNodeOcr({ concurrency: 1, dpi: 200, pageDeadlineMs: 60_000, idleMs: 0 })
  })
  afterAll(async () => engine?.close())

  it(
    "reads a page scanned at 300, 600 and 1,200 dpi alike: a scan past the text reader's image limit is still a scan, drawn downscaled for the recognizer",
    async () => {
      const patientEngine = createNodeOcr({ concurrency: 1, dpi: 200, pageDeadlineMs: 200_000, idleMs: 0 })
      onTestFinished(() => patientEngine.close())
      const [png] = await renderPages(await makePdf([SCAN_LESSON]), 300)
      const page = await loadImage(png!)
      for (const dpi of [300, 600, 1200]) {
        // the same page as one JPEG of that resolution (1,200 dpi: 139 million pixels, past MAX_IMAGE_PIXELS)
        const scale = dpi / 300
        const canvas = createCanvas(Math.round(page.width * scale), Math.round(page.height * scale))
        canvas.getContext('2d').drawImage(page, 0, 0, canvas.width, canvas.height)
        const scan = await pdfOfImage(canvas.toBuffer('image/jpeg', 80))
        const layer = await extractPdf(scan, { deadlineMs: 60_000, imageCheckBelowChars: 200 })
        expect(layer.pages[0], `${dpi} dpi`).toEqual({ number: 1, text: '', images: true })
        // (what is asserted is the reading, not its time: the deadlines leave room for a machine busy with
        // the rest of the suite, where drawing 139 million pixels took past the minute the others take)
        const read = await readPdf(scan, options({ engine: patientEngine, language: 'fr', deadlineMs: 200_000 }))
        expect(read.ocr, `${dpi} dpi`).toMatchObject({ attempted: 1, pages: 1, failed: 0 })
        expect(canonicalize(read.pages[0]!.text), `${dpi} dpi`).toContain('Leçon 4 : les suites géométriques.')
      }
    },
    600_000,
  )

  it('reads scans whose page images are JBIG2 (a generic region, MMR coded, as scanners write lossless JBIG2)', async () => {
    // the same pages, their Group 4 data carried in JBIG2 segments (JBIG2Decode): MMR is Group 4 coding
    const extract = createIsolatedExtractor()
    try {
      for (const [file, language, want] of [['photosynthese-fr.pdf', 'fr', SCAN_FR[0]!], ['fleuve-ar.pdf', 'ar', SCAN_AR[0]!]] as const) {
        const scan = jbig2FromCcitt(readFileSync(new URL(`./fixtures/ccitt/${file}`, import.meta.url)))
        expect(Buffer.from(scan).toString('latin1')).toContain('/Filter /JBIG2Decode')
        const read = await readPdf(scan, options({ language, extract }))
        expect(read.pages[0], file).toMatchObject({ source: 'ocr' })
        expect(characterErrorRate(canonicalize(want), canonicalize(read.pages[0]!.text)), file).toBeLessThan(0.08)
      }
    } finally {
      await extract.close()
    }
  })

  it("spends at most the document's budget: no page begun past it, none going on past it, and the reading fails naming the pages", async () => {
    // three pages whose drawing takes seconds each (a 60 s page deadline would let them run for minutes)
    const slow = type3Storm(20_000, 2_000, false, 3)
    const patient = createNodeOcr({ concurrency: 1, dpi: 200, pageDeadlineMs: 60_000, idleMs: 0 })
    try {
      const started = performance.now()
      const readings = await patient.recognize(slow, [1, 2, 3], ['fra'], undefined, { budgetMs: 1_500 })
      expect(readings).toEqual([1, 2, 3].map((number) => ({ number, error: OCR_BUDGET_SPENT })))
      expect(performance.now() - started).toBeLessThan(20_000)
      await expect(readPdf(slow, options({ engine: patient, language: 'fr', mode: 'always', ocrBudgetMs: 1_500 }))).rejects.toThrow(
        "the recognizer's budget for this document (2 s, OCR_DOCUMENT_BUDGET_MS) was spent with 3 of 3 pages unread: pages 1-3",
      )
    } finally {
      await patient.close()
    }
  }, 60_000)
})

const SCAN_LESSON =
  'Leçon 4 : les suites géométriques. Une suite est géométrique lorsque chaque terme est le produit du précédent par un même nombre, la raison.'

/** A one-page A4 PDF that is one image (a scan with no text layer). */
async function pdfOfImage(image: Buffer): Promise<Uint8Array> {
  const doc = new PDFDocument({ size: 'A4', margin: 0, autoFirstPage: false })
  const chunks: Buffer[] = []
  doc.on('data', (c: Buffer) => chunks.push(c))
  const done = new Promise<void>((resolve) => doc.on('end', () => resolve()))
  doc.addPage({ size: 'A4', margin: 0 })
  doc.image(image, 0, 0, { width: doc.page.width, height: doc.page.height })
  doc.end()
  await done
  return new Uint8Array(Buffer.concat(chunks))
}

/**
 * A one-page PDF whose page is the Group 4 image of a CCITT scan (tiff2pdf's: /K -1) carried as JBIG2
 * (T.88, embedded stream): a page information segment, then an immediate lossless generic region whose
 * MMR data is that Group 4 data, then the end of the page.
 */
function jbig2FromCcitt(ccittPdf: Buffer): Uint8Array {
  const text = ccittPdf.toString('latin1')
  const dict = /<<((?:(?!>>\s*stream)[\s\S])*?\/CCITTFaxDecode[\s\S]*?)>>\s*stream\r?\n/.exec(text)!
  const width = Number(/\/Width (\d+)/.exec(dict[1]!)![1])
  const height = Number(/\/Height (\d+)/.exec(dict[1]!)![1])
  const start = dict.index + dict[0].length
  const g4 = ccittPdf.subarray(start, text.indexOf('endstream', start)).subarray(0)
  const u32 = (n: number) => Buffer.from([n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255])
  // segment header: number, type (page association in one byte), no referred-to segments, page 1, data length
  const segment = (n: number, type: number, data: Buffer) => Buffer.concat([u32(n), Buffer.from([type, 0, 1]), u32(data.length), data])
  const pageInfo = Buffer.concat([u32(width), u32(height), u32(0), u32(0), Buffer.from([0]), Buffer.from([0, 0])])
  // region info (size, place, combination operator OR), then the generic region's flags: MMR
  const region = Buffer.concat([u32(width), u32(height), u32(0), u32(0), Buffer.from([0]), Buffer.from([1]), g4])
  const jbig2 = Buffer.concat([segment(0, 48, pageInfo), segment(1, 38, region), segment(2, 49, Buffer.alloc(0))])
  const content = `q 612 0 0 792 0 0 cm /Im1 Do Q`
  const objects: Buffer[] = [
    Buffer.from('<< /Type /Catalog /Pages 2 0 R >>', 'latin1'),
    Buffer.from('<< /Type /Pages /Kids [3 0 R] /Count 1 >>', 'latin1'),
    Buffer.from('<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /XObject << /Im1 5 0 R >> >> /Contents 4 0 R >>', 'latin1'),
    Buffer.from(`<< /Length ${content.length} >>\nstream\n${content}\nendstream`, 'latin1'),
    Buffer.concat([
      Buffer.from(
        `<< /Type /XObject /Subtype /Image /Width ${width} /Height ${height} /BitsPerComponent 1 /ColorSpace /DeviceGray /Filter /JBIG2Decode /Length ${jbig2.length} >>\nstream\n`,
        'latin1',
      ),
      jbig2,
      Buffer.from('\nendstream', 'latin1'),
    ]),
  ]
  const parts: Buffer[] = [Buffer.from('%PDF-1.7\n', 'latin1')]
  const offsets: number[] = []
  let length = parts[0]!.length
  objects.forEach((o, i) => {
    offsets.push(length)
    const framed = Buffer.concat([Buffer.from(`${i + 1} 0 obj\n`, 'latin1'), o, Buffer.from('\nendobj\n', 'latin1')])
    parts.push(framed)
    length += framed.length
  })
  parts.push(
    Buffer.from(
      `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}trailer\n<< /Size ${
        objects.length + 1
      } /Root 1 0 R >>\nstartxref\n${length}\n%%EOF\n`,
      'latin1',
    ),
  )
  return new Uint8Array(Buffer.concat(parts))
}
