// An operator's fix of a reference's metadata (PATCH /admin/references/{reference_id}): the scraper's
// rules cannot always read a portal's grade or subject, and without them a reference has no namespace
// and cannot be ingested.
import type { Deps } from '../deps.ts'
import { asService } from '../db/tx.ts'
import { DomainError } from '../domain/errors.ts'
import { principalKey, type Principal } from '../http/auth.ts'
import { referenceJson, type ReferenceRow } from './listings.ts'
import type { JOB_STATUSES } from '../domain/enums.ts'
import type { UpdateReferenceRequest } from './schemas.ts'

const FIELDS = ['title', 'grade', 'subject', 'language', 'category', 'major', 'weight'] as const
/** what an ingested version carries beyond the document row: the namespace and metadata of every vector,
 *  and (language) how the text was chunked; only a new ingestion can change them consistently */
const INDEXED = new Set<string>(['grade', 'subject', 'language'])

export interface ReferenceChange {
  from: string | number | null
  to: string | number
}

/**
 * Applies the fields that differ to the reference and to its document (which mirrors the reference:
 * every publication copies these fields over it), and writes the before and after of each to the
 * ingestion audit, in one transaction. A change of grade, subject or language is 409 while a document of
 * the reference is ready (its vectors carry the old values) or a job of it has started (it read them);
 * a job still queued reads the new ones when it starts. Null when the reference does not exist.
 */
export async function updateReference(
  deps: Deps,
  input: { id: string; patch: UpdateReferenceRequest; principal: Principal; requestId: string },
) {
  const { id, patch } = input
  const by = principalKey(input.principal)
  const outcome = await asService(deps.sql, async (tx) => {
    // the reference's row lock orders this after (or before) an ingest request for it
    const [ref] = await tx<ReferenceRow[]>`select * from public.curriculum_references where id = ${id} for update`
    if (!ref) return null
    const changes: Record<string, ReferenceChange> = {}
    for (const field of FIELDS) {
      const to = patch[field]
      if (to !== undefined && to !== ref[field]) changes[field] = { from: ref[field], to }
    }
    if (Object.keys(changes).length === 0) return { row: ref, changes }
    if (Object.keys(changes).some((f) => INDEXED.has(f))) {
      // locked: a claim skips a locked queued job, and a claim under way is waited for and then seen
      const jobs = await tx<{ id: string; status: (typeof JOB_STATUSES)[number] }[]>`select id, status from public.ingestion_jobs where reference_id = ${id} and status not in ('ready', 'failed') order by seq desc for update`
      const started = jobs.find((j) => j.status !== 'queued')
      if (started) {
        throw new DomainError(
          'conflict',
          `reference ${id} is being ingested (job ${started.id} is ${started.status}) with its current grade, subject and language; change them once the job is ready or failed`,
          { reference_id: id, job_id: started.id },
        )
      }
      const [doc] = await tx<{ id: string; vectordb_namespace: string | null }[]>`select id, vectordb_namespace from public.documents where reference_id = ${id} and status = 'ready' limit 1`
      if (doc) {
        throw new DomainError(
          'conflict',
          `reference ${id} has an ingested document ${doc.id} (namespace ${String(doc.vectordb_namespace)}) whose vectors carry its grade, subject and language; ` +
            `delete the document first (DELETE /admin/documents/${doc.id}), then change them and ingest the reference again`,
          { reference_id: id, document_id: doc.id },
        )
      }
    }
    const values = Object.fromEntries(Object.entries(changes).map(([f, c]) => [f, c.to]))
    const [row] = await tx<ReferenceRow[]>`update public.curriculum_references set ${tx(values)} where id = ${id} returning *`
    // with a grade, subject or language change no document of the reference is ready (checked above)
    await tx`update public.documents set ${tx(values)}, updated_at = now() where reference_id = ${id}`
    await tx`insert into public.ingestion_audit (reference_id, source_url, from_status, to_status, details)
             values (${id}, ${ref.source_url}, ${ref.status}, ${ref.status},
                     ${tx.json({ trigger: 'reference update', changes: changes as never, by, request_id: input.requestId })})`
    return { row: row!, changes }
  })
  if (!outcome) throw new DomainError('not_found', 'Unknown reference')
  if (Object.keys(outcome.changes).length > 0) {
    deps.logs.forRequest('catalogue', input.requestId).info({ reference_id: id, changes: outcome.changes, by }, 'reference updated')
  }
  return referenceJson(outcome.row)
}
