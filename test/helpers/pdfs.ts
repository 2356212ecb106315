// Curriculum-style PDFs generated at test time with pdfkit: French text with the standard fonts, Arabic
// with the Amiri font from @fontsource/amiri (shaped by fontkit, drawn left to right as pdfkit does, so
// pdf.js extracts it in visual order, as many real PDFs do).
import { createRequire } from 'node:module'
import PDFDocument from 'pdfkit'

const require = createRequire(import.meta.url)
const AMIRI = require.resolve('@fontsource/amiri/files/amiri-arabic-400-normal.woff')

export async function makePdf(pages: string[], options: { arabic?: boolean; title?: string } = {}): Promise<Uint8Array> {
  const doc = new PDFDocument({ size: 'A4', margin: 50, info: { Title: options.title ?? 'Leçon', CreationDate: new Date(Date.UTC(2026, 0, 1)) } })
  const chunks: Buffer[] = []
  doc.on('data', (c: Buffer) => chunks.push(c))
  const done = new Promise<void>((resolve) => doc.on('end', () => resolve()))
  if (options.arabic) doc.font(AMIRI)
  pages.forEach((text, i) => {
    if (i > 0) doc.addPage()
    doc.fontSize(12).text(text, { align: options.arabic ? 'right' : 'left' })
  })
  doc.end()
  await done
  return new Uint8Array(Buffer.concat(chunks))
}
