// Curriculum-style PDFs made with pdfkit (the demo portal, tests and benchmarks): French text with the standard fonts, Arabic
// with the Amiri font from @fontsource/amiri (shaped by fontkit, drawn left to right as pdfkit does, so
// pdf.js extracts it in visual order, as many real PDFs do).
import { createRequire } from 'node:module'
import PDFDocument from 'pdfkit'

const require = createRequire(import.meta.url)
const AMIRI = require.resolve('@fontsource/amiri/files/amiri-arabic-400-normal.woff')

/**
 * `rtl` (Arabic only) lays each line out right to left as a reader sees it: the words, broken into lines
 * in reading order to fit the width, are placed from the right margin leftwards. Without it pdfkit draws
 * the words left to right (the reading order reversed on the page).
 */
export async function makePdf(pages: string[], options: { arabic?: boolean; rtl?: boolean; title?: string } = {}): Promise<Uint8Array> {
  const doc = new PDFDocument({ size: 'A4', margin: 50, info: { Title: options.title ?? 'Leçon', CreationDate: new Date(Date.UTC(2026, 0, 1)) } })
  const chunks: Buffer[] = []
  doc.on('data', (c: Buffer) => chunks.push(c))
  const done = new Promise<void>((resolve) => doc.on('end', () => resolve()))
  if (options.arabic) doc.font(AMIRI)
  pages.forEach((text, i) => {
    if (i > 0) doc.addPage()
    doc.fontSize(12)
    if (!(options.arabic && options.rtl)) return void doc.text(text, { align: options.arabic ? 'right' : 'left' })
    const width = doc.page.width - doc.page.margins.left - doc.page.margins.right
    const lines: string[][] = [[]]
    for (const word of text.split(/\s+/).filter(Boolean)) {
      const line = lines.at(-1)!
      if (line.length > 0 && doc.widthOfString([...line, word].join(' ')) > width) lines.push([word])
      else line.push(word)
    }
    // each word its own text item, drawn in reading order from the right margin leftwards
    const space = doc.widthOfString(' ')
    let y = doc.y
    for (const line of lines) {
      if (y + doc.currentLineHeight(true) > doc.page.height - doc.page.margins.bottom) {
        doc.addPage()
        y = doc.page.margins.top
      }
      let x = doc.page.width - doc.page.margins.right
      for (const word of line) {
        x -= doc.widthOfString(word)
        doc.text(word, x, y, { lineBreak: false })
        x -= space
      }
      y += doc.currentLineHeight(true)
    }
  })
  doc.end()
  await done
  return new Uint8Array(Buffer.concat(chunks))
}
