// The job queue against the clock and the operator: a job that is making progress is never taken for one
// whose worker died, whatever stage the progress is made in; a deleted document takes its job in flight
// with it; an admin's edit of a document survives the next publication of its reference.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { createTestApp, json, type TestApp } from './helpers/app.ts'
import { bearer } from './helpers/tokens.ts'
import { createUser } from './helpers/users.ts'
import { FR_LESSON, PHYSICS_LESSON } from './helpers/portal.ts'
import { makePdf } from '../scripts/lib/pdf.ts'
import { SourceSchema } from '../functions-shared/sources-file.ts'
import { resolveHostNode } from '../scripts/lib/node-adapter.ts'
import { createOfflineEmbedder } from '../functions-shared/ai/offline-embedder.ts'
import type { Embedder } from '../functions-shared/ai/provider.ts'

const STALE_SECONDS = 60
let db: TestDatabase
let t: TestApp
let admin: Record<string, string>
let server: Server
let base: string
/** called before each embedding batch returns (the batch's own time passing, for instance) */
let beforeBatch: ((n: number) => Promise<void>) | null = null

beforeAll(async () => {
  db = await createTestDatabase()
  const pdf = await makePdf([FR_LESSON, PHYSICS_LESSON, `${FR_LESSON} ${PHYSICS_LESSON}`, PHYSICS_LESSON])
  server = createServer((
    req,
    res,
  ) => (req.url!.startsWith('/gone/') ? res.writeHead(404).end() : res.writeHead(200, { 'content-type': 'application/pdf' }).end(pdf)))
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const offline = createOfflineEmbedder()
  let batches = 0
  const embedder: Embedder = {
    name: 'slow-offline',
    dimension: 1536,
    embed: async (texts) => {
      const vectors = await offline.embed(texts)
      await beforeBatch?.(++batches)
      return vectors
    },
  }
  t = createTestApp({
    sql: db.sql,
    // one chunk per embedding request, so a book takes several
    env: {
      FETCH_ALLOW_LOOPBACK: 'true',
      EMBED_BATCH_SIZE: '1',
      JOB_STALE_SECONDS: String(STALE_SECONDS),
      RATE_LIMIT_ADMIN_PER_MINUTE: '100000',
      LOG_LEVEL: 'silent',
    },
    deps: {
      sources: [SourceSchema.parse({ name: 'queue', index_urls: [`${base}/index.html`] })],
      resolveHost: resolveHostNode,
      embedder,
      sleep: async () => {},
    },
  })
  admin = bearer((await createUser(db.sql, { role: 'admin' })).token)
})
afterAll(async () => {
  await t?.deps.background.idle()
  server?.closeAllConnections()
  server?.close()
  await db?.close()
})

const post = async (path: string) => {
  const res = await t.request(path, { method: 'POST', headers: admin })
  return { status: res.status, body: await json(res) }
}

async function newReference(dir = ''): Promise<string> {
  const url = `${base}/${dir}${crypto.randomUUID()}.pdf`
  const [row] = await db.sql`insert into public.curriculum_references (source, pdf_source, source_url, title, grade, subject, language, status)
    values ('queue', ${url}, ${url}, 'Maths 4AS', '4AS', 'mathematiques', 'fr', 'discovered') returning id`
  return row!.id as string
}

describe('a job whose worker is alive', () => {
  it('is not reclaimed while it embeds batch after batch, each well within JOB_STALE_SECONDS, however long the whole stage takes', async () => {
    const ref = await newReference()
    const queued = await post(`/admin/ingest/${ref}`)
    expect(queued.status).toBe(202)
    const jobId = queued.body.job_id as string
    const dispatches: string[] = []
    // each batch takes two thirds of JOB_STALE_SECONDS (its job's clock moved back by that much), and the
    // operator dispatches meanwhile (`watch --dispatch`), which reclaims jobs without progress
    beforeBatch = async () => {
      await db.sql`update public.ingestion_jobs set locked_at = locked_at - make_interval(secs => ${(STALE_SECONDS * 2) / 3}) where id = ${jobId}`
      dispatches.push((await post('/admin/jobs/dispatch')).body.status as string)
    }
    try {
      expect((await post('/admin/jobs/dispatch')).body).toMatchObject({ status: 'dispatched', job_id: jobId })
      await t.deps.background.idle()
    } finally {
      beforeBatch = null
    }
    const [job] = await db.sql`select status, error_message, chunks_created from public.ingestion_jobs where id = ${jobId}`
    expect(job).toMatchObject({ status: 'ready', error_message: null, chunks_created: dispatches.length })
    // a stage longer than JOB_STALE_SECONDS in all
    expect(dispatches.length).toBeGreaterThanOrEqual(3)
    expect(dispatches.every((d) => d === 'idle')).toBe(true)
    const audit = await db.sql`select to_status from public.ingestion_audit where job_id = ${jobId} order by id`
    expect(audit.map((a) => a.to_status)).toEqual(['queued', 'parsing', 'tokenizing', 'embedding_request_sent', 'embedding_upserted', 'ready'])
  })
})

