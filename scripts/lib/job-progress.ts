// How `npm run admin -- watch` shows a running job.

/** A job's progress as a bar: pages read while it reads them, then vectors stored of its chunks. */
export function jobProgress(j: { status: string; chunks_created: number; vectors_upserted: number; needs_ocr: boolean; progress: { pages_done: number; pages_total: number | null; pages_ocr: number } }): string {
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
