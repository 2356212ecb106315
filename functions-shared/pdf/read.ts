// The pages of a PDF as the pipeline stores them: the text layer where it reads right, the recognizer's
// reading (OCR) of the page's image where the layer is missing or fails the readability check
// (OCR_MODE auto), of every page (always), or never. The recognizer is a port: Node gives one
// (tesseract.js on pages rendered by pdf.js, scripts/lib/ocr.ts); Edge Functions have none, and then
// the pages that need it are reported so the job can wait for a Node worker.
import { extractPdf, PdfError, type PdfExtractor } from './extract.ts'
import { arabicShare, canonicalize, matchingForm } from '../text/canonicalize.ts'
import { readability } from '../text/readability.ts'
import { orderAgreement, repairLamAlef } from '../text/lam-alef.ts'

import type { Config } from '../config.ts'
import { OCR_BUDGET_SPENT, type OcrEngine, type OcrLanguage, type OcrMode } from './ocr-port.ts'

export type { OcrEngine, OcrFailure, OcrLanguage, OcrMode, OcrReading } from './ocr-port.ts'

/**
 * The recognizer's languages for a document of unknown language: one page read with both models tells the
 * script, then the document is read with that model alone (both at once misread more: 17 % of Arabic
 * characters against 8 % with the Arabic model alone, on a demo lesson). A failed probe keeps both.
 */
async function chooseLanguages(engine: OcrEngine, bytes: Uint8Array, page: number, language: string | null | undefined): Promise<OcrLanguage[]> {
  const languages = ocrLanguagesFor(language)
  if (languages.length === 1) return languages
  const [probe] = await engine.recognize(bytes, [page], languages)
  if (!probe || 'error' in probe || probe.text.trim() === '') return languages
  return [arabicShare(probe.text) > 0.5 ? 'ara' : 'fra']
}

/** Recognizer languages for a document: Arabic script for Arabic and Hassaniya, both when unknown. */
export function ocrLanguagesFor(language: string | null | undefined): OcrLanguage[] {
  if (language === 'fr') return ['fra']
  if (language === 'ar' || language === 'hassaniya') return ['ara']
  return ['ara', 'fra']
}

export interface ReadPage {
  number: number
  /** the text as extracted or recognized (not yet canonicalized) */
  text: string
  source: 'pdf' | 'ocr'
  /** the recognizer's confidence (0-1) for OCR text; null for a text layer */
  confidence: number | null
}

export interface ReadPdf {
  pageCount: number
  pages: ReadPage[]
  ocr: {
    /** pages whose text now comes from the recognizer */
    pages: number
    /** pages given to the recognizer (some keep their text layer, the better reading) */
    attempted: number
    failed: number
    /** pages whose layer read lam-alef backwards, put right by the recognizer's reading (repairLamAlef) */
    repaired: number
    /** pages past OCR_MAX_PAGES, left as their text layer (or out) */
    skipped: number
    seconds: number
    /** mean confidence of the recognized text, weighted by its length; null without OCR text */
    confidence: number | null
  }
  /** pages that need the recognizer where none is available (Edge Functions): the job waits for Node */
  needsOcr: number[]
  /**
   * pages with nothing to read: too little text and no image (a blank page, a title), or a scanned
   * image the recognizer read nothing on (a blank sheet fed through the scanner). They are no text
   * missing, so they do not count against a document's confidence (quality.ts)
   */
  emptyPages: number[]
}

/**
 * The pages judged blank, or none when every page would be: a document with nothing but such pages is
 * judged on what it holds (its text too short, or no text layer), not let through as all blank.
 */
const blankAmong = (empty: number[], pageCount: number): number[] => (empty.length >= pageCount ? [] : empty.sort((a, b) => a - b))

