import { Counter, Gauge, Histogram, type Registry } from 'prom-client'
import type { Sql } from '../db/client.ts'

export interface IngestionMetrics {
  stageSeconds: Histogram<'stage'>
  pages: Counter
  chunks: Counter
  retries: Counter<'stage'>
  outcomes: Counter<'outcome'>
  failures: Counter<'reason'>
  ocrPages: Counter<'outcome'>
  ocrSeconds: Counter
}

const byRegistry = new WeakMap<Registry, IngestionMetrics>()

/** Stage durations, pages and chunks processed, retries, outcomes and failures by reason; jobs by state. */
export function ingestionMetrics(registry: Registry, sql: Sql): IngestionMetrics {
  let m = byRegistry.get(registry)
  if (!m) {
    m = {
      stageSeconds: new Histogram({ name: 'ingestion_stage_seconds', help: 'Time spent per pipeline stage', labelNames: ['stage'], buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300], registers: [registry] }),
      pages: new Counter({ name: 'ingestion_pages_total', help: 'Pages with text processed', registers: [registry] }),
      chunks: new Counter({ name: 'ingestion_chunks_total', help: 'Chunks stored', registers: [registry] }),
      retries: new Counter({ name: 'ingestion_retries_total', help: 'Retries of transient failures, by stage', labelNames: ['stage'], registers: [registry] }),
      outcomes: new Counter({ name: 'ingestion_jobs_finished_total', help: 'Jobs finished, by outcome', labelNames: ['outcome'], registers: [registry] }),
      failures: new Counter({ name: 'ingestion_failures_total', help: 'Failed jobs, by reason', labelNames: ['reason'], registers: [registry] }),
      ocrPages: new Counter({
        name: 'ingestion_ocr_pages_total',
        help: 'Pages given to the recognizer, by outcome: used (its text kept), kept_layer (the text layer read better), failed (error or deadline)',
        labelNames: ['outcome'],
        registers: [registry],
      }),
      ocrSeconds: new Counter({ name: 'ingestion_ocr_seconds_total', help: 'Wall time spent recognizing pages (rendering included)', registers: [registry] }),
    }
    new Gauge({
      name: 'ingestion_jobs',
      help: 'Ingestion jobs by state (read from the database at scrape time)',
      labelNames: ['state'],
      registers: [registry],
      async collect() {
        const rows = await sql<{ status: string; n: number }[]>`select status, count(*)::int as n from public.ingestion_jobs group by status`.catch(() => [])
        this.reset()
        for (const r of rows) this.set({ state: r.status }, r.n)
      },
    })
    byRegistry.set(registry, m)
  }
  return m
}

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