describe('a document deleted while its job waits', () => {
  const state = async (ref: string) => ({
    reference: (await db.sql`select status from public.curriculum_references where id = ${ref}`)[0]!.status as string,
    jobs: (await db.sql`select status, error_message from public.ingestion_jobs where reference_id = ${ref} order by seq`).map((j) =>
      `${j.status}${j.error_message ? `: ${j.error_message}` : ''}`
    ),
    documents: (await db.sql`select status from public.documents where reference_id = ${ref}`).map((d) => d.status as string),
  })
  const deleteDocumentOf = async (ref: string) => {
    const [doc] = await db.sql`select id from public.documents where reference_id = ${ref}`
    const res = await t.request(`/admin/documents/${doc!.id}`, { method: 'DELETE', headers: admin })
    expect(res.status).toBe(200)
  }
  const runQueue = async () => {
    while ((await post('/admin/jobs/dispatch')).body.status !== 'idle') await t.deps.background.idle()
  }

  it('takes the job with it: the reference, discovered again, can be ingested again at once', async () => {
    const ref = await newReference()
    expect((await post(`/admin/ingest/${ref}`)).status).toBe(202)
    await deleteDocumentOf(ref)
    expect(await state(ref)).toEqual({ reference: 'discovered', jobs: ['failed: cancelled: its document was deleted'], documents: [] })
    expect((await post(`/admin/ingest/${ref}`)).status).toBe(202)
    await runQueue()
    expect(await state(ref)).toEqual({ reference: 'ready', jobs: ['failed: cancelled: its document was deleted', 'ready'], documents: ['ready'] })
  })

  it('and a requeue of that job ingests the reference again, on a new document', async () => {
    const ref = await newReference()
    const jobId = (await post(`/admin/ingest/${ref}`)).body.job_id as string
    await deleteDocumentOf(ref)
    await runQueue()
    const requeued = await post(`/admin/jobs/${jobId}/requeue`)
    expect(requeued.status).toBe(200)
    expect(requeued.body).toMatchObject({ status: 'queued', retry_count: 1 })
    await runQueue()
    expect(await state(ref)).toEqual({ reference: 'ready', jobs: ['ready'], documents: ['ready'] })
  })
})

describe('a document an admin edits', () => {
  it('keeps the edit through a re-ingestion of its reference, which its document mirrors', async () => {
    const ref = await newReference()
    expect((await post(`/admin/ingest/${ref}`)).status).toBe(202)
    while ((await post('/admin/jobs/dispatch')).body.status !== 'idle') await t.deps.background.idle()
    const [doc] = await db.sql`select id from public.documents where reference_id = ${ref}`
    const edit = { title: 'Équations du premier degré', major: 'sciences', weight: 7, category: 'manuel' }
    const res = await t.request(`/admin/documents/${doc!.id}`, {
      method: 'PATCH',
      headers: { ...admin, 'content-type': 'application/json' },
      body: JSON.stringify(edit),
    })
    expect(await json(res)).toMatchObject(edit)
    const [audit] = await db.sql`select details from public.ingestion_audit where reference_id = ${ref} and details->>'trigger' = 'reference update'`
    expect(audit!.details.changes).toEqual({
      title: { from: 'Maths 4AS', to: edit.title },
      major: { from: null, to: edit.major },
      weight: { from: 0, to: 7 },
      category: { from: null, to: edit.category },
    })
    expect((await post(`/admin/ingest/${ref}?force=true`)).status).toBe(202)
    while ((await post('/admin/jobs/dispatch')).body.status !== 'idle') await t.deps.background.idle()
    const [after] = await db.sql`select status, title, major, weight, category from public.documents where id = ${doc!.id}`
    expect(after).toEqual({ status: 'ready', ...edit })
    const [reference] = await db.sql`select title, major, weight, category from public.curriculum_references where id = ${ref}`
    expect(reference).toEqual(edit)
  })
})

describe('the legacy POST /admin/vector-embedding', () => {
  it("puts a reference's failed job back in the queue, retry_count + 1, rather than starting a new job", async () => {
    const ref = await newReference('gone/')
    const first = (await post(`/admin/ingest/${ref}`)).body.job_id as string
    while ((await post('/admin/jobs/dispatch')).body.status !== 'idle') await t.deps.background.idle()
    const res = await t.request('/admin/vector-embedding', {
      method: 'POST',
      headers: { ...admin, 'content-type': 'application/json' },
      body: JSON.stringify({ reference_id: ref }),
    })
    expect(res.status).toBe(202)
    expect(await json(res)).toEqual({ status: 'queued', job_id: first, reference_id: ref })
    const jobs = await db.sql`select id, status, retry_count from public.ingestion_jobs where reference_id = ${ref}`
    expect(jobs).toEqual([{ id: first, status: 'queued', retry_count: 1 }])
  })
})
