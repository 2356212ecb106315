// Admin: ingestion requests, dispatch, jobs and their audit trail, requeue (spec §4.8).
import { createRoute, z } from '@hono/zod-openapi'
import type { Deps } from '../deps.ts'
import { adminSecurity, createRouter } from '../http/router.ts'
import { errorResponses, ErrorSchema, jsonContent } from '../http/schemas.ts'
import { ApiError, ErrorCode } from '../http/errors.ts'
import { listQuery } from '../http/list.ts'
import { dispatchNext, getJob, legacyIngestion, listJobs, requestIngestion, requeueJob } from '../ingestion/service.ts'
import { JOB_STATUSES } from '../domain/enums.ts'
import { serviceContext } from '../http/context.ts'

const JobStatus = z.enum(JOB_STATUSES)
const JobSchema = z
  .object({
    id: z.uuid(),
    reference_id: z.uuid(),
    file_id: z.uuid().nullable(),
    status: JobStatus,
    chunks_created: z.number().int(),
    vectors_upserted: z.number().int(),
    retry_count: z.number().int(),
    attempt: z.number().int().openapi({ description: 'claims so far; a worker acts only for the current one' }),
    error_message: z.string().nullable(),
    progress: z
      .object({
        pages_done: z.number().int(),
        pages_total: z.number().int().nullable().openapi({ description: 'null until the pages are counted' }),
        pages_ocr: z.number().int().openapi({ description: 'pages whose text came from the recognizer (OCR)' }),
      })
      .openapi({ description: 'pages read by the current attempt, updated while it reads them (OCR takes seconds a page)' }),
    needs_ocr: z.boolean().openapi({ description: 'its PDF has pages to recognize: only a Node process (npm start, npm run worker) claims it' }),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .openapi('IngestionJob')
const AuditSchema = z.object({
  id: z.number().int(),
  from_status: z.string().nullable(),
  to_status: z.string(),
  error_message: z.string().nullable(),
  details: z.record(z.string(), z.unknown()),
  at: z.string(),
}).openapi('IngestionAuditEntry')
const Queued = z.object({ status: z.literal('queued'), job_id: z.uuid(), reference_id: z.uuid() }).openapi('IngestQueued')
const Force = z.object({ force: z.enum(['true', 'false']).default('false').transform((v) => v === 'true') })
const err = (d: string) => jsonContent(ErrorSchema, d)

export function adminJobsRouter(deps: Deps) {
  const ListQuery = listQuery(deps.config)
  const ingest = createRoute({
    method: 'post',
    path: '/ingest/{reference_id}',
    tags: ['ingestion'],
    summary: 'Queue the ingestion of a reference',
    security: adminSecurity,
    description:
      'Creates a queued job and a document in processing; nothing runs until a dispatch. A reference already ready, or with an active job, is 409 unless force=true; a duplicate reference is 409, and so is one without a grade or subject (it has no namespace: set them with PATCH /admin/references/{reference_id}).',
    request: { params: z.object({ reference_id: z.uuid() }), query: Force },
    responses: {
      202: jsonContent(Queued, 'Queued'),
      404: err('Unknown reference'),
      409: err('Already ingested, in progress, a duplicate, or without a grade or subject'),
      ...errorResponses.protected,
    },
  })
  const legacy = createRoute({
    method: 'post',
    path: '/vector-embedding',
    tags: ['ingestion'],
    summary: 'Legacy: queue the ingestion of a reference',
    security: adminSecurity,
    deprecated: true,
    description: 'As POST /admin/ingest/{reference_id}, but a reference whose newest job failed has that job requeued (retry_count + 1).',
    request: { body: { content: { 'application/json': { schema: z.object({ reference_id: z.uuid(), force: z.boolean().default(false) }) } }, required: true } },
    responses: {
      202: jsonContent(Queued, 'Queued (as POST /admin/ingest/{reference_id})'),
      404: err('Unknown reference'),
      409: err('Conflict'),
      ...errorResponses.protected,
    },
  })
  const dispatch = createRoute({
    method: 'post',
    path: '/jobs/dispatch',
    tags: ['ingestion'],
    summary: 'Start the oldest queued job in the background',
    security: adminSecurity,
    description: 'When no job is queued the answer is 200 with status "idle" and null ids.',
    responses: {
      200: jsonContent(
        z.object({ status: z.enum(['dispatched', 'idle']), job_id: z.uuid().nullable(), reference_id: z.uuid().nullable() }).openapi('DispatchResult'),
        'Dispatched, or idle',
      ),
      ...errorResponses.protected,
    },
  })
  const list = createRoute({
    method: 'get',
    path: '/jobs',
    tags: ['ingestion'],
    summary: 'Ingestion jobs',
    security: adminSecurity,
    request: { query: ListQuery.extend({ status: JobStatus.optional() }) },
    responses: {
      200: jsonContent(
        z.object({ items: z.array(JobSchema), total: z.number().int(), limit: z.number().int(), offset: z.number().int() }).openapi('IngestionJobList'),
        'Newest first',
      ),
      ...errorResponses.protected,
    },
  })
  const one = createRoute({
    method: 'get',
    path: '/jobs/{job_id}',
    tags: ['ingestion'],
    summary: 'One job with its audit trail',
    security: adminSecurity,
    request: { params: z.object({ job_id: z.uuid() }) },
    responses: {
      200: jsonContent(JobSchema.extend({ audit: z.array(AuditSchema) }).openapi('IngestionJobWithAudit'), 'The job'),
      404: err('Unknown job'),
      ...errorResponses.protected,
    },
  })
  const requeue = createRoute({
    method: 'post',
    path: '/jobs/{job_id}/requeue',
    tags: ['ingestion'],
    summary: 'Put a failed job back in the queue',
    security: adminSecurity,
    request: { params: z.object({ job_id: z.uuid() }) },
    responses: {
      200: jsonContent(JobSchema.extend({ audit: z.array(AuditSchema) }), 'The job, queued, retry_count + 1'),
      404: err('Unknown job'),
      409: err('The job is not failed'),
      ...errorResponses.protected,
    },
  })

  return createRouter()
    .openapi(
      ingest,
      async (c) =>
        c.json(
          await requestIngestion({
            ctx: serviceContext(deps, c),
            input: { reference_id: c.req.valid('param').reference_id, force: c.req.valid('query').force },
          }),
          202,
        ),
    )
    .openapi(legacy, async (c) => {
      c.header('Deprecation', 'true')
      c.header('Link', '</admin/ingest/{reference_id}>; rel="successor-version"')
      return c.json(await legacyIngestion({ ctx: serviceContext(deps, c), input: c.req.valid('json') }), 202)
    })
    .openapi(dispatch, async (c) => c.json(await dispatchNext({ ctx: serviceContext(deps, c) }), 200))
    .openapi(list, async (c) => c.json(await listJobs({ ctx: serviceContext(deps, c), input: c.req.valid('query') }), 200))
    .openapi(one, async (c) => {
      const job = await getJob({ ctx: serviceContext(deps, c), input: { id: c.req.valid('param').job_id } })
      if (!job) throw new ApiError(ErrorCode.NOT_FOUND, 'Unknown job')
      return c.json(job, 200)
    })
    .openapi(requeue, async (c) => c.json(await requeueJob({ ctx: serviceContext(deps, c), input: { id: c.req.valid('param').job_id } }), 200))
}
