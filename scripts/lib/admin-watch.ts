// `npm run admin -- watch`: the job list again and again until nothing is queued or running, printed when
// it changes; with --dispatch each look starts the oldest queued job first.
import type { ApiClient } from './api-client.ts'
import { jobProgress, watchPause } from './job-progress.ts'
import { out } from './admin-cli.ts'

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Watches the jobs (admin.ts's `watch` command) until none is active. */
export async function watch(api: ApiClient, flags: { interval: string; dispatch: boolean; json: boolean }): Promise<void> {
  const interval = Math.max(100, Number(flags.interval))
  let last = ''
  let listedAt = -Infinity
  for (;;) {
    // a look that starts a job drives the work and goes on at the interval, reading the job list once
    // a second at most (each read is an admin request too); a look that only watches is paced by the
    // rate limit (watchPause)
    const dispatched = flags.dispatch ? (await api.post('/admin/jobs/dispatch')).status === 'dispatched' : false
    if (dispatched && Date.now() - listedAt < 1000) {
      await sleep(interval)
      continue
    }
    listedAt = Date.now()
    const jobs = (await api.get('/admin/jobs?limit=200')).items as {
      id: string
      status: string
      chunks_created: number
      vectors_upserted: number
      error_message: string | null
      needs_ocr: boolean
      progress: { pages_done: number; pages_total: number | null; pages_ocr: number }
    }[]
    const counts = new Map<string, number>()
    for (const j of jobs) counts.set(j.status, (counts.get(j.status) ?? 0) + 1)
    const active = jobs.filter((j) => j.status !== 'ready' && j.status !== 'failed')
    const summary = {
      at: new Date().toISOString(),
      counts: Object.fromEntries(counts),
      active: active.map((j) => ({
        id: j.id,
        status: j.status,
        chunks_created: j.chunks_created,
        vectors_upserted: j.vectors_upserted,
        needs_ocr: j.needs_ocr,
        ...j.progress,
      })),
    }
    const line = flags.json ? JSON.stringify(summary) : [
      `${[...counts].map(([s, n]) => `${s} ${n}`).join(', ') || 'no jobs'}`,
      ...active.map((j) => `  ${j.id.slice(0, 8)} ${j.status.padEnd(22)} ${jobProgress(j)}`),
    ].join('\n')
    if (line.replace(/"at":"[^"]+",/, '') !== last) out(line)
    last = line.replace(/"at":"[^"]+",/, '')
    if (active.length === 0) return
    await sleep(dispatched ? interval : watchPause(interval, flags.dispatch ? 2 : 1, api.rateLimit))
  }
}
