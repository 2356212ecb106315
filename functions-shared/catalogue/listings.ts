// Scrape runs and references, as the public scraping listings and the admin listings show them.
import type { Deps, ServiceContext } from '../deps.ts'
import { asService } from '../db/tx.ts'
import { iso } from '../lib/time.ts'
import type { TotalRow, Tx } from '../db/client.ts'
import type { REFERENCE_STATUSES, SCRAPE_RUN_STATUSES } from '../domain/enums.ts'

/** A row of public.scrape_runs. */
export interface ScrapeRunRow {
  id: string
  source: string
  status: (typeof SCRAPE_RUN_STATUSES)[number]
  found_count: number
  new_count: number
  duplicate_count: number
  quality_failed_count: number
  changed_count: number
  error_count: number
  error_message: string | null
  started_at: Date
  finished_at: Date | null
  heartbeat_at: Date
}

/** The metadata columns a reference and its document share (a document takes its reference's when ingested). */
export interface MetadataColumns {
  title: string | null
  major: string | null
  weight: number
  category: string | null
  grade: string | null
  subject: string | null
  language: string | null
}

export const metadataJson = (r: MetadataColumns) => ({
  title: r.title,
  major: r.major,
  weight: r.weight,
  category: r.category,
  grade: r.grade,
  subject: r.subject,
  language: r.language,
})

/** A row of public.curriculum_references (`select *`); the SimHash is a bigint, which postgres.js reads as a string. */
export interface ReferenceRow extends MetadataColumns {
  id: string
  source: string
  pdf_source: string
  source_url: string
  status: (typeof REFERENCE_STATUSES)[number]
  content_fingerprint: string | null
  fp_block0: number | null
  fp_block1: number | null
  fp_block2: number | null
  fp_block3: number | null
  canonical_id: string | null
  vectordb_index: string | null
  vectordb_namespace: string | null
  vectordb_vector_count: number | null
  scrape_run_id: string | null
  discovered_at: Date
  last_checked_at: Date
}

function runJson(r: ScrapeRunRow) {
  return {
    id: r.id,
    source: r.source,
    status: r.status,
    found_count: r.found_count,
    new_count: r.new_count,
    duplicates: r.duplicate_count,
    quality_failed: r.quality_failed_count,
    changed: r.changed_count,
    errors: r.error_count,
    error_message: r.error_message,
    started_at: iso(r.started_at)!,
    finished_at: iso(r.finished_at),
    heartbeat_at: iso(r.heartbeat_at)!,
  }
}

export function referenceJson(r: ReferenceRow) {
  return {
    id: r.id,
    source: r.source,
    pdf_source: r.pdf_source,
    source_url: r.source_url,
    ...metadataJson(r),
    status: r.status,
    content_fingerprint: r.content_fingerprint,
    canonical_id: r.canonical_id,
    vectordb_index: r.vectordb_index,
    vectordb_namespace: r.vectordb_namespace,
    vectordb_vector_count: r.vectordb_vector_count,
    scrape_run_id: r.scrape_run_id,
    discovered_at: iso(r.discovered_at)!,
    last_checked_at: iso(r.last_checked_at)!,
  }
}

/**
 * Runs whose sync died (no heartbeat for SCRAPE_RUN_STALE_SECONDS) closed as failed; done where runs are
 * listed and before a sync starts, so no listing shows a dead run as running.
 */
export async function closeAbandonedRuns(deps: Deps, tx?: Tx): Promise<number> {
  const close = (t: Tx) =>
    t<{ n: number }[]>`select public.close_abandoned_scrape_runs(${deps.config.SCRAPE_RUN_STALE_SECONDS}, ${new Date(deps.clock.now())}) as n`
  const [row] = tx ? await close(tx) : await asService(deps.sql, close)
  return row!.n
}

/**
 * Runs left running by a process that stopped without closing them, closed as interrupted: called where
 * no other process can be running a sync on the database (the embedded one, whose folder one process
 * holds), when the process starts. Elsewhere the heartbeat's staleness closes them (closeAbandonedRuns).
 */
export async function closeRunsLeftRunning(deps: Deps): Promise<number> {
  const [row] = await asService(deps.sql, (tx) => tx<{ n: number }[]>`select public.close_scrape_runs_left_running(${new Date(deps.clock.now())}) as n`)
  return row!.n
}

export async function listRuns({ ctx, input }: { ctx: ServiceContext; input: { source?: string | undefined; limit: number; offset: number } }) {
  return asService(ctx.deps.sql, async (tx) => {
    // a run whose sync died is listed as what it is: failed, not running
    await closeAbandonedRuns(ctx.deps, tx)
    const source = input.source ?? null
    const [{ total }] = await tx<[TotalRow]>`select count(*)::int as total from public.scrape_runs where (${source}::text is null or source = ${source})`
    const rows = await tx<
      ScrapeRunRow[]
    >`select * from public.scrape_runs where (${source}::text is null or source = ${source}) order by started_at desc, id limit ${input.limit} offset ${input.offset}`
    return { items: rows.map(runJson), total, limit: input.limit, offset: input.offset }
  })
}

export async function listReferences(
  { ctx, input }: { ctx: ServiceContext; input: { source?: string | undefined; status?: string | undefined; limit: number; offset: number } },
) {
  return asService(ctx.deps.sql, async (tx) => {
    const [source, status] = [input.source ?? null, input.status ?? null]
    const where = tx`(${source}::text is null or source = ${source}) and (${status}::text is null or status = ${status})`
    const [{ total }] = await tx<[TotalRow]>`select count(*)::int as total from public.curriculum_references where ${where}`
    const rows = await tx<
      ReferenceRow[]
    >`select * from public.curriculum_references where ${where} order by discovered_at desc, id limit ${input.limit} offset ${input.offset}`
    return { items: rows.map(referenceJson), total, limit: input.limit, offset: input.offset }
  })
}
