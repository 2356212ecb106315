// Admin: every reference and every scrape run, across sources (spec §4.6).
import { createRoute } from '@hono/zod-openapi'
import type { Deps } from '../deps.ts'
import { adminSecurity, createRouter } from '../http/router.ts'
import { errorResponses, jsonContent } from '../http/schemas.ts'
import { listQuery } from './list.ts'
import { listReferences, listRuns } from '../catalogue/listings.ts'
import { ReferenceSchema, ReferenceStatus, ScrapeRunSchema, page } from '../catalogue/schemas.ts'

export function adminCatalogueRouter(deps: Deps) {
  const ListQuery = listQuery(deps.config)
  const references = createRoute({
    method: 'get', path: '/references', tags: ['admin'], summary: 'All references across sources', security: adminSecurity,
    request: { query: ListQuery.extend({ status: ReferenceStatus.optional() }) },
    responses: { 200: jsonContent(page(ReferenceSchema, 'AdminReferenceList'), 'Newest first'), ...errorResponses.protected },
  })
  const runs = createRoute({
    method: 'get', path: '/scrape-runs', tags: ['admin'], summary: 'All scrape runs across sources', security: adminSecurity,
    request: { query: ListQuery },
    responses: { 200: jsonContent(page(ScrapeRunSchema, 'AdminScrapeRunList'), 'Newest first'), ...errorResponses.protected },
  })
  return createRouter()
    .openapi(references, async (c) => c.json(await listReferences(deps, c.req.valid('query')), 200))
    .openapi(runs, async (c) => c.json(await listRuns(deps, c.req.valid('query')), 200))
}
