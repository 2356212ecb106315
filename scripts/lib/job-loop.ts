// The worker's step (reclaim stale jobs, claim the oldest queued one, run it) and a loop of it for the
// Node process that serves next to Edge Functions (FUNCTIONS_RUNTIME=deno): they leave scans queued for a
// process with the page recognizer (public.defer_job_for_ocr), and the loop takes only those; every
// other job is run by the dispatch that queued it, as it is when Node serves the functions.
import type { Deps } from '../../functions-shared/deps.ts'
import type { Logger } from '../../functions-shared/lib/logger.ts'
import { asService } from '../../functions-shared/db/tx.ts'
import { claimNextJob, type JobOutcome, processJob } from '../../functions-shared/ingestion/pipeline.ts'

/** Runs the oldest queued job, if any; null when the queue is empty. */
export async function runNextJob(deps: Deps, options: { deferredOnly?: boolean } = {}): Promise<JobOutcome | null> {
  await asService(deps.sql, (tx) => tx`select public.reclaim_stale_jobs(${deps.config.JOB_STALE_SECONDS})`)
  const job = await claimNextJob(deps, options)
  return job ? processJob(deps, job, `worker-${job.id}`) : null
}

/** Polls the queue every intervalMs and runs the deferred jobs it finds, one at a time, until stopped. */
export function startJobLoop(deps: Deps, log: Logger, intervalMs = 2000): { stop(): Promise<void> } {
  let stopped = false
  let timer: ReturnType<typeof setTimeout> | undefined
  let current: Promise<void> = Promise.resolve()
  const deferred = { deferredOnly: true }
  const tick = () => {
    current = (async () => {
      try {
        for (let outcome = await runNextJob(deps, deferred); outcome && !stopped; outcome = await runNextJob(deps, deferred)) {
          log.info({ ...outcome }, 'job finished')
        }
      } catch (err) {
        log.error({ err: { message: (err as Error).message } }, 'job loop failed; trying again')
      }
      if (!stopped) timer = setTimeout(tick, intervalMs).unref()
    })()
  }
  timer = setTimeout(tick, intervalMs).unref()
  return {
    async stop() {
      stopped = true
      clearTimeout(timer)
      await current
    },
  }
}