export interface ReadPdfOptions {
  deadlineMs: number
  mode: OcrMode
  engine?: OcrEngine | undefined
  /** how the text layers are read: extractPdf in this thread, unless the runtime gives another way (Deps.extractPdf) */
  extract?: PdfExtractor | undefined
  language?: string | null | undefined
  /** a page with fewer characters than this (folded) has no usable text layer */
  minPageChars: number
  maxOcrPages: number
  /** the time the recognizer may spend on the document (OCR_DOCUMENT_BUDGET_MS); past it the reading fails */
  ocrBudgetMs?: number
  /** the confidence under which a recognized page does not replace a text layer */
  minConfidence: (language: 'fr' | 'ar') => number
  onProgress?: (progress: { done: number; total: number }) => void | Promise<void>
  now?: () => number
}

/** The settings part of ReadPdfOptions, from the service's configuration (the scraper, jobs and uploads read alike). */
export function readPdfSettings(
  config: Config,
): Pick<ReadPdfOptions, 'deadlineMs' | 'mode' | 'minPageChars' | 'maxOcrPages' | 'ocrBudgetMs' | 'minConfidence'> {
  return {
    deadlineMs: config.PDF_PARSE_DEADLINE_MS,
    mode: config.OCR_MODE,
    minPageChars: config.QUALITY_MIN_PAGE_CHARS,
    maxOcrPages: config.OCR_MAX_PAGES,
    ocrBudgetMs: config.OCR_DOCUMENT_BUDGET_MS,
    minConfidence: (language) => (language === 'fr' ? config.OCR_MIN_CONFIDENCE_FR : config.OCR_MIN_CONFIDENCE_AR),
  }
}

/**
 * Which pages the recognizer reads, by the mode: auto, pages whose layer fails the readability check and
 * pages with too little text that paint an image (a scan; a short page of drawn text has nothing more
 * to give); always, every page; never, none.
 */
export function pagesNeedingOcr(pages: readonly { number: number; text: string; images?: boolean }[], mode: OcrMode, minPageChars: number): number[] {
  if (mode === 'never') return []
  if (mode === 'always') return pages.map((p) => p.number)
  return pages.filter((p) => (matchingForm(canonicalize(p.text)).length < minPageChars ? p.images !== false : !readability(p.text).readable)).map((p) =>
    p.number
  )
}

/**
 * A recognizer misses narrow word spaces ("الصغيرةقرب"). Taa marbuta and alef maqsura end an Arabic word
 * (a suffix turns them into ت and ي), so a letter right after one starts the next word: the space goes
 * back there. Nothing else is guessed.
 */
export function separateRunOnWords(text: string): string {
  return text.replace(/([\u0629\u0649])(?=[\u0621-\u064A])/g, '$1 ')
}

/** Page numbers as ranges: "3, 5-9, 12". */
function pageList(numbers: readonly number[]): string {
  const parts: string[] = []
  for (let i = 0; i < numbers.length;) {
    let j = i
    while (j + 1 < numbers.length && numbers[j + 1] === numbers[j]! + 1) j++
    parts.push(j > i ? `pages ${numbers[i]}-${numbers[j]}` : `page ${numbers[i]}`)
    i = j + 1
  }
  return parts.join(', ')
}

/** The share of a repaired layer's words that must come in the recognizer's order (orderAgreement). */
export const LAYER_ORDER_AGREEMENT = 0.6

