// Page text out of a PDF with pdf.js, hardened for files from the internet: bounded images, stop at
// errors, no font faces or system fonts, a deadline, and the document destroyed whatever happens.
// (pdf.js 6 no longer compiles fonts with eval at all, the vector of CVE-2024-4367, so the old
// isEvalSupported switch is gone.)
import type { ExtractedPdf, ExtractOptions } from './types.ts'
export type { ExtractedPdf, ExtractOptions, PdfExtractor } from './types.ts'
import { MAX_IMAGE_PIXELS, MAX_INFLATED_BYTES, streamCheck, StreamCheckError, StreamCheckLate } from './stream-check.ts'

// pdf.js is loaded on the first PDF read: a function that never reads one (the docs, or the admin
// routes that list) does not pay for it at cold start.
let pdfjs: Promise<typeof import('pdfjs-dist/legacy/build/pdf.mjs')> | undefined
const loadPdfjs = () => (pdfjs ??= import('pdfjs-dist/legacy/build/pdf.mjs'))

import { joinItems } from './lines.ts'
import { placedAccents } from './placed-accents.ts'
import { needsRules, readFormulas } from './formulas.ts'
import { horizontalRules, type Rule } from './rules.ts'
export type { TextRun } from './text-runs.ts'

export class PdfError extends Error {
  override name = 'PdfError'
}

export const isPdf = (bytes: Uint8Array): boolean =>
  bytes.length >= 5 && bytes[0] === 0x25 && bytes[1] === 0x50 && bytes[2] === 0x44 && bytes[3] === 0x46 && bytes[4] === 0x2d // %PDF-

/**
 * The most characters of text a page may hold: a dense A4 page holds about 5,000, a large page in small
 * print some 15,000; far more only holds up the process that canonicalizes and chunks it (docs/pipeline.md).
 */
export const MAX_PAGE_CHARS = 100_000
/** The most characters of text a PDF may hold: a thousand pages of 10,000. */
export const MAX_TEXT_CHARS = 10_000_000

/**
 * The document from the shares several readers read of it (ExtractOptions.share): the pages in order,
 * refused past MAX_TEXT_CHARS in all as one reader refuses it.
 */
export function mergeShares(shares: readonly ExtractedPdf[]): ExtractedPdf {
  const pages = shares.flatMap((s) => s.pages).sort((a, b) => a.number - b.number)
  if (pages.reduce((sum, p) => sum + p.text.length, 0) > MAX_TEXT_CHARS) throw new PdfError(`the PDF has more than ${MAX_TEXT_CHARS} characters of text`)
  return { pageCount: shares[0]!.pageCount, pages }
}

export async function extractPdf(bytes: Uint8Array, options: ExtractOptions): Promise<ExtractedPdf> {
  if (!isPdf(bytes)) throw new PdfError('not a PDF (the file does not start with %PDF-)')
  // one deadline for the whole extraction: the stream check, then pdf.js; pdf.js may work for a long time
  // without giving the event loop a turn, so it is also checked between pages, not only by a timer
  const deadlineAt = Date.now() + options.deadlineMs
  const late = () => new PdfError(`PDF parsing took longer than ${options.deadlineMs} ms`)
  const maxInflated = options.maxInflatedBytes ?? MAX_INFLATED_BYTES
  const { inflated, largestImagePixels } = await streamCheck(bytes, maxInflated, deadlineAt).catch((err: unknown) => {
    if (err instanceof StreamCheckLate) throw late()
    if (err instanceof StreamCheckError) throw new PdfError(`${err.message}: refused before reading`)
    throw err
  })
  if (inflated > maxInflated) {
    throw new PdfError(`the PDF's compressed streams expand to more than ${Math.round(maxInflated / 2 ** 20)} MB (images aside): refused before reading`)
  }
  const { AnnotationMode, getDocument, OPS } = await loadPdfjs()
  const imageOps = new Set<number>([
    OPS.paintImageXObject,
    OPS.paintInlineImageXObject,
    OPS.paintInlineImageXObjectGroup,
    OPS.paintImageXObjectRepeat,
    OPS.paintImageMaskXObject,
  ])
  const task = getDocument({
    data: bytes.slice(), // pdf.js takes ownership of the buffer
    maxImageSize: MAX_IMAGE_PIXELS,
    stopAtErrors: true,
    disableFontFace: true,
    useSystemFonts: false,
    verbosity: 0,
  })
  let timer: ReturnType<typeof setTimeout> | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(late()), Math.max(0, deadlineAt - Date.now()))
  })
  try {
    return await Promise.race([
      (async () => {
        const doc = await task.promise
        const count = Math.min(doc.numPages, options.maxPages ?? doc.numPages)
        const pages: ExtractedPdf['pages'] = []
        let characters = 0
        const { index, of } = options.share ?? { index: 0, of: 1 }
        for (let n = 1 + index; n <= count; n += of) {
          if (Date.now() > deadlineAt) throw late()
          const page = await doc.getPage(n)
          // as the font maps them: pdf.js's own normalization would make µ a μ and break up ´ (compatibilityForms folds what is typesetting only)
          const content = await page.getTextContent({ disableNormalization: true })
          const runs = placedAccents(content.items.flatMap((item) => ('str' in item ? [item] : [])))
          // the rules a fraction or a radical draws, read only where the runs show one
          let operators: Awaited<ReturnType<typeof page.getOperatorList>> | undefined
          const rules: Rule[] = needsRules(runs)
            ? horizontalRules((operators = await page.getOperatorList({ annotationMode: AnnotationMode.DISABLE })).fnArray, operators.argsArray, OPS)
            : []
          // (a line broken after a slash goes on with no space: "mol/" and "L" are "mol/L")
          const text = joinItems(readFormulas(runs, rules)).replace(/[ \t\u00a0]+/g, ' ').replace(/ *\n */g, '\n').replace(/(?<=\S\/)\n(?=\S)/g, '').trim()
          // what the process that asked does next with the text (canonical form, checks, fingerprint, chunks)
          // takes time in its own thread that grows with it: no real page holds this much
          if (text.length > MAX_PAGE_CHARS) throw new PdfError(`page ${n} has more than ${MAX_PAGE_CHARS} characters of text`)
          if ((characters += text.length) > MAX_TEXT_CHARS) throw new PdfError(`the PDF has more than ${MAX_TEXT_CHARS} characters of text`)
          if (options.imageCheckBelowChars !== undefined && text.length < options.imageCheckBelowChars) {
            const ops = operators ?? (await page.getOperatorList())
            // a page is a scan by its image operators: an image past maxImageSize, which pdf.js leaves out of
            // them, is one the page may paint (the recognizer's renderer draws it, downscaled)
            pages.push({ number: n, text, images: ops.fnArray.some((op) => imageOps.has(op)) || largestImagePixels > MAX_IMAGE_PIXELS })
          } else pages.push({ number: n, text })
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
