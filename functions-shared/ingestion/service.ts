// Ingestion requests, dispatch, job listings and requeue: the verbs behind /admin/ingest and /admin/jobs.
import type { Deps } from '../deps.ts'
import { asService, fromRpcError } from '../db/tx.ts'
import { claimNextJob, processJob } from './pipeline.ts'
import { hasNamespace, namespaceSlug } from '../catalogue/namespace.ts'
import { iso } from '../lib/time.ts'
import { DomainError } from '../domain/errors.ts'
import type { JOB_STATUSES } from '../domain/enums.ts'

export type JobStatus = (typeof JOB_STATUSES)[number]

export function jobJson(r: Record<string, unknown>) {
  return {
    id: r.id as string,
    reference_id: r.reference_id as string,
    file_id: (r.file_id as string | null) ?? null,
    status: r.status as JobStatus,
    chunks_created: r.chunks_created as number,
    vectors_upserted: r.vectors_upserted as number,
    retry_count: r.retry_count as number,
    attempt: r.attempt as number,
    error_message: (r.error_message as string | null) ?? null,
    progress: { pages_done: (r.pages_done as number) ?? 0, pages_total: (r.pages_total as number | null) ?? null, pages_ocr: (r.pages_ocr as number) ?? 0 },
    needs_ocr: (r.needs_ocr as boolean) ?? false,
    created_at: iso(r.created_at)!,
    updated_at: iso(r.updated_at)!,
  }
}

async function rpc<T>(deps: Deps, fn: Parameters<typeof asService<T>>[1]): Promise<T> {
  try {
    return await asService(deps.sql, fn)
  } catch (err) {
    throw fromRpcError(err)
  }
}

/** The 409 for a reference whose grade or subject is missing: what is missing, and the two ways to set it. */
export function noNamespaceError(referenceId: string, grade: unknown, subject: unknown): DomainError {
  const shown = (v: unknown) => (typeof v === 'string' && v.trim() !== '' ? JSON.stringify(v) : 'none')
  const missing = Object.entries({ grade, subject }).filter(([, v]) => typeof v !== 'string' || namespaceSlug(v) === '').map(([k]) => k)
  return new DomainError(
    'conflict',
    `reference ${referenceId} has no grade or subject (grade ${shown(grade)}, subject ${shown(subject)}), so it has no namespace and cannot be ingested; ` +
      `set them first with PATCH /admin/references/${referenceId} {"grade": …, "subject": …} or \`npm run admin -- references set ${referenceId} --grade … --subject …\``,
    { reference_id: referenceId, missing },
  )
}

export async function requestIngestion(deps: Deps, input: { reference_id: string; force: boolean }) {
  const [job] = await rpc(deps, async (tx) => {
    // such a job could only fail in the pipeline: refused here, where the operator is told how to fix it
    // (the row lock holds until the job is queued, so the grade and subject checked are the ones queued)
    const [ref] = await tx`select status, grade, subject from public.curriculum_references where id = ${input.reference_id} for update`
    if (ref && ref.status !== 'duplicate' && !hasNamespace(ref.grade, ref.subject)) throw noNamespaceError(input.reference_id, ref.grade, ref.subject)
    return tx`select * from public.request_ingestion(${input.reference_id}, ${input.force})`
  })
  return { status: 'queued' as const, job_id: job!.id as string, reference_id: input.reference_id }
}

/** Claims the oldest queued job and starts it in the background; `idle` when nothing is queued. */
export async function dispatchNext(deps: Deps, requestId: string) {
  await rpc(deps, (tx) => tx`select public.reclaim_stale_jobs(${deps.config.JOB_STALE_SECONDS})`)
  const job = await claimNextJob(deps)
  if (!job) return { status: 'idle' as const, job_id: null, reference_id: null }
  deps.background.run(() => processJob(deps, job, requestId))
  return { status: 'dispatched' as const, job_id: job.id, reference_id: job.reference_id }
}

export async function listJobs(deps: Deps, input: { status?: JobStatus | undefined; limit: number; offset: number }) {
  return asService(deps.sql, async (tx) => {
    const status = input.status ?? null
    const [{ total }] = (await tx`select count(*)::int as total from public.ingestion_jobs where (${status}::text is null or status = ${status})`) as unknown as [{ total: number }]
    const rows = await tx`select * from public.ingestion_jobs where (${status}::text is null or status = ${status}) order by seq desc limit ${input.limit} offset ${input.offset}`
    return { items: rows.map(jobJson), total, limit: input.limit, offset: input.offset }
  })
}

export async function getJob(deps: Deps, jobId: string) {
  return asService(deps.sql, async (tx) => {
    const [row] = await tx`select * from public.ingestion_jobs where id = ${jobId}`
    if (!row) return null
    const audit = await tx`select id, from_status, to_status, error_message, details, created_at from public.ingestion_audit where job_id = ${jobId} order by id`
    return {
      ...jobJson(row),
      audit: audit.map((a) => ({
        id: Number(a.id),
        from_status: (a.from_status as string | null) ?? null,
        to_status: a.to_status as string,
        error_message: (a.error_message as string | null) ?? null,
        details: a.details as Record<string, unknown>,
        at: iso(a.created_at)!,
      })),
    }
  })
}

export async function requeueJob(deps: Deps, jobId: string) {
  await rpc(deps, (tx) => tx`select id from public.transition_job(${jobId}, 'queued', ${null}, ${null}, ${tx.json({ trigger: 'requeue' })})`)
  return (await getJob(deps, jobId))!
}