export async function readPdf(bytes: Uint8Array, options: ReadPdfOptions): Promise<ReadPdf> {
  const now = options.now ?? (() => performance.now())
  // images are looked for on short pages only (generously: the check folds and trims after)
  const extracted = await (options.extract ?? extractPdf)(bytes, {
    deadlineMs: options.deadlineMs,
    imageCheckBelowChars: options.mode === 'auto' ? options.minPageChars * 4 : undefined,
  })
  const pages: ReadPage[] = extracted.pages.map((p) => ({ number: p.number, text: p.text, source: 'pdf', confidence: null }))
  const wanted = pagesNeedingOcr(extracted.pages, options.mode, options.minPageChars)
  const short = (text: string) => matchingForm(canonicalize(text)).length < options.minPageChars
  const emptyPages = extracted.pages.filter((p) => short(p.text) && p.images === false).map((p) => p.number)
  const result: ReadPdf = {
    pageCount: extracted.pageCount,
    pages,
    ocr: { pages: 0, attempted: 0, failed: 0, repaired: 0, skipped: 0, seconds: 0, confidence: null },
    needsOcr: [],
    emptyPages: blankAmong(emptyPages, extracted.pageCount),
  }
  if (wanted.length === 0) return result
  if (!options.engine) return { ...result, needsOcr: wanted }
  const chosen = wanted.slice(0, options.maxOcrPages)
  result.ocr.skipped = wanted.length - chosen.length
  result.ocr.attempted = chosen.length
  const started = now()
  await options.onProgress?.({ done: 0, total: chosen.length })
  const languages = await chooseLanguages(options.engine, bytes, chosen[0]!, options.language)
  const budgetMs = options.ocrBudgetMs === undefined ? undefined : Math.max(0, options.ocrBudgetMs - (now() - started))
  const readings = await options.engine.recognize(bytes, chosen, languages, (done) => options.onProgress?.({ done, total: chosen.length }), { budgetMs })
  result.ocr.seconds = (now() - started) / 1000
  // a document that would hold the recognizer past its budget fails, naming what it left unread: the
  // worker moves on (a page whose drawing takes a minute, times OCR_MAX_PAGES, is hours)
  const unread = readings.filter((r) => 'error' in r && r.error === OCR_BUDGET_SPENT).map((r) => r.number)
  if (unread.length > 0) {
    throw new PdfError(
      `the recognizer's budget for this document (${
        Math.round((options.ocrBudgetMs ?? 0) / 1000)
      } s, OCR_DOCUMENT_BUDGET_MS) was spent with ${unread.length} of ${chosen.length} pages unread: ${pageList(unread)}`,
    )
  }
  let weighted = 0
  let chars = 0
  for (const reading of readings) {
    if ('error' in reading) {
      result.ocr.failed++
      continue
    }
    const page = pages[reading.number - 1]!
    const text = separateRunOnWords(reading.text)
    const layer = canonicalize(page.text)
    const recognized = canonicalize(text)
    if (matchingForm(recognized).length < options.minPageChars) {
      if (short(page.text)) emptyPages.push(reading.number)
      continue
    }
    const language = options.language === 'fr' || (options.language == null && !/[\u0621-\u064A]/.test(recognized)) ? 'fr' : 'ar'
    // the better reading: no usable layer, or a layer that fails the check while the recognizer is
    // confident and reads cleaner (mode always: a confident reading replaces the layer)
    const noLayer = matchingForm(layer).length < options.minPageChars
    const confident = reading.confidence >= options.minConfidence(language)
    const layerCheck = readability(page.text)
    const readingCheck = readability(text)
    // (auto) a layer that reads lam-alef backwards keeps its letters and marks once the recognizer's
    // reading has told which of its alef-lam pairs were turned round, when it then passes the check,
    // reads at least as clean as a confident reading, and has its words in the order the reading has
    // them (LAYER_ORDER_AGREEMENT)
    if (options.mode === 'auto' && !noLayer && layerCheck.problems.reversedLamAlef > 0) {
      const fixed = repairLamAlef(layer, text)
      const check = readability(fixed.text)
      if (
        fixed.repaired > 0 && check.readable && (!confident || check.score <= readingCheck.score) &&
        orderAgreement(fixed.text, recognized) >= LAYER_ORDER_AGREEMENT
      ) {
        pages[reading.number - 1] = { number: reading.number, text: fixed.text, source: 'pdf', confidence: null }
        result.ocr.repaired++
        continue
      }
    }
    const better = options.mode === 'always' ? confident : confident && readingCheck.score < layerCheck.score
    if (!noLayer && !better) continue
    pages[reading.number - 1] = { number: reading.number, text, source: 'ocr', confidence: reading.confidence }
    result.ocr.pages++
    weighted += reading.confidence * recognized.length
    chars += recognized.length
  }
  result.ocr.confidence = chars > 0 ? weighted / chars : null
  result.emptyPages = blankAmong(emptyPages, extracted.pageCount)
  return result
}
