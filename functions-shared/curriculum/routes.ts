// /curriculum: the public catalogue of ready documents (spec §4.9); the reads are in service.ts.
import { createRoute, z } from '@hono/zod-openapi'
import type { Deps } from '../deps.ts'
import { createRouter } from '../http/router.ts'
import { errorResponses, ErrorSchema, jsonContent } from '../http/schemas.ts'
import { guards } from '../http/guards.ts'
import { serviceContext } from '../http/context.ts'
import { getTextbook, listSubjects, listTextbooks } from './service.ts'

const TextbookSchema = z
  .object({
    id: z.uuid(),
    title: z.string(),
    grade: z.string(),
    subject: z.string(),
    major: z.string(),
    language: z.string(),
    weight: z.number().int(),
    page_count: z.number().int(),
    chunk_count: z.number().int(),
    namespace: z.string(),
  })
  .openapi('Textbook')

const subjects = createRoute({
  method: 'get',
  path: '/subjects',
  tags: ['curriculum'],
  summary: 'Subjects that have a ready textbook',
  responses: { 200: jsonContent(z.object({ subjects: z.array(z.string()), total: z.number().int() }), 'Sorted'), ...errorResponses.public },
})
const textbooks = createRoute({
  method: 'get',
  path: '/textbooks',
  tags: ['curriculum'],
  summary: 'Ready textbooks, optionally filtered',
  request: {
    query: z.object({
      grade: z.string().max(64).optional(),
      subject: z.string().max(128).optional().openapi({ description: 'a subject, read as its slug ("Mathématiques" is mathematiques)' }),
      language: z.string().max(16).optional(),
    }),
  },
  responses: {
    200: jsonContent(z.object({ levels: z.array(z.string()), textbooks: z.array(TextbookSchema) }).openapi('TextbookList'), 'Levels and textbooks'),
    ...errorResponses.public,
  },
})
const textbook = createRoute({
  method: 'get',
  path: '/textbooks/{id}',
  tags: ['curriculum'],
  summary: 'One ready textbook and the range of its pages',
  request: { params: z.object({ id: z.uuid() }) },
  responses: {
    200: jsonContent(
      z.object({ document: TextbookSchema, page_range: z.object({ min: z.number().int().nullable(), max: z.number().int().nullable() }) }).openapi(
        'TextbookDetail',
      ),
      'The textbook',
    ),
    404: jsonContent(ErrorSchema, 'Unknown, or not ready'),
    ...errorResponses.public,
  },
})

export function curriculumRouter(deps: Deps) {
  const { limit } = guards(deps)
  const router = createRouter()
  router.use('*', limit('public'))
  return router
    .openapi(subjects, async (c) => c.json(await listSubjects({ ctx: serviceContext(deps, c) }), 200))
    .openapi(textbooks, async (c) => c.json(await listTextbooks({ ctx: serviceContext(deps, c), input: c.req.valid('query') }), 200))
    .openapi(textbook, async (c) => c.json(await getTextbook({ ctx: serviceContext(deps, c), input: c.req.valid('param') }), 200))
}
