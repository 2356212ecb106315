// The quality gate of the scraper pipeline (spec §1 step 2, §2.11, §7.7, §8.4). A failure's reason names
// the check, e.g. "text too short (120 chars below 200 minimum)".

export interface QualityResult {
  passed: boolean
  reason?: string
  warnings: string[]
}

export interface QualityInput {
  /** the raw bytes of the file, to check the size (and UTF-8 for text files) */
  sizeBytes: number
  /** canonical text of the content pages */
  text: string
  /** pages in the file, and pages with a usable text layer */
  pageCount: number
  textPages: number
  language: 'fr' | 'ar' | 'hassaniya'
  /** the text as decoded; a replacement character means bytes that were not valid UTF-8 */
  decodedWithReplacements?: boolean
  /**
   * what the recognizer read: the length of the recognized text among `text` and its mean confidence
   * (0-1); and why there is none when a scan could not be read (OCR_MODE never, every page failed)
   */
  ocr?: { chars: number; confidence: number | null; unavailable?: string | undefined }
}

export interface QualityLimits {
  minTextChars: number
  maxFileBytes: number
  minConfidenceAr: number
  minConfidenceFr: number
}

/**
 * Text-quality confidence, for PDFs with a text layer: the share of characters that are letters,
 * digits, spaces or common punctuation of the expected script, times the share of pages that have
 * text. Garbled extraction (wrong font encodings: symbols, private-use characters, control characters)
 * and scans with a few text pages score low. Recognized (OCR) text is judged by the recognizer's own
 * confidence instead (documentConfidence).
 */
export function textConfidence(text: string, pageCount: number, textPages: number): number {
  if (text.length === 0 || pageCount === 0) return 0
  let good = 0
  let total = 0
  for (const ch of text) {
    total++
    if (/[\p{L}\p{N}\s.,;:!?'"()«»\-–—%/\u060C\u061B\u061F\u066A-\u066C]/u.test(ch) && !/[\p{Co}\uFFFD]/u.test(ch)) good++
  }
  return (good / total) * Math.min(1, textPages / pageCount)
}

/**
 * The confidence of a document whose text is partly or wholly recognized: the recognizer's mean
 * confidence for the recognized characters and textConfidence for the rest, weighted by length.
 */
export function documentConfidence(input: QualityInput): number {
  const layer = textConfidence(input.text, input.pageCount, input.textPages)
  const ocr = input.ocr
  if (!ocr || ocr.confidence === null || ocr.chars <= 0) return layer
  const total = Math.max(Array.from(input.text).length, ocr.chars)
  const share = Math.min(1, ocr.chars / total)
  const pages = input.pageCount === 0 ? 0 : Math.min(1, input.textPages / input.pageCount)
  return share * ocr.confidence * pages + (1 - share) * layer
}

export function checkQuality(input: QualityInput, limits: QualityLimits): QualityResult {
  const warnings: string[] = []
  if (input.sizeBytes > limits.maxFileBytes) {
    return { passed: false, reason: `file too large (${input.sizeBytes} bytes above ${limits.maxFileBytes} maximum)`, warnings }
  }
  if (input.decodedWithReplacements || input.text.includes('\uFFFD')) {
    return { passed: false, reason: 'invalid encoding (text is not valid UTF-8)', warnings }
  }
  if (input.textPages === 0) {
    return { passed: false, reason: `no text layer (scanned PDF; ${input.ocr?.unavailable ?? 'OCR is not available'})`, warnings }
  }
  const chars = Array.from(input.text).length
  if (chars < limits.minTextChars) {
    return { passed: false, reason: `text too short (${chars} chars below ${limits.minTextChars} minimum)`, warnings }
  }
  const confidence = documentConfidence(input)
  const minimum = input.language === 'fr' ? limits.minConfidenceFr : limits.minConfidenceAr
  if (confidence < minimum) {
    return { passed: false, reason: `low OCR confidence (${confidence.toFixed(2)} below ${minimum.toFixed(2)})`, warnings }
  }
  if (input.textPages < input.pageCount) warnings.push(`${input.pageCount - input.textPages} of ${input.pageCount} pages have no text`)
  if (confidence < minimum + 0.1) warnings.push(`text confidence ${confidence.toFixed(2)} is close to the ${minimum.toFixed(2)} minimum`)
  return { passed: true, warnings }
}
