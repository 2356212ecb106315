// Sync a scraper source and ingest every reference it discovered, through the HTTP API as an admin: the
// demo and the retrieval evaluation both build their curriculum this way. Progress goes to `onProgress`.
import type { ApiClient } from './api-client.ts'
import type { SyncResult } from '../../functions-shared/catalogue/sync.ts'

/**
 * A queued job for each reference: the one a sync already queued, read from one job listing, else one
 * asked for (`POST /admin/ingest/{id}`), so that a batch spends two admin requests, not one a reference.
 */
export async function queueIngestion(admin: ApiClient, referenceIds: readonly string[]): Promise<{ status: string; job_id: string; reference_id: string }[]> {
  const queued = new Map(
    ((await admin.get('/admin/jobs?status=queued&limit=200')).items as { id: string; reference_id: string }[]).map((j) => [j.reference_id, j.id]),
  )
  const jobs: { status: string; job_id: string; reference_id: string }[] = []
  for (const id of referenceIds) {
    const job = queued.get(id)
    jobs.push(job ? { status: 'queued', job_id: job, reference_id: id } : await admin.post(`/admin/ingest/${id}`))
  }
  return jobs
}

/** How often the jobs are listed for progress, and how often a queued job a dispatch left is asked about again. */
const LIST_EVERY_MS = 1000
const REDISPATCH_MS = 5000

export async function syncAndIngest(
  admin: ApiClient,
  source: string,
  options: { deadline: number; onSync?: (run: SyncResult) => void; onQueued?: (n: number) => void; onProgress?: (line: string) => void },
): Promise<void> {
  const sync = await admin.post<SyncResult>(`/scraping/${source}/sync`)
  options.onSync?.(sync)
  if (sync.status !== 'completed') {
    // the run says why (a listing it could not read, links it could not download): the error names it
    const run = ((await admin.get(`/scraping/${source}/runs?limit=1`).catch(() => ({ items: [] }))).items as { id: string; error_message: string | null }[])
      .find((r) => r.id === sync.run_id)
    throw new Error(`the sync of ${source} ended ${sync.status}${run?.error_message ? `: ${run.error_message}` : ''}`)
  }
  const refs = (await admin.get(`/scraping/${source}/references?status=discovered&limit=200`)).items as {
    id: string
    grade: string | null
    subject: string | null
  }[]
  // Admin requests are rate limited (RATE_LIMIT_ADMIN_PER_MINUTE, 60 by default): spent freely (an ingest
  // request per reference, a listing after every dispatch) they ran out within the demo, which then
  // waited most of a minute for the next window. The jobs the sync queued are read in one listing; only a
  // reference it could not queue is asked for; the jobs are listed once a second, or when nothing is
  // left to dispatch.
  // a reference without a grade or subject cannot be ingested (409) until an operator sets them
  const jobIds = (await queueIngestion(admin, refs.filter((r) => r.grade && r.subject).map((r) => r.id))).map((j) => j.job_id)
  options.onQueued?.(jobIds.length)
  const terminal = new Set(['ready', 'failed'])
  let last = ''
  let dispatching = true
  let listed = 0
  let dispatched = 0
  while (jobIds.length > 0) {
    if (Date.now() > options.deadline) throw new Error('ingestion did not finish in time')
    // a queued job that a dispatch leaves (a scan waits for the Node worker, which claims it itself) is
    // asked about again every few seconds, not at every look
    if (dispatching || Date.now() - dispatched >= REDISPATCH_MS) {
      dispatched = Date.now()
      dispatching = (await admin.post<{ status: string }>('/admin/jobs/dispatch')).status !== 'idle'
    }
    if (dispatching && Date.now() - listed < LIST_EVERY_MS) {
      await new Promise((r) => setTimeout(r, 50))
      continue
    }
    listed = Date.now()
    const jobs = ((await admin.get('/admin/jobs?limit=200')).items as { id: string; status: string }[]).filter((j) => jobIds.includes(j.id))
    const counts = new Map<string, number>()
    for (const j of jobs) counts.set(j.status, (counts.get(j.status) ?? 0) + 1)
    const done = jobs.filter((j) => terminal.has(j.status)).length
    const bar = '#'.repeat(Math.round((done / Math.max(1, jobIds.length)) * 20)).padEnd(20, '.')
    const line = `jobs         [${bar}] ${done}/${jobIds.length} done  ${[...counts].map(([s, n]) => `${s} ${n}`).join(', ')}`
    if (line !== last) options.onProgress?.(line)
    last = line
    if (done === jobIds.length) break
    if (!dispatching) await new Promise((r) => setTimeout(r, LIST_EVERY_MS))
  }
  const failed = ((await admin.get('/admin/jobs?status=failed&limit=200')).items as { id: string; error_message: string | null }[]).filter((j) =>
    jobIds.includes(j.id)
  )
  if (failed.length > 0) throw new Error(`ingestion failed: ${failed.map((j) => j.error_message).join('; ')}`)
}
