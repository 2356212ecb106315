// /curriculum: the public catalogue of ready documents (spec §4.9).
import { createRoute, z } from '@hono/zod-openapi'
import { gradeMatchKey, subjectMatchKey } from '../catalogue/filters.ts'
import type { Deps } from '../deps.ts'
import { createRouter } from '../http/router.ts'
import { errorResponses, ErrorSchema, jsonContent } from '../http/schemas.ts'
import { guards } from '../http/guards.ts'
import { ApiError, ErrorCode } from '../http/errors.ts'
import { asService } from '../db/tx.ts'
import type { DocumentRow } from '../ingestion/documents.ts'

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

function textbookJson(r: DocumentRow): z.infer<typeof TextbookSchema> {
  return {
    id: r.id,
    title: r.title ?? '',
    grade: r.grade ?? '',
    subject: r.subject ?? '',
    major: r.major ?? '',
    language: r.language ?? '',
    weight: r.weight,
    page_count: r.page_count ?? 0,
    chunk_count: r.chunk_count ?? 0,
    namespace: r.vectordb_namespace ?? '',
  }
}

/** The first and last page of a document's chunks; both null when it has none. */
interface PageRangeRow {
  min: number | null
  max: number | null
}

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
    .openapi(subjects, async (c) => {
      const rows = await asService(
        deps.sql,
        (tx) =>
          tx<
            { subject: string }[]
          >`select distinct subject from public.documents where status = 'ready' and subject is not null and subject <> '' order by subject`,
      )
      return c.json({ subjects: rows.map((r) => r.subject), total: rows.length }, 200)
    })
    .openapi(textbooks, async (c) => {
      const q = c.req.valid('query')
      // a grade and a subject read as chat reads them (catalogue/filters.ts): "5ème AS" is the level 5AS,
      // "Mathématiques" and "Maths" are mathematiques, whichever form a document was stored in
      const grade = q.grade === undefined ? null : gradeMatchKey(q.grade)
      const subject = q.subject === undefined ? null : subjectMatchKey(q.subject)
      const language = q.language ?? null
      const ready = await asService(deps.sql, (tx) =>
        tx<DocumentRow[]>`
        select * from public.documents
         where status = 'ready' and (${language}::text is null or language = ${language})
         order by grade, subject, weight desc, title`)
      const rows = ready.filter((r) =>
        (grade === null || (r.grade !== null && gradeMatchKey(r.grade) === grade)) &&
        (subject === null || (r.subject !== null && subjectMatchKey(r.subject) === subject))
      )
      const levels = [...new Set(rows.map((r) => r.grade).filter((g): g is string => !!g))].sort()
      return c.json({ levels, textbooks: rows.map(textbookJson) }, 200)
    })
    .openapi(textbook, async (c) => {
      const { id } = c.req.valid('param')
      const result = await asService(deps.sql, async (tx) => {
        const [doc] = await tx<DocumentRow[]>`select * from public.documents where id = ${id} and status = 'ready'`
        if (!doc) return null
        const [range] = await tx<
          [PageRangeRow]
        >`select min(page_number)::int as min, max(page_number)::int as max from public.document_chunks where file_id = ${id}`
        return { document: textbookJson(doc), page_range: { min: range.min, max: range.max } }
      })
      if (!result) throw new ApiError(ErrorCode.NOT_FOUND, `No ready textbook ${id}`)
      return c.json(result, 200)
    })
}
