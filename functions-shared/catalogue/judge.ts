// The judgement of a downloaded PDF, as the scraper makes it for a new link and for a known one whose
// file changed: read (scanned pages recognized up to a sample), canonicalized, checked for quality, its
// language found and its text fingerprinted.
import type { ServiceContext } from '../deps.ts'
import type { Source } from '../sources-file.ts'
import type { DiscoveredLink } from './discover.ts'
import { type LinkMetadata, linkMetadata } from './sources.ts'
import { arabicShare, contentPages, matchingForm } from '../text/canonicalize.ts'
import { checkQuality } from './quality.ts'
import { PdfError } from '../pdf/extract.ts'
import { readPdf, readPdfSettings } from '../pdf/read.ts'
import { cleanPages } from '../pdf/clean-pages.ts'
import { countOcr } from '../ingestion/metrics.ts'
import { simhash, toSigned } from '../text/simhash.ts'

export type Judgement =
  | { rejected: string }
  | {
    rejected: null
    meta: LinkMetadata
    language: string | null
    /** the SimHash of the folded text, signed, as a decimal string; null for a scan that waits for OCR */
    fingerprint: string | null
    /** pages need the recognizer where this process has none: the job waits for a Node worker */
    waitsForOcr: boolean
    /** the recognizer read pages (or must): the job is marked as needing OCR */
    needsOcr: boolean
    /** the quality check's warnings and what the recognizer did, for the job's first audit row */
    details: { warnings: string[]; ocr_pages?: number }
  }

/** Reads and judges a PDF the scraper downloaded for `link`: a reason to refuse it, or what to register. */
export async function judgeFile(ctx: ServiceContext, source: Source, link: DiscoveredLink, file: { bytes: Uint8Array }): Promise<Judgement> {
  const { config } = ctx.deps
  const meta = linkMetadata(source, link)
  let extracted
  try {
    // scanned pages and unreadable text layers are recognized here already (their text is judged and
    // fingerprinted like any other); the recognizer keeps its readings, so the ingestion does not redo them
    extracted = await readPdf(file.bytes, {
      ...readPdfSettings(config),
      engine: ctx.deps.ocr,
      extract: ctx.deps.extractPdf,
      language: meta.language,
      // a sample: enough to judge and fingerprint a scan; the job reads the rest (with progress)
      maxOcrPages: Math.min(config.OCR_MAX_PAGES, config.OCR_SCRAPER_PAGES),
    })
  } catch (err) {
    if (!(err instanceof PdfError)) throw err
    return { rejected: err.message }
  }
  countOcr(ctx.deps.metrics.ingestion, extracted.ocr)
  const options = { boilerplate: source.boilerplate, taaMarbutaToHa: source.taa_marbuta_to_ha, hamzaCarriers: source.hamza_carriers }
  const pages = cleanPages(extracted.pages, config.QUALITY_MIN_PAGE_CHARS, options).map((p) => p.text)
  const text = pages.join('\n')
  const ocrText = cleanPages(extracted.pages.filter((p) => p.source === 'ocr'), config.QUALITY_MIN_PAGE_CHARS, options).map((p) => p.text).join('\n')
  // pages that need the recognizer where this process has none (Edge Functions): the document is
  // registered and its job waits for a Node worker, which reads and judges the pages
  const waitsForOcr = extracted.needsOcr.length > 0
  const language = meta.language === 'hassaniya' ? meta.language : (writtenIn(extracted.pages, config.QUALITY_MIN_TEXT_CHARS, options) ?? meta.language ??
    (text.length > 0 ? (arabicShare(text) > 0.5 ? 'ar' : 'fr') : null))
  const quality = waitsForOcr
    ? { passed: true, warnings: [`${extracted.needsOcr.length} of ${extracted.pageCount} pages need OCR: the job waits for a Node worker`] }
    : checkQuality(
      {
        sizeBytes: file.bytes.byteLength,
        text,
        // pages left for the ingestion to recognize are not judged here, nor pages with nothing to read
        pageCount: extracted.pageCount - extracted.ocr.skipped - extracted.emptyPages.length,
        textPages: extracted.pages.filter((p) => p.text.trim() !== '' && !extracted.emptyPages.includes(p.number)).length,
        language: language ?? 'ar',
        ocr: {
          chars: ocrText.length,
          confidence: extracted.ocr.confidence,
          // what kept the pages from the recognizer, never "not available" where it is
          unavailable: config.OCR_MODE === 'never'
            ? 'OCR_MODE is never'
            : extracted.ocr.attempted > 0
            ? `the recognizer read nothing in ${extracted.ocr.attempted} pages`
            : ctx.deps.ocr
            ? 'no page paints an image to recognize'
            : undefined,
        },
      },
      {
        minTextChars: config.QUALITY_MIN_TEXT_CHARS,
        maxFileBytes: config.UPLOAD_MAX_BYTES,
        minConfidenceAr: config.OCR_MIN_CONFIDENCE_AR,
        minConfidenceFr: config.OCR_MIN_CONFIDENCE_FR,
      },
    )
  if (!quality.passed) return { rejected: quality.reason! }
  const more = extracted.ocr.skipped
  if (more > 0) quality.warnings.push(`${more} more ${more === 1 ? 'page needs' : 'pages need'} OCR: the ingestion reads ${more === 1 ? 'it' : 'them'}`)
  // the fingerprint compares folded text: two typesettings of one lesson differ in hamza forms and tatweel
  // (a scan that waits for OCR has too little text to compare: it gets none, and is not a duplicate)
  const fingerprint = waitsForOcr && matchingForm(text, options).length < config.QUALITY_MIN_TEXT_CHARS
    ? null
    : toSigned(simhash(matchingForm(text, options))).toString()
  return {
    rejected: null,
    meta,
    language,
    fingerprint,
    waitsForOcr,
    needsOcr: waitsForOcr || extracted.ocr.pages > 0,
    details: { warnings: quality.warnings, ...(extracted.ocr.attempted > 0 ? { ocr_pages: extracted.ocr.pages } : {}) },
  }
}

/**
 * The language a PDF's text layer is written in, when it says so clearly: Arabic when more than 80 % of
 * its letters are Arabic, French when fewer than 20 % are, over at least `minChars` characters; else
 * null. It decides over what the listing says (a rule on the link's text): an Arabic portal lists French
 * lessons under Arabic link texts, and a French one Arabic lessons under French ones, and such a lesson was
 * stored, judged, chunked and filtered on in the listing's language. Pages the recognizer read are left
 * out: they were read in the listing's language. (Hassaniya, written in Arabic script, is the listing's
 * to say.)
 */
function writtenIn(read: { text: string; source: string }[], minChars: number, options: Parameters<typeof contentPages>[2]): 'ar' | 'fr' | null {
  const layer = contentPages(read.filter((p) => p.source !== 'ocr').map((p) => p.text), 0, options).join('\n')
  if (matchingForm(layer, options).length < minChars) return null
  const share = arabicShare(layer)
  return share > 0.8 ? 'ar' : share < 0.2 ? 'fr' : null
}
