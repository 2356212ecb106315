// /curriculum: the public catalogue of ready documents (spec §4.9).
import { createRoute, z } from '@hono/zod-openapi'
import type { Deps } from '../deps.ts'
import { createRouter } from '../http/router.ts'
import { ErrorSchema, errorResponses, jsonContent } from '../http/schemas.ts'
import { guards } from '../http/guards.ts'
import { ApiError, ErrorCode } from '../http/errors.ts'
import { asService } from '../db/tx.ts'

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

function textbookJson(r: Record<string, unknown>): z.infer<typeof TextbookSchema> {
  return {
    id: r.id as string,
    title: (r.title as string | null) ?? '',
    grade: (r.grade as string | null) ?? '',
    subject: (r.subject as string | null) ?? '',
    major: (r.major as string | null) ?? '',
    language: (r.language as string | null) ?? '',
    weight: (r.weight as number | null) ?? 0,
    page_count: (r.page_count as number | null) ?? 0,
    chunk_count: (r.chunk_count as number | null) ?? 0,
    namespace: (r.vectordb_namespace as string | null) ?? '',
  }
}

const subjects = createRoute({
  method: 'get', path: '/subjects', tags: ['curriculum'], summary: 'Subjects that have a ready textbook',
  responses: { 200: jsonContent(z.object({ subjects: z.array(z.string()), total: z.number().int() }), 'Sorted'), ...errorResponses.public },
})
const textbooks = createRoute({
  method: 'get', path: '/textbooks', tags: ['curriculum'], summary: 'Ready textbooks, optionally filtered',
  request: { query: z.object({ grade: z.string().max(64).optional(), subject: z.string().max(128).optional(), language: z.string().max(16).optional() }) },
  responses: { 200: jsonContent(z.object({ levels: z.array(z.string()), textbooks: z.array(TextbookSchema) }).openapi('TextbookList'), 'Levels and textbooks'), ...errorResponses.public },
})
const textbook = createRoute({
  method: 'get', path: '/textbooks/{id}', tags: ['curriculum'], summary: 'One ready textbook and the range of its pages',
  request: { params: z.object({ id: z.uuid() }) },
  responses: {
    200: jsonContent(z.object({ document: TextbookSchema, page_range: z.object({ min: z.number().int().nullable(), max: z.number().int().nullable() }) }).openapi('TextbookDetail'), 'The textbook'),
    404: jsonContent(ErrorSchema, 'Unknown, or not ready'),
    ...errorResponses.public,
  },
})

export function curriculumRouter(deps: Deps) {
  const { limit } = guards(deps)
  const router = createRouter()
  router.use('*', limit('public'))
  return router
    .openapi(subjects, async (c) => {
      const rows = await asService(deps.sql, (tx) => tx`select distinct subject from public.documents where status = 'ready' and subject is not null and subject <> '' order by subject`)
      return c.json({ subjects: rows.map((r) => r.subject as string), total: rows.length }, 200)
    })
    .openapi(textbooks, async (c) => {
      const q = c.req.valid('query')
      const [grade, subject, language] = [q.grade ?? null, q.subject ?? null, q.language ?? null]
      const rows = await asService(deps.sql, (tx) => tx`
        select * from public.documents
         where status = 'ready' and (${grade}::text is null or grade = ${grade}) and (${subject}::text is null or subject = ${subject})
           and (${language}::text is null or language = ${language})
         order by grade, subject, weight desc, title`)
      const levels = [...new Set(rows.map((r) => r.grade as string | null).filter((g): g is string => !!g))].sort()
      return c.json({ levels, textbooks: rows.map(textbookJson) }, 200)
    })
    .openapi(textbook, async (c) => {
      const { id } = c.req.valid('param')
      const result = await asService(deps.sql, async (tx) => {
        const [doc] = await tx`select * from public.documents where id = ${id} and status = 'ready'`
        if (!doc) return null
        const [range] = await tx`select min(page_number)::int as min, max(page_number)::int as max from public.document_chunks where file_id = ${id}`
        return { document: textbookJson(doc), page_range: { min: (range?.min as number | null) ?? null, max: (range?.max as number | null) ?? null } }
      })
      if (!result) throw new ApiError(ErrorCode.NOT_FOUND, `No ready textbook ${id}`)
      return c.json(result, 200)
    })
}
