// What ingestion counts, on the series of lib/metrics.ts (ingestion_*).
import type { IngestionMetrics } from '../lib/metrics.ts'

/** Counts what the recognizer did for one document (pipeline, scraper and upload alike). */
export function countOcr(m: IngestionMetrics, ocr: { pages: number; attempted: number; failed: number; seconds: number }) {
  if (ocr.attempted === 0) return
  m.ocrPages.inc({ outcome: 'used' }, ocr.pages)
  m.ocrPages.inc({ outcome: 'failed' }, ocr.failed)
  m.ocrPages.inc({ outcome: 'kept_layer' }, Math.max(0, ocr.attempted - ocr.pages - ocr.failed))
  m.ocrSeconds.inc(ocr.seconds)
}

/** A failure's reason, coarse enough to be a label. */
export function failureReason(message: string): string {
  if (message.startsWith('download failed')) return 'download'
  if (/not a PDF|unreadable PDF|took longer/.test(message)) return 'pdf'
  if (/no page with text|no text layer/.test(message)) return 'no_text'
  if (/OCR confidence|recogni/.test(message)) return 'ocr'
  if (/embed/i.test(message)) return 'embedding'
  if (/no grade or subject/.test(message)) return 'metadata'
  if (/worker stopped responding/.test(message)) return 'stale'
  return 'other'
}
