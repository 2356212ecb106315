// Ingestion requests, dispatch, job listings and requeue: the verbs behind /admin/ingest and /admin/jobs.
import type { Deps, ServiceContext } from '../deps.ts'
import { asService, fromRpcError } from '../db/tx.ts'
import { claimNextJob, processJob } from './pipeline.ts'
import { hasNamespace, namespaceSlug } from '../catalogue/namespace.ts'
import { iso } from '../lib/time.ts'
import type { TotalRow } from '../db/client.ts'
import { DomainError } from '../domain/errors.ts'
import type { JOB_STATUSES } from '../domain/enums.ts'
import type { ReferenceRow } from '../catalogue/listings.ts'

export type JobStatus = (typeof JOB_STATUSES)[number]

/** A row of public.ingestion_jobs as postgres.js reads it (seq, a bigint, as a string). */
export interface JobRow {
  id: string
  reference_id: string
  file_id: string | null
  status: JobStatus
  chunks_created: number
  vectors_upserted: number
  retry_count: number
  attempt: number
  error_message: string | null
  needs_ocr: boolean
  pages_total: number | null
  pages_done: number
  pages_ocr: number
  locked_at: Date | null
  started_at: Date | null
  finished_at: Date | null
  seq: string
  created_at: Date
  updated_at: Date
}

interface AuditRow {
  id: string
  from_status: string | null
  to_status: string
  error_message: string | null
  details: Record<string, unknown>
  created_at: Date
}

export function jobJson(r: JobRow) {
  return {
    id: r.id,
    reference_id: r.reference_id,
    file_id: r.file_id,
    status: r.status,
    chunks_created: r.chunks_created,
    vectors_upserted: r.vectors_upserted,
    retry_count: r.retry_count,
    attempt: r.attempt,
    error_message: r.error_message,
    progress: { pages_done: r.pages_done, pages_total: r.pages_total, pages_ocr: r.pages_ocr },
    needs_ocr: r.needs_ocr,
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

export async function requestIngestion({ ctx, input }: { ctx: ServiceContext; input: { reference_id: string; force: boolean } }) {
  const [job] = await rpc(ctx.deps, async (tx) => {
    // such a job could only fail in the pipeline: refused here, where the operator is told how to fix it
    // (the row lock holds until the job is queued, so the grade and subject checked are the ones queued)
    const [ref] = await tx<
      Pick<ReferenceRow, 'status' | 'grade' | 'subject'>[]
    >`select status, grade, subject from public.curriculum_references where id = ${input.reference_id} for update`
    if (ref && ref.status !== 'duplicate' && !hasNamespace(ref.grade, ref.subject)) throw noNamespaceError(input.reference_id, ref.grade, ref.subject)
    return tx<JobRow[]>`select * from public.request_ingestion(${input.reference_id}, ${input.force})`
  })
  return { status: 'queued' as const, job_id: job!.id, reference_id: input.reference_id }
}

/**
 * POST /admin/vector-embedding. A reference whose newest job failed has that job put back in the queue,
 * retry_count + 1, as spec §3.1 has it (failed → queued by requeue or by this call); any other is
 * queued as POST /admin/ingest queues it.
 */
export async function legacyIngestion({ ctx, input }: { ctx: ServiceContext; input: { reference_id: string; force: boolean } }) {
  const requeued = await rpc(ctx.deps, async (tx) => {
    const [ref] = await tx<
      Pick<ReferenceRow, 'status' | 'grade' | 'subject'>[]
    >`select status, grade, subject from public.curriculum_references where id = ${input.reference_id} for update`
    if (!ref) return null
    const [newest] = await tx<
      Pick<JobRow, 'id' | 'status'>[]
    >`select id, status from public.ingestion_jobs where reference_id = ${input.reference_id} order by seq desc limit 1`
    if (newest?.status !== 'failed') return null
    if (!hasNamespace(ref.grade, ref.subject)) throw noNamespaceError(input.reference_id, ref.grade, ref.subject)
    const [job] = await tx<Pick<JobRow, 'id'>[]>`select id from public.requeue_job(${newest.id})`
    return job!
  })
  return requeued ? { status: 'queued' as const, job_id: requeued.id, reference_id: input.reference_id } : requestIngestion({ ctx, input })
}

/** Claims the oldest queued job and starts it in the background; `idle` when nothing is queued. */
export async function dispatchNext({ ctx }: { ctx: ServiceContext }) {
  await rpc(ctx.deps, (tx) => tx`select public.reclaim_stale_jobs(${ctx.deps.config.JOB_STALE_SECONDS})`)
  const job = await claimNextJob(ctx.deps)
  if (!job) return { status: 'idle' as const, job_id: null, reference_id: null }
  ctx.deps.background.run(() => processJob(ctx.deps, job, ctx.requestId))
  return { status: 'dispatched' as const, job_id: job.id, reference_id: job.reference_id }
}

export async function listJobs({ ctx, input }: { ctx: ServiceContext; input: { status?: JobStatus | undefined; limit: number; offset: number } }) {
  return asService(ctx.deps.sql, async (tx) => {
    const status = input.status ?? null
    const [{ total }] = await tx<[TotalRow]>`select count(*)::int as total from public.ingestion_jobs where (${status}::text is null or status = ${status})`
    const rows = await tx<
      JobRow[]
    >`select * from public.ingestion_jobs where (${status}::text is null or status = ${status}) order by seq desc limit ${input.limit} offset ${input.offset}`
    return { items: rows.map(jobJson), total, limit: input.limit, offset: input.offset }
  })
}

export async function getJob({ ctx, input }: { ctx: ServiceContext; input: { id: string } }) {
  return asService(ctx.deps.sql, async (tx) => {
    const [row] = await tx<JobRow[]>`select * from public.ingestion_jobs where id = ${input.id}`
    if (!row) return null
    const audit = await tx<
      AuditRow[]
    >`select id, from_status, to_status, error_message, details, created_at from public.ingestion_audit where job_id = ${input.id} order by id`
    return {
      ...jobJson(row),
      audit: audit.map((a) => ({
        id: Number(a.id),
        from_status: a.from_status,
        to_status: a.to_status,
        error_message: a.error_message,
        details: a.details,
        at: iso(a.created_at)!,
      })),
    }
  })
}

export async function requeueJob({ ctx, input }: { ctx: ServiceContext; input: { id: string } }) {
  await rpc(ctx.deps, (tx) => tx`select id from public.requeue_job(${input.id})`)
  return (await getJob({ ctx, input }))!
}
