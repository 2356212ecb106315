// The shapes of a PDF's extraction, apart from the code that makes it (extract.ts): what imports
// only them (Deps) does not bring the PDF reader and its ciphers into every function's module graph.

export interface ExtractedPdf {
  pageCount: number
  /**
   * pages in order; text is whitespace-cleaned, lines kept. `images` (whether the page paints an image)
   * is looked at only for pages with less text than `imageCheckBelowChars`: a scan, or a title page
   */
  pages: { number: number; text: string; images?: boolean }[]
}

export interface ExtractOptions {
  deadlineMs: number
  maxPages?: number
  imageCheckBelowChars?: number
  maxInflatedBytes?: number
  /**
   * a reader's share of the pages when several read one document at once: pages index + 1, index + 1 +
   * of, index + 1 + 2 × of... (every page when absent); mergeShares puts the shares back together
   */
  share?: { index: number; of: number }
}

/** extractPdf, or a runtime's way of running it elsewhere (Node: a worker thread, scripts/lib/pdf-isolate.ts). */
export type PdfExtractor = (bytes: Uint8Array, options: ExtractOptions) => Promise<ExtractedPdf>

/**
 * The PDF readers are all busy and as many readings already wait for one as may: the caller is told to
 * come back (an upload: 503 with Retry-After), nothing is read.
 */
export class PdfReadersBusy extends Error {
  override name = 'PdfReadersBusy'
  readonly retryAfterSeconds: number
  constructor(retryAfterSeconds: number) {
    super('every PDF reader is busy and the queue for them is full')
    this.retryAfterSeconds = retryAfterSeconds
  }
}
