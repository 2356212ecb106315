// Documents: the admin's edits and deletion (spec §4.7), and the dashboard statistics (§4.6).
import type { ServiceContext } from '../deps.ts'
import { asService } from '../db/tx.ts'
import { iso } from '../lib/time.ts'
import type { DOCUMENT_ORIGINS, DOCUMENT_STATUSES } from '../domain/enums.ts'
import { type MetadataColumns, metadataJson } from '../catalogue/listings.ts'
import { updateReference } from '../catalogue/references.ts'
import type { UpdateReferenceRequest } from '../catalogue/schemas.ts'
import type { Principal } from '../http/auth.ts'

/** A row of public.documents (`select *`), as postgres.js reads it. */
export interface DocumentRow extends MetadataColumns {
  id: string
  reference_id: string | null
  status: (typeof DOCUMENT_STATUSES)[number]
  origin: (typeof DOCUMENT_ORIGINS)[number]
  vectordb_index: string | null
  vectordb_namespace: string | null
  vectordb_vector_count: number | null
  page_count: number | null
  chunk_count: number | null
  ingestion_ts: Date | null
  created_at: Date
  updated_at: Date
}

export function documentJson(r: DocumentRow) {
  return {
    id: r.id,
    ...metadataJson(r),
    reference_id: r.reference_id,
    status: r.status,
    origin: r.origin,
    vectordb_index: r.vectordb_index,
    vectordb_namespace: r.vectordb_namespace,
    vectordb_vector_count: r.vectordb_vector_count,
    page_count: r.page_count,
    chunk_count: r.chunk_count,
    ingestion_ts: iso(r.ingestion_ts),
    created_at: iso(r.created_at)!,
    updated_at: iso(r.updated_at)!,
  }
}

type DocumentPatch = { title?: string | undefined; major?: string | undefined; weight?: number | undefined; category?: string | undefined }

/**
 * An admin's edit of a document. A document of a reference mirrors it (every publication copies these
 * fields from the reference over the document), so there the edit is made on the reference, which
 * carries it to its document and audits it as PATCH /admin/references does; made on the document
 * alone, the next re-ingestion put the reference's values back.
 */
export async function updateDocument(
  { ctx, input, principal }: { ctx: ServiceContext; input: { id: string; patch: DocumentPatch }; principal: Principal },
) {
  const { id, patch } = input
  const [doc] = await asService(ctx.deps.sql, (tx) => tx<Pick<DocumentRow, 'reference_id'>[]>`select reference_id from public.documents where id = ${id}`)
  if (!doc) return null
  if (doc.reference_id) {
    const fields = Object.fromEntries((['title', 'major', 'weight', 'category'] as const).filter((f) => patch[f] !== undefined).map((f) => [f, patch[f]]))
    await updateReference({ ctx, input: { id: doc.reference_id, patch: fields as UpdateReferenceRequest }, principal })
    const [row] = await asService(ctx.deps.sql, (tx) => tx<DocumentRow[]>`select * from public.documents where id = ${id}`)
    return row ? documentJson(row) : null
  }
  const rows = await asService(ctx.deps.sql, (tx) =>
    tx<DocumentRow[]>`
    update public.documents set
      title = case when ${patch.title !== undefined} then ${patch.title ?? null} else title end,
      major = case when ${patch.major !== undefined} then ${patch.major ?? null} else major end,
      weight = case when ${patch.weight !== undefined} then ${patch.weight ?? 0}::int else weight end,
      category = case when ${patch.category !== undefined} then ${patch.category ?? null} else category end,
      updated_at = now()
    where id = ${id} returning *`)
  return rows[0] ? documentJson(rows[0]) : null
}

/** What public.delete_document reports of its work. */
interface DeletedRow {
  status: string
  chunks_removed: number
  vectors_removed: number
}

/** The spec's five steps, in order, in one transaction: public.delete_document. */
export async function deleteDocument({ ctx, input }: { ctx: ServiceContext; input: { id: string } }) {
  const [r] = await asService(ctx.deps.sql, (tx) => tx<DeletedRow[]>`select status, chunks_removed, vectors_removed from public.delete_document(${input.id})`)
  return r ? { status: 'deleted' as const, chunks_removed: r.chunks_removed, vectors_removed: r.vectors_removed } : null
}

/** The dashboard's one row: every count cast to int, and the tokens a bigint (which postgres.js reads as a string). */
interface StatsRow {
  documents_total: number
  documents_ready: number
  documents_processing: number
  documents_failed: number
  chunks_total: number
  references_total: number
  references_discovered: number
  references_ready: number
  references_failed: number
  users_total: number
  users_admins: number
  users_students: number
  jobs_queued: number
  jobs_running: number
  jobs_completed: number
  jobs_failed: number
  tokens: string
}

/**
 * Dashboard counters from live data. Jobs: queued = queued; running = parsing, tokenizing,
 * embedding_request_sent and embedding_upserted; completed = ready; failed = failed. Tokens in
 * circulation: every wallet balance plus the tokens held by pending reservations.
 */
export async function dashboardStats({ ctx }: { ctx: ServiceContext }) {
  const [r] = await asService(ctx.deps.sql, (tx) =>
    tx<[StatsRow]>`
    select
      (select count(*) from public.documents)::int as documents_total,
      (select count(*) from public.documents where status = 'ready')::int as documents_ready,
      (select count(*) from public.documents where status = 'processing')::int as documents_processing,
      (select count(*) from public.documents where status = 'failed')::int as documents_failed,
      (select count(*) from public.document_chunks)::int as chunks_total,
      (select count(*) from public.curriculum_references)::int as references_total,
      (select count(*) from public.curriculum_references where status = 'discovered')::int as references_discovered,
      (select count(*) from public.curriculum_references where status = 'ready')::int as references_ready,
      (select count(*) from public.curriculum_references where status = 'failed')::int as references_failed,
      (select count(*) from public.profiles)::int as users_total,
      (select count(*) from public.profiles where role = 'admin')::int as users_admins,
      (select count(*) from public.profiles where role = 'student')::int as users_students,
      (select count(*) from public.ingestion_jobs where status = 'queued')::int as jobs_queued,
      (select count(*) from public.ingestion_jobs where status in ('parsing', 'tokenizing', 'embedding_request_sent', 'embedding_upserted'))::int as jobs_running,
      (select count(*) from public.ingestion_jobs where status = 'ready')::int as jobs_completed,
      (select count(*) from public.ingestion_jobs where status = 'failed')::int as jobs_failed,
      ((select coalesce(sum(token_balance), 0) from public.wallets) + (select coalesce(sum(estimated), 0) from public.reservations where status = 'reserved'))::bigint as tokens`)
  const n = (k: keyof StatsRow) => Number(r[k])
  return {
    documents: { total: n('documents_total'), ready: n('documents_ready'), processing: n('documents_processing'), failed: n('documents_failed') },
    chunks: { total: n('chunks_total') },
    references: { total: n('references_total'), discovered: n('references_discovered'), ready: n('references_ready'), failed: n('references_failed') },
    users: { total: n('users_total'), admins: n('users_admins'), students: n('users_students') },
    jobs: { queued: n('jobs_queued'), running: n('jobs_running'), completed: n('jobs_completed'), failed: n('jobs_failed') },
    wallet: { total_tokens_in_circulation: n('tokens') },
  }
}
