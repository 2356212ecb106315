// Page text out of a PDF with pdf.js, hardened for files from the internet: bounded images, stop at
// errors, no font faces or system fonts, a deadline, and the document destroyed whatever happens.
// (pdf.js 6 no longer compiles fonts with eval at all, the vector of CVE-2024-4367, so the old
// isEvalSupported switch is gone.)
import { getDocument } from 'pdfjs-dist/legacy/build/pdf.mjs'

export interface ExtractedPdf {
  pageCount: number
  /** pages in order; text is whitespace-cleaned, lines kept */
  pages: { number: number; text: string }[]
}

export class PdfError extends Error {
  override name = 'PdfError'
}

export const isPdf = (bytes: Uint8Array): boolean =>
  bytes.length >= 5 && bytes[0] === 0x25 && bytes[1] === 0x50 && bytes[2] === 0x44 && bytes[3] === 0x46 && bytes[4] === 0x2d // %PDF-

export async function extractPdf(bytes: Uint8Array, options: { deadlineMs: number; maxPages?: number }): Promise<ExtractedPdf> {
  if (!isPdf(bytes)) throw new PdfError('not a PDF (the file does not start with %PDF-)')
  const task = getDocument({
    data: bytes.slice(), // pdf.js takes ownership of the buffer
    maxImageSize: 16 * 1024 * 1024,
    stopAtErrors: true,
    disableFontFace: true,
    useSystemFonts: false,
    verbosity: 0,
  })
  // pdf.js may work for a long time without giving the event loop a turn, so the deadline is also
  // checked between pages, not only by a timer
  const deadlineAt = Date.now() + options.deadlineMs
  const late = () => new PdfError(`PDF parsing took longer than ${options.deadlineMs} ms`)
  let timer: ReturnType<typeof setTimeout> | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(late()), options.deadlineMs)
  })
  try {
    return await Promise.race([
      (async () => {
        const doc = await task.promise
        const count = Math.min(doc.numPages, options.maxPages ?? doc.numPages)
        const pages: ExtractedPdf['pages'] = []
        for (let n = 1; n <= count; n++) {
          if (Date.now() > deadlineAt) throw late()
          const page = await doc.getPage(n)
          const content = await page.getTextContent()
          let text = ''
          for (const item of content.items) {
            if (!('str' in item)) continue
            text += item.str
            text += item.hasEOL ? '\n' : ' '
          }
          pages.push({ number: n, text: text.replace(/[ \t\u00a0]+/g, ' ').replace(/ *\n */g, '\n').trim() })
          page.cleanup()
        }
        return { pageCount: doc.numPages, pages }
      })(),
      deadline,
    ])
  } catch (err) {
    if (err instanceof PdfError) throw err
    throw new PdfError(`unreadable PDF: ${(err as Error).message}`, { cause: err })
  } finally {
    clearTimeout(timer)
    await task.destroy().catch(() => {})
  }
}
