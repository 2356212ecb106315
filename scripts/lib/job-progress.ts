// How `npm run admin -- watch` shows a running job.

/** A job's progress as a bar: pages read while it reads them, then vectors stored of its chunks. */
export function jobProgress(
  j: {
    status: string
    chunks_created: number
    vectors_upserted: number
    needs_ocr: boolean
    progress: { pages_done: number; pages_total: number | null; pages_ocr: number }
  },
): string {
  const bar = (done: number, total: number) => {
    const width = 20
    const filled = total > 0 ? Math.round((Math.min(done, total) / total) * width) : 0
    return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}]`
  }
  if (j.status === 'queued') return j.needs_ocr ? 'waiting for a worker that can OCR (npm run worker)' : 'waiting'
  const { pages_done: done, pages_total: total, pages_ocr: ocr } = j.progress
  if (j.status === 'parsing') return total === null ? 'reading pages' : `${bar(done, total)} pages ${done}/${total}${ocr ? `, ${ocr} by OCR` : ''}`
  return `${bar(j.vectors_upserted, j.chunks_created)} vectors ${j.vectors_upserted}/${j.chunks_created}${ocr ? ` (${ocr} pages by OCR)` : ''}`
}

/**
 * The pause before the watch's next look, when its last look only watched (one that dispatched a job
 * drives the work and goes on at `interval`). Each look costs `perLook` admin requests (the job list,
 * and a dispatch with --dispatch) out of the admin's rate limit (X-RateLimit-Limit, a one-minute window,
 * spec §8.1). While more than half of it remains, the watch looks every `interval` ms; below half, it
 * spreads its looks so that they take half the limit a minute, and the other half stays free for the
 * operator's next commands (a watch at 100 ms that spent it all while a job ran left the next command,
 * and the watch itself, waiting out a 429 for most of a minute).
 */
export function watchPause(interval: number, perLook: number, rate: { limit: number; remaining: number } | null, windowMs = 60_000): number {
  if (!rate || rate.remaining > rate.limit / 2) return interval
  return Math.max(interval, Math.ceil((windowMs * perLook) / Math.max(1, rate.limit / 2)))
}
