// Sync a scraper source and ingest every reference it discovered, through the HTTP API as an admin: the
// demo and the retrieval evaluation both build their curriculum this way. Progress goes to `onProgress`.
import type { ApiClient } from './api-client.ts'
import type { SyncResult } from '../../functions-shared/catalogue/sync.ts'

export async function syncAndIngest(
  admin: ApiClient,
  source: string,
  options: { deadline: number; onSync?: (run: SyncResult) => void; onQueued?: (n: number) => void; onProgress?: (line: string) => void },
): Promise<void> {
  const sync = await admin.post<SyncResult>(`/scraping/${source}/sync`)
  options.onSync?.(sync)
  if (sync.status !== 'completed') throw new Error('the sync did not complete')
  const refs = (await admin.get(`/scraping/${source}/references?status=discovered&limit=200`)).items as { id: string; grade: string | null; subject: string | null }[]
  const jobIds: string[] = []
  // a reference without a grade or subject cannot be ingested (409) until an operator sets them
  for (const ref of refs.filter((r) => r.grade && r.subject)) jobIds.push((await admin.post(`/admin/ingest/${ref.id}`)).job_id)
  options.onQueued?.(jobIds.length)
  const terminal = new Set(['ready', 'failed'])
  let last = ''
  while (jobIds.length > 0) {
    if (Date.now() > options.deadline) throw new Error('ingestion did not finish in time')
    const dispatched = await admin.post('/admin/jobs/dispatch')
    const jobs = ((await admin.get('/admin/jobs?limit=200')).items as { id: string; status: string }[]).filter((j) => jobIds.includes(j.id))
    const counts = new Map<string, number>()
    for (const j of jobs) counts.set(j.status, (counts.get(j.status) ?? 0) + 1)
    const done = jobs.filter((j) => terminal.has(j.status)).length
    const bar = '#'.repeat(Math.round((done / Math.max(1, jobIds.length)) * 20)).padEnd(20, '.')
    const line = `jobs         [${bar}] ${done}/${jobIds.length} done  ${[...counts].map(([s, n]) => `${s} ${n}`).join(', ')}`
    if (line !== last) options.onProgress?.(line)
    last = line
    if (done === jobIds.length && dispatched.status === 'idle') break
    await new Promise((r) => setTimeout(r, dispatched.status === 'idle' ? 400 : 50))
  }
  const failed = ((await admin.get('/admin/jobs?status=failed&limit=200')).items as { id: string; error_message: string | null }[]).filter((j) => jobIds.includes(j.id))
  if (failed.length > 0) throw new Error(`ingestion failed: ${failed.map((j) => j.error_message).join('; ')}`)
}
