// The recognizer (OCR) as the pipeline sees it: a port with no dependencies, so what only needs its type
// (deps.ts, every Edge Function) does not load pdf.js. Node gives an implementation (scripts/lib/ocr.ts).

export type OcrLanguage = 'ara' | 'fra'
export type OcrMode = 'auto' | 'always' | 'never'

export interface OcrReading {
  number: number
  text: string
  /** the recognizer's mean word confidence, 0 to 1 */
  confidence: number
}

export interface OcrFailure {
  number: number
  error: string
}

/** The error of a page the recognizer did not read because the document's budget ran out. */
export const OCR_BUDGET_SPENT = "the document's recognition budget was spent"

export interface OcrEngine {
  /**
   * Renders and recognizes the given pages (1-based) of a PDF, `onPage` after each one; a page that fails
   * or misses its deadline comes back as an OcrFailure, the others as readings, in page order. With
   * `budgetMs`, no page is begun after that long and none goes on past it: those pages come back as
   * OcrFailures whose error is OCR_BUDGET_SPENT.
   */
  recognize(
    pdf: Uint8Array,
    pages: readonly number[],
    languages: readonly OcrLanguage[],
    onPage?: (done: number) => void | Promise<void>,
    options?: { budgetMs?: number },
  ): Promise<(OcrReading | OcrFailure)[]>
  close(): Promise<void>
}
