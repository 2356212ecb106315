// /scraping: the sources (public), a sync (admin), and each source's runs and references (public).
import { createRoute, z } from '@hono/zod-openapi'
import type { Deps } from '../deps.ts'
import { adminSecurity, createRouter } from '../http/router.ts'
import { errorResponses, ErrorSchema, jsonContent } from '../http/schemas.ts'
import { guards } from '../http/guards.ts'
import { ApiError, ErrorCode } from '../http/errors.ts'
import { listQuery } from '../http/list.ts'
import { listReferences, listRuns } from './listings.ts'
import { syncSource } from './sync.ts'
import { page, ReferenceSchema, ReferenceStatus, ScrapeRunSchema } from './schemas.ts'
import { serviceContext } from '../http/context.ts'

const SourceParam = z.object({ source: z.string().max(63).openapi({ param: { name: 'source', in: 'path' }, example: 'education-mr' }) })
const unknown = { 404: jsonContent(ErrorSchema, 'Unknown source') }

export function scrapingRouter(deps: Deps) {
  const { admin, limit } = guards(deps)
  const ListQuery = listQuery(deps.config)
  const sourceNamed = (name: string) => {
    const source = deps.sources.find((s) => s.name === name)
    if (!source) throw new ApiError(ErrorCode.NOT_FOUND, `Unknown source ${name}`)
    return source
  }

  const sources = createRoute({
    method: 'get',
    path: '/sources',
    tags: ['scraping'],
    summary: 'Configured scraper sources',
    responses: { 200: jsonContent(z.object({ sources: z.array(z.string()), total: z.number().int() }), 'Source names'), ...errorResponses.public },
  })
  const sync = createRoute({
    method: 'post',
    path: '/{source}/sync',
    tags: ['scraping'],
    summary: "Discover and register the source's PDFs now",
    security: adminSecurity,
    description:
      'Runs the whole pipeline (download, extract, canonicalize, quality check, SimHash, compare, insert) for every PDF the source lists, in the request.',
    request: { params: SourceParam },
    responses: {
      200: jsonContent(
        z.object({
          run_id: z.uuid(),
          source: z.string(),
          status: z.enum(['completed', 'failed', 'interrupted']).openapi({
            description: 'interrupted: the service shut down during the sync, which stopped at the next link (the next sync goes on)',
          }),
          found_count: z.number().int(),
          new_count: z.number().int(),
          duplicates: z.number().int(),
          quality_failed: z.number().int(),
          errors: z.number().int(),
          known: z.number().int(),
          changed: z.number().int().openapi({
            description:
              'of known: references whose file changed at its address, ingested again (checked once REFETCH_AFTER_SECONDS have passed, by a conditional request)',
          }),
          needs_metadata: z.number().int().openapi({
            description:
              'of new_count: references without a grade or subject, registered but not queued (set them with PATCH /admin/references/{reference_id}, then ingest)',
          }),
        }).openapi('SyncResult'),
        'The run',
      ),
      ...unknown,
      409: jsonContent(ErrorSchema, 'A run of the source is running (its id in run_id): one sync of a source at a time'),
      ...errorResponses.protected,
    },
  })
  const runs = createRoute({
    method: 'get',
    path: '/{source}/runs',
    tags: ['scraping'],
    summary: 'Recent runs of a source',
    request: { params: SourceParam, query: ListQuery },
    responses: { 200: jsonContent(page(ScrapeRunSchema, 'ScrapeRunList'), 'Newest first'), ...unknown, ...errorResponses.public },
  })
  const references = createRoute({
    method: 'get',
    path: '/{source}/references',
    tags: ['scraping'],
    summary: 'Curriculum files discovered from a source',
    request: { params: SourceParam, query: ListQuery.extend({ status: ReferenceStatus.optional() }) },
    responses: { 200: jsonContent(page(ReferenceSchema, 'ReferenceList'), 'Newest first'), ...unknown, ...errorResponses.public },
  })

  const router = createRouter()
  router.use('/sources', limit('public'))
  router.use('/:source/sync', admin, limit('admin'))
  router.use('/:source/runs', limit('public'))
  router.use('/:source/references', limit('public'))
  return router
    .openapi(sources, (c) => c.json({ sources: deps.sources.map((s) => s.name), total: deps.sources.length }, 200))
    .openapi(sync, async (c) => {
      const source = sourceNamed(c.req.valid('param').source)
      return c.json(await syncSource({ ctx: serviceContext(deps, c), input: source }), 200)
    })
    .openapi(runs, async (c) => {
      const source = sourceNamed(c.req.valid('param').source)
      return c.json(await listRuns({ ctx: serviceContext(deps, c), input: { source: source.name, ...c.req.valid('query') } }), 200)
    })
    .openapi(references, async (c) => {
      const source = sourceNamed(c.req.valid('param').source)
      return c.json(await listReferences({ ctx: serviceContext(deps, c), input: { source: source.name, ...c.req.valid('query') } }), 200)
    })
}
