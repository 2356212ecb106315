// Admin: manual upload, document edits and deletion, and the dashboard statistics (spec §4.6, §4.7).
import { createRoute, z } from '@hono/zod-openapi'
import type { Deps } from '../deps.ts'
import { adminSecurity, createRouter, validated } from '../http/router.ts'
import { readMultipart } from '../http/form.ts'
import { errorResponses, ErrorSchema, jsonContent } from '../http/schemas.ts'
import { guards } from '../http/guards.ts'
import { ApiError, ErrorCode } from '../http/errors.ts'
import { uploadCurriculum } from '../ingestion/upload.ts'
import { dashboardStats, deleteDocument, updateDocument } from '../ingestion/documents.ts'
import { DOCUMENT_ORIGINS, DOCUMENT_STATUSES } from '../domain/enums.ts'
import { serviceContext } from '../http/context.ts'

const DocumentSchema = z
  .object({
    id: z.uuid(),
    title: z.string().nullable(),
    major: z.string().nullable(),
    weight: z.number().int(),
    category: z.string().nullable(),
    grade: z.string().nullable(),
    subject: z.string().nullable(),
    language: z.string().nullable(),
    reference_id: z.uuid().nullable(),
    status: z.enum(DOCUMENT_STATUSES),
    origin: z.enum(DOCUMENT_ORIGINS),
    vectordb_index: z.string().nullable(),
    vectordb_namespace: z.string().nullable(),
    vectordb_vector_count: z.number().int().nullable(),
    page_count: z.number().int().nullable(),
    chunk_count: z.number().int().nullable(),
    ingestion_ts: z.string().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .openapi('Document')
const count = z.number().int()
const StatsSchema = z
  .object({
    documents: z.object({ total: count, ready: count, processing: count, failed: count }),
    chunks: z.object({ total: count }),
    references: z.object({ total: count, discovered: count, ready: count, failed: count }),
    users: z.object({ total: count, admins: count, students: count }),
    jobs: z.object({ queued: count, running: count, completed: count, failed: count }),
    wallet: z.object({ total_tokens_in_circulation: count }),
  })
  .openapi('DashboardStats')
/** The PDF, as a file part: a part without a filename is a text field to every multipart reader, and is refused as what it lacks. */
const FilePart = z.custom<File>((v) => v instanceof File, {
  error: (issue) =>
    typeof issue.input === 'string'
      ? 'the part "file" has no filename: send the PDF as a file part (Content-Disposition: form-data; name="file"; filename="...")'
      : Array.isArray(issue.input)
      ? 'send one file part, not several'
      : 'a file is required',
})
const UploadForm = z.object({
  file: FilePart.openapi({ type: 'string', format: 'binary', description: 'the PDF, at most UPLOAD_MAX_BYTES' }),
  grade: z.string().trim().min(1).max(64),
  subject: z.string().trim().min(1).max(128),
  language: z.enum(['fr', 'ar', 'hassaniya']),
  namespace: z.string().trim().min(1).max(200).optional().openapi({ description: 'grade-{grade}-{subject} (the default); another namespace is 400' }),
  pdf_source: z.url({ protocol: /^https?$/ }).optional().openapi({ description: "the PDF's http(s) address: the link students get with each source" }),
})
const err = (d: string) => jsonContent(ErrorSchema, d)
const DocumentId = z.object({ document_id: z.uuid() })

export function adminDocumentsRouter(deps: Deps) {
  const { limit } = guards(deps)
  const upload = createRoute({
    method: 'post',
    path: '/upload-curriculum',
    tags: ['documents'],
    summary: 'Upload a curriculum PDF (processed in the request)',
    security: adminSecurity,
    description:
      'multipart/form-data: file, grade, subject, language required; namespace (grade-{grade}-{subject}, the only one allowed) and pdf_source (http or https) optional. The grade and subject are stored as questions filter on them: the grade as one level (6 C: 6C, 5ème AS: 5AS), the subject as the catalogue names it (SVT: sciences-naturelles, Sciences Physiques: physique), else a lower-case slug. Character chunks of 1000 with 150 overlap; the chunk text is also in the vector metadata. 30 per minute per admin.',
    request: { body: { content: { 'multipart/form-data': { schema: UploadForm } }, required: true } },
    responses: {
      201: jsonContent(
        z.object({
          status: z.literal('ready'),
          document_id: z.uuid(),
          namespace: z.string(),
          pages: count,
          content_pages: count,
          chunks: count,
          vectors: count,
          ocr_pages: count.describe('Pages whose text was recognized from their image (OCR)'),
        }).openapi('UploadResult'),
        'The ready document',
      ),
      413: err('Larger than UPLOAD_MAX_BYTES'),
      415: err('Not a PDF, or a body that is not multipart/form-data'),
      503: err('Every PDF reader is busy and PDF_READER_QUEUE readings already wait: retry after Retry-After seconds'),
      ...errorResponses.protected,
    },
  })
  const patch = createRoute({
    method: 'patch',
    path: '/documents/{document_id}',
    tags: ['documents'],
    summary: "Edit a document's title, major, weight or category",
    security: adminSecurity,
    request: {
      params: DocumentId,
      body: {
        content: {
          'application/json': {
            schema: z.strictObject({
              title: z.string().max(300).optional(),
              major: z.string().max(100).optional(),
              weight: z.number().int().min(-1000).max(1000).optional(),
              category: z.string().max(100).optional(),
            }).openapi('UpdateDocumentRequest'),
          },
        },
        required: true,
      },
    },
    responses: { 200: jsonContent(DocumentSchema, 'The document'), 404: err('Unknown document'), ...errorResponses.protected },
  })
  const remove = createRoute({
    method: 'delete',
    path: '/documents/{document_id}',
    tags: ['documents'],
    summary: 'Delete a document, its vectors and chunks',
    security: adminSecurity,
    description:
      'In order: read the document, delete its vectors (file id and namespace), its chunks, the row, and set the linked reference back to discovered.',
    request: { params: DocumentId },
    responses: {
      200: jsonContent(z.object({ status: z.literal('deleted'), chunks_removed: count, vectors_removed: count }).openapi('DeleteDocumentResult'), 'Deleted'),
      404: err('Unknown document'),
      ...errorResponses.protected,
    },
  })
  const stats = createRoute({
    method: 'get',
    path: '/stats',
    tags: ['admin'],
    summary: 'Dashboard statistics',
    security: adminSecurity,
    description:
      'jobs.running counts parsing, tokenizing, embedding_request_sent and embedding_upserted; jobs.completed counts ready. Tokens in circulation: wallet balances plus tokens held by pending reservations.',
    responses: { 200: jsonContent(StatsSchema, 'Counters from live data'), ...errorResponses.protected },
  })

  const router = createRouter()
  router.use('/upload-curriculum', limit('upload'))
  // documented from its schema, but its body read here: the router's own validator refuses boundaries
  // RFC 2046 allows (see http/form.ts)
  router.openAPIRegistry.registerPath(upload)
  router.post('/upload-curriculum', async (c) => {
    const form = validated('form', UploadForm.safeParse(await readMultipart(c)))
    const bytes = new Uint8Array(await form.file.arrayBuffer())
    return c.json(
      await uploadCurriculum({
        ctx: serviceContext(deps, c),
        input: {
          bytes,
          grade: form.grade,
          subject: form.subject,
          language: form.language,
          namespace: form.namespace,
          pdf_source: form.pdf_source,
        },
      }),
      201,
    )
  })
  return router
    .openapi(patch, async (c) => {
      const doc = await updateDocument({
        ctx: serviceContext(deps, c),
        input: { id: c.req.valid('param').document_id, patch: c.req.valid('json') },
        principal: c.get('principal'),
      })
      if (!doc) throw new ApiError(ErrorCode.NOT_FOUND, 'Unknown document')
      return c.json(doc, 200)
    })
    .openapi(remove, async (c) => {
      const result = await deleteDocument({ ctx: serviceContext(deps, c), input: { id: c.req.valid('param').document_id } })
      if (!result) throw new ApiError(ErrorCode.NOT_FOUND, 'Unknown document')
      return c.json(result, 200)
    })
    .openapi(stats, async (c) => c.json(await dashboardStats({ ctx: serviceContext(deps, c) }), 200))
}
