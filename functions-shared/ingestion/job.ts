// A claimed ingestion job and the writes that move it (pipeline.ts runs its steps): claimed, moved on to a
// stage, failed, or left queued for a process with a recognizer, each refused once its attempt is stale.
import type { Deps } from '../deps.ts'
import { asService, isPgError } from '../db/tx.ts'
import type { ReadPdf } from '../pdf/read.ts'

type Nullable<T> = { [K in keyof T]: T[K] | null }

export interface ClaimedJob {
  id: string
  reference_id: string
  file_id: string | null
  attempt: number
}

export class PipelineError extends Error {
  override name = 'PipelineError'
}

export interface JobOutcome {
  job_id: string
  /** deferred: its pages need the recognizer and this process has none; queued again for a Node worker */
  status: 'ready' | 'failed' | 'superseded' | 'deferred'
  error?: string
  pages?: number
  chunks?: number
  vectors?: number
}

export async function transition(deps: Deps, job: ClaimedJob, to: string, details: Record<string, unknown> = {}) {
  await asService(deps.sql, (t) => t`select id from public.transition_job(${job.id}, ${to}, ${job.attempt}, ${null}, ${t.json(details as never)})`)
  await deps.onJobTransition?.({ job_id: job.id, attempt: job.attempt, status: to })
}

export async function fail(deps: Deps, job: ClaimedJob, message: string, details: Record<string, unknown>): Promise<JobOutcome> {
  try {
    await asService(deps.sql, (tx) => tx`select id from public.transition_job(${job.id}, 'failed', ${job.attempt}, ${message}, ${tx.json(details as never)})`)
    return { job_id: job.id, status: 'failed', error: message }
  } catch (err) {
    if (isPgError(err, 'PT409')) return { job_id: job.id, status: 'superseded', error: message }
    throw err
  }
}

/** Back to the queue for a process with a recognizer (a Node worker); the audit says why. */
export async function deferForOcr(deps: Deps, job: ClaimedJob, read: ReadPdf): Promise<JobOutcome> {
  await asService(deps.sql, (tx) => tx`select id from public.defer_job_for_ocr(${job.id}, ${job.attempt}, ${read.needsOcr.length})`)
  await deps.onJobTransition?.({ job_id: job.id, attempt: job.attempt, status: 'queued' })
  deps.logs.get('ingestion').info({ job_id: job.id, pages: read.needsOcr.length }, 'job needs OCR: left queued for a Node worker')
  return { job_id: job.id, status: 'deferred', pages: read.needsOcr.length }
}

/**
 * Claims the oldest queued job, if any (a job that needs OCR only when this process can recognize);
 * with deferredOnly, only a job that a process without a recognizer left for one.
 */
export async function claimNextJob(deps: Deps, options: { deferredOnly?: boolean } = {}): Promise<ClaimedJob | null> {
  // claim_next_job returns a null row (every column null) when nothing is queued
  const [row] = await asService(
    deps.sql,
    (tx) =>
      tx<Nullable<ClaimedJob>[]>`select id, reference_id, file_id, attempt from public.claim_next_job(${deps.ocr !== undefined}, ${
        options.deferredOnly === true
      })`,
  )
  return row?.id && row.reference_id && row.attempt !== null ? { id: row.id, reference_id: row.reference_id, file_id: row.file_id, attempt: row.attempt } : null
}
