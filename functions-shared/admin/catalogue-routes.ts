// Admin: every reference and every scrape run, across sources (spec §4.6), and the fix of a
// reference's metadata.
import { createRoute, z } from '@hono/zod-openapi'
import type { Deps } from '../deps.ts'
import { adminSecurity, createRouter } from '../http/router.ts'
import { errorResponses, ErrorSchema, jsonContent } from '../http/schemas.ts'
import { listQuery } from '../http/list.ts'
import { listReferences, listRuns } from '../catalogue/listings.ts'
import { updateReference } from '../catalogue/references.ts'
import { page, ReferenceSchema, ReferenceStatus, ScrapeRunSchema, UpdateReferenceRequest } from '../catalogue/schemas.ts'
import { serviceContext } from '../http/context.ts'

export function adminCatalogueRouter(deps: Deps) {
  const ListQuery = listQuery(deps.config)
  const references = createRoute({
    method: 'get',
    path: '/references',
    tags: ['admin'],
    summary: 'All references across sources',
    security: adminSecurity,
    request: { query: ListQuery.extend({ status: ReferenceStatus.optional() }) },
    responses: { 200: jsonContent(page(ReferenceSchema, 'AdminReferenceList'), 'Newest first'), ...errorResponses.protected },
  })
  const runs = createRoute({
    method: 'get',
    path: '/scrape-runs',
    tags: ['admin'],
    summary: 'All scrape runs across sources',
    security: adminSecurity,
    request: { query: ListQuery },
    responses: { 200: jsonContent(page(ScrapeRunSchema, 'AdminScrapeRunList'), 'Newest first'), ...errorResponses.protected },
  })
  const update = createRoute({
    method: 'patch',
    path: '/references/{reference_id}',
    tags: ['admin'],
    summary: "Fix a reference's title, grade, subject, language, category, major or weight",
    security: adminSecurity,
    description:
      'Only the fields given and different are changed, on the reference and on its document, each with its before and after in the ingestion audit. ' +
      'A change of grade, subject or language is 409 while the reference has a ready document (delete it first, then ingest again) or a job that has started; a queued job uses the new values.',
    request: { params: z.object({ reference_id: z.uuid() }), body: { content: { 'application/json': { schema: UpdateReferenceRequest } }, required: true } },
    responses: {
      200: jsonContent(ReferenceSchema, 'The reference, as the listings show it'),
      404: jsonContent(ErrorSchema, 'Unknown reference'),
      409: jsonContent(ErrorSchema, 'Grade, subject or language of a reference with a ready document or a started job'),
      ...errorResponses.protected,
    },
  })
  return createRouter()
    .openapi(references, async (c) => c.json(await listReferences({ ctx: serviceContext(deps, c), input: c.req.valid('query') }), 200))
    .openapi(runs, async (c) => c.json(await listRuns({ ctx: serviceContext(deps, c), input: c.req.valid('query') }), 200))
    .openapi(update, async (c) => {
      const input = { id: c.req.valid('param').reference_id, patch: c.req.valid('json') }
      return c.json(await updateReference({ ctx: serviceContext(deps, c), input, principal: c.get('principal') }), 200)
    })
}
