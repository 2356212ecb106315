// Scrape runs and references, as the public scraping listings and the admin listings show them.
import type { Deps } from '../deps.ts'
import { asService } from '../db/tx.ts'
import { iso } from '../lib/time.ts'

function runJson(r: Record<string, unknown>) {
  return {
    id: r.id as string,
    source: r.source as string,
    status: r.status as 'running' | 'completed' | 'failed',
    found_count: r.found_count as number,
    new_count: r.new_count as number,
    duplicates: r.duplicate_count as number,
    quality_failed: r.quality_failed_count as number,
    errors: r.error_count as number,
    error_message: (r.error_message as string | null) ?? null,
    started_at: iso(r.started_at)!,
    finished_at: iso(r.finished_at),
  }
}

export function referenceJson(r: Record<string, unknown>) {
  return {
    id: r.id as string,
    source: r.source as string,
    pdf_source: r.pdf_source as string,
    source_url: r.source_url as string,
    title: (r.title as string | null) ?? null,
    major: (r.major as string | null) ?? null,
    weight: r.weight as number,
    category: (r.category as string | null) ?? null,
    grade: (r.grade as string | null) ?? null,
    subject: (r.subject as string | null) ?? null,
    language: (r.language as string | null) ?? null,
    status: r.status as 'discovered' | 'processing' | 'ready' | 'failed' | 'duplicate',
    content_fingerprint: r.content_fingerprint === null ? null : String(r.content_fingerprint),
    canonical_id: (r.canonical_id as string | null) ?? null,
    vectordb_index: (r.vectordb_index as string | null) ?? null,
    vectordb_namespace: (r.vectordb_namespace as string | null) ?? null,
    vectordb_vector_count: (r.vectordb_vector_count as number | null) ?? null,
    scrape_run_id: (r.scrape_run_id as string | null) ?? null,
    discovered_at: iso(r.discovered_at)!,
    last_checked_at: iso(r.last_checked_at)!,
  }
}

export async function listRuns(deps: Deps, input: { source?: string | undefined; limit: number; offset: number }) {
  return asService(deps.sql, async (tx) => {
    const source = input.source ?? null
    const [{ total }] = (await tx`select count(*)::int as total from public.scrape_runs where (${source}::text is null or source = ${source})`) as unknown as [{ total: number }]
    const rows = await tx`select * from public.scrape_runs where (${source}::text is null or source = ${source}) order by started_at desc, id limit ${input.limit} offset ${input.offset}`
    return { items: rows.map(runJson), total, limit: input.limit, offset: input.offset }
  })
}

export async function listReferences(deps: Deps, input: { source?: string | undefined; status?: string | undefined; limit: number; offset: number }) {
  return asService(deps.sql, async (tx) => {
    const [source, status] = [input.source ?? null, input.status ?? null]
    const where = tx`(${source}::text is null or source = ${source}) and (${status}::text is null or status = ${status})`
    const [{ total }] = (await tx`select count(*)::int as total from public.curriculum_references where ${where}`) as unknown as [{ total: number }]
    const rows = await tx`select * from public.curriculum_references where ${where} order by discovered_at desc, id limit ${input.limit} offset ${input.offset}`
    return { items: rows.map(referenceJson), total, limit: input.limit, offset: input.offset }
  })
}
