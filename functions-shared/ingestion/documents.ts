// Documents: the admin's edits and deletion (spec §4.7), and the dashboard statistics (§4.6).
import type { Deps } from '../deps.ts'
import { asService } from '../db/tx.ts'
import { iso } from '../lib/time.ts'

export function documentJson(r: Record<string, unknown>) {
  return {
    id: r.id as string,
    title: (r.title as string | null) ?? null,
    major: (r.major as string | null) ?? null,
    weight: r.weight as number,
    category: (r.category as string | null) ?? null,
    grade: (r.grade as string | null) ?? null,
    subject: (r.subject as string | null) ?? null,
    language: (r.language as string | null) ?? null,
    reference_id: (r.reference_id as string | null) ?? null,
    status: r.status as 'processing' | 'ready' | 'failed',
    origin: r.origin as 'reference' | 'upload',
    vectordb_index: (r.vectordb_index as string | null) ?? null,
    vectordb_namespace: (r.vectordb_namespace as string | null) ?? null,
    vectordb_vector_count: (r.vectordb_vector_count as number | null) ?? null,
    page_count: (r.page_count as number | null) ?? null,
    chunk_count: (r.chunk_count as number | null) ?? null,
    ingestion_ts: iso(r.ingestion_ts),
    created_at: iso(r.created_at)!,
    updated_at: iso(r.updated_at)!,
  }
}

export async function updateDocument(deps: Deps, id: string, patch: { title?: string | undefined; major?: string | undefined; weight?: number | undefined; category?: string | undefined }) {
  const rows = await asService(deps.sql, (tx) => tx`
    update public.documents set
      title = case when ${patch.title !== undefined} then ${patch.title ?? null} else title end,
      major = case when ${patch.major !== undefined} then ${patch.major ?? null} else major end,
      weight = case when ${patch.weight !== undefined} then ${patch.weight ?? 0}::int else weight end,
      category = case when ${patch.category !== undefined} then ${patch.category ?? null} else category end,
      updated_at = now()
    where id = ${id} returning *`)
  return rows[0] ? documentJson(rows[0]) : null
}

/** The spec's five steps, in order, in one transaction: public.delete_document. */
export async function deleteDocument(deps: Deps, id: string) {
  const [r] = await asService(deps.sql, (tx) => tx`select status, chunks_removed, vectors_removed from public.delete_document(${id})`)
  return r ? { status: 'deleted' as const, chunks_removed: r.chunks_removed as number, vectors_removed: r.vectors_removed as number } : null
}

/**
 * Dashboard counters from live data. Jobs: queued = queued; running = parsing, tokenizing,
 * embedding_request_sent and embedding_upserted; completed = ready; failed = failed. Tokens in
 * circulation: every wallet balance plus the tokens held by pending reservations.
 */
export async function dashboardStats(deps: Deps) {
  const [r] = await asService(deps.sql, (tx) => tx`
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
  const n = (k: string) => Number(r![k])
  return {
    documents: { total: n('documents_total'), ready: n('documents_ready'), processing: n('documents_processing'), failed: n('documents_failed') },
    chunks: { total: n('chunks_total') },
    references: { total: n('references_total'), discovered: n('references_discovered'), ready: n('references_ready'), failed: n('references_failed') },
    users: { total: n('users_total'), admins: n('users_admins'), students: n('users_students') },
    jobs: { queued: n('jobs_queued'), running: n('jobs_running'), completed: n('jobs_completed'), failed: n('jobs_failed') },
    wallet: { total_tokens_in_circulation: n('tokens') },
  }
}
