// An operator's fix of a reference's metadata (PATCH /admin/references/{reference_id}): the scraper's
// rules cannot always read a portal's grade or subject, and without them a reference has no namespace
// and cannot be ingested.
import type { ServiceContext } from '../deps.ts'
import { asService, fromRpcError } from '../db/tx.ts'
import { type Principal, principalKey } from '../http/auth.ts'
import { referenceJson, type ReferenceRow } from './listings.ts'
import type { UpdateReferenceRequest } from './schemas.ts'

export interface ReferenceChange {
  from: string | number | null
  to: string | number
}

/**
 * Applies the fields that differ to the reference and to its document, with the ingestion audit, through
 * public.update_reference_metadata (which keeps the rule: grade, subject and language are frozen while a
 * job of the reference has started or a document of it is ready, a conflict naming them).
 */
export async function updateReference(
  { ctx, input, principal }: { ctx: ServiceContext; input: { id: string; patch: UpdateReferenceRequest }; principal: Principal },
) {
  const { id, patch } = input
  const by = principalKey(principal)
  const outcome = await asService(ctx.deps.sql, async (tx) => {
    const [{ changes }] = await tx<[{ changes: Record<string, ReferenceChange> }]>`
      select public.update_reference_metadata(${id}, ${tx.json(patch as never)}, ${by}, ${ctx.requestId}) as changes`
    const [row] = await tx<ReferenceRow[]>`select * from public.curriculum_references where id = ${id}`
    return { row: row!, changes }
  }).catch((err: unknown) => {
    throw fromRpcError(err)
  })
  if (Object.keys(outcome.changes).length > 0) {
    ctx.deps.logs.forRequest('catalogue', ctx.requestId).info({ reference_id: id, changes: outcome.changes, by }, 'reference updated')
  }
  return referenceJson(outcome.row)
}
