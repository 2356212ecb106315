// The whole path on the fixture portal: sync → auto-created jobs → dispatch → ready → public catalogue;
// failures, retries, requeue, re-ingestion.
import { createHash } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { createTestApp, json, type TestApp } from './helpers/app.ts'
import { bearer } from './helpers/tokens.ts'
import { type Portal, startPortal } from './helpers/portal.ts'
import { apiKey } from '../functions-shared/lib/keys.ts'
import { LOCAL_JWT_SECRET } from '../functions-shared/config.ts'
import { SourceSchema } from '../functions-shared/sources-file.ts'
import { connectGuardNode, resolveHostNode } from '../scripts/lib/node-adapter.ts'
import { createOfflineEmbedder } from '../functions-shared/ai/offline-embedder.ts'
import type { Embedder } from '../functions-shared/ai/provider.ts'

let db: TestDatabase
let t: TestApp
let portal: Portal
let service: Record<string, string>
let embedFailures = 0
const sleeps: number[] = []

beforeAll(async () => {
  db = await createTestDatabase()
  portal = await startPortal()
  const offline = createOfflineEmbedder()
  // an embedder that fails `embedFailures` times (a 503-like transient error), then works
  const flaky: Embedder = {
    name: 'flaky-offline',
    dimension: 1536,
    embed: async (texts) => {
      if (embedFailures > 0) {
        embedFailures--
        throw Object.assign(new Error('embedding service returned 503'), { transient: true })
      }
      return offline.embed(texts)
    },
  }
  t = createTestApp({
    sql: db.sql,
    env: { FETCH_ALLOW_LOOPBACK: 'true', RATE_LIMIT_ADMIN_PER_MINUTE: '1000', RATE_LIMIT_PUBLIC_PER_MINUTE: '1000' },
    deps: {
      sources: [SourceSchema.parse({
        name: 'fixture',
        index_urls: [`${portal.url}/programmes/page1.html`],
        rules: [
          { field: 'grade', from: 'url', pattern: '/fichiers/(\\d+AS)/' },
          { field: 'subject', from: 'url', pattern: '/fichiers/\\d+AS/([a-z-]+)/' },
        ],
      })],
      resolveHost: resolveHostNode,
      connectGuard: connectGuardNode,
      embedder: flaky,
      sleep: async (ms) => void sleeps.push(ms),
    },
  })
  service = bearer(await apiKey(LOCAL_JWT_SECRET, 'service_role'))
  await t.request('/scraping/fixture/sync', { method: 'POST', headers: service })
})
afterAll(async () => {
  await t?.deps.background.idle()
  await portal?.close()
  await db?.close()
})

const post = async (path: string, body?: unknown) => {
  const res = await t.request(path, {
    method: 'POST',
    headers: { ...service, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  return { status: res.status, headers: res.headers, body: await json(res) }
}
const get = async (path: string, headers: Record<string, string> = service) => {
  const res = await t.request(path, { headers })
  return { status: res.status, body: await json(res) }
}
async function dispatchAll() {
  const out: Record<string, any>[] = []
  for (;;) {
    const r = await post('/admin/jobs/dispatch')
    out.push(r.body)
    if (r.body.status === 'idle') break
  }
  await t.deps.background.idle()
  return out
}

describe('sync → dispatch → ready', () => {
  it('processes the jobs the scraper queued, oldest first, then answers idle', async () => {
    const queued = await get('/admin/jobs?status=queued')
    expect(queued.body.total).toBe(3)
    const results = await dispatchAll()
    expect(results.map((r) => r.status)).toEqual(['dispatched', 'dispatched', 'dispatched', 'idle'])
    expect(results.at(-1)).toEqual({ status: 'idle', job_id: null, reference_id: null })
    const ready = await get('/admin/jobs?status=ready')
    expect(ready.body.total).toBe(3)
    for (const job of ready.body.items) expect(job.chunks_created).toBeGreaterThan(0)
  })

  it('records every transition of a job in its audit trail', async () => {
    const [first] = (await get('/admin/jobs?status=ready')).body.items
    const job = await get(`/admin/jobs/${first.id}`)
    expect(job.body.audit.map((a: { from_status: string | null; to_status: string }) => `${a.from_status}→${a.to_status}`)).toEqual([
      'null→queued',
      'queued→parsing',
      'parsing→tokenizing',
      'tokenizing→embedding_request_sent',
      'embedding_request_sent→embedding_upserted',
      'embedding_upserted→ready',
    ])
  })

  it('stored chunks with deterministic ids and vectors with only light metadata, in the namespace grade-{grade}-{subject}', async () => {
    const [doc] = await db
      .sql`select d.id, d.vectordb_namespace, d.chunk_count, d.page_count, d.status from public.documents d join public.curriculum_references r on r.id = d.reference_id where r.source_url like '%equations.pdf'`
    expect(doc).toMatchObject({ vectordb_namespace: 'grade-4as-mathematiques', status: 'ready', page_count: 1 })
    const chunks = await db.sql`select id, page_number, chunk_index from public.document_chunks where file_id = ${doc!.id} order by page_number, chunk_index`
    expect(chunks.length).toBe(doc!.chunk_count)
    for (const c of chunks) expect(c.id).toBe(createHash('sha256').update(`${doc!.id}:${c.page_number}:${c.chunk_index}`).digest('hex'))
    const vectors = await db.sql`select namespace, index_name, metadata from public.vectors where file_id = ${doc!.id}`
    expect(vectors.length).toBe(chunks.length)
    expect(Object.keys(vectors[0]!.metadata as object).sort()).toEqual([
      'chunk_id',
      'file_id',
      'grade',
      'ingestion_ts',
      'language',
      'page_number',
      'source_url',
      'subject',
      'text_source',
    ])
    expect((vectors[0]!.metadata as { text_source: string }).text_source).toBe('pdf')
    expect(vectors[0]).toMatchObject({ namespace: 'grade-4as-mathematiques', index_name: 'curriculum-1536' })
    const [ref] = await db
      .sql`select status, vectordb_namespace, vectordb_vector_count from public.curriculum_references where source_url like '%equations.pdf'`
    expect(ref).toEqual({ status: 'ready', vectordb_namespace: 'grade-4as-mathematiques', vectordb_vector_count: chunks.length })
  })

  it('shows the ready textbooks in the public catalogue', async () => {
    expect((await get('/curriculum/subjects', {})).body).toEqual({ subjects: ['education-islamique', 'mathematiques', 'physique'], total: 3 })
    const fourth = await get('/curriculum/textbooks?grade=4AS', {})
    expect(fourth.body.levels).toEqual(['4AS'])
    expect(fourth.body.textbooks).toHaveLength(2)
    // the grade as a student types it: chat takes it without case, and so does the catalogue
    expect((await get('/curriculum/textbooks?grade=4as', {})).body).toEqual(fourth.body)
    // and the subject as it is written: read as its slug, as chat reads it
    const maths = await get('/curriculum/textbooks?grade=4AS&subject=mathematiques', {})
    expect(maths.body.textbooks.map((b: { subject: string }) => b.subject)).toEqual(['mathematiques'])
    expect((await get(`/curriculum/textbooks?grade=4AS&subject=${encodeURIComponent('Mathématiques')}`, {})).body).toEqual(maths.body)
    const all = await get('/curriculum/textbooks', {})
    expect(all.body.levels).toEqual(['4AS', '5AS'])
    const physics = all.body.textbooks.find((b: { subject: string }) => b.subject === 'physique')
    expect(physics).toMatchObject({ grade: '5AS', page_count: 1, namespace: 'grade-5as-physique', language: 'fr' })
    const one = await get(`/curriculum/textbooks/${physics.id}`, {})
    expect(one.body).toEqual({ document: physics, page_range: { min: 1, max: 1 } })
    expect((await get(`/curriculum/textbooks/${crypto.randomUUID()}`, {})).status).toBe(404)
  })
})

describe('ingest requests', () => {
  it('refuses a ready reference without force, an unknown one and a duplicate; re-ingests with force idempotently', async () => {
    const refs = (await get('/admin/references?limit=50')).body.items as Record<string, any>[]
    const maths = refs.find((r) => r.source_url.endsWith('/equations.pdf'))!
    const duplicate = refs.find((r) => r.status === 'duplicate')!
    expect((await post(`/admin/ingest/${maths.id}`)).status).toBe(409)
    expect((await post(`/admin/ingest/${crypto.randomUUID()}`)).status).toBe(404)
    expect((await post(`/admin/ingest/${duplicate.id}`)).body).toMatchObject({ error: 'conflict', message: expect.stringContaining('duplicate') })

    const before = await db
      .sql`select d.id, d.ingestion_ts, (select array_agg(id order by id) from public.document_chunks c where c.file_id = d.id) as ids from public.documents d where reference_id = ${maths.id}`
    // what a longer earlier run, or one under another namespace, would have left behind
    await db.sql`insert into public.document_chunks (id, file_id, page_number, chunk_index, content) values ('stale-chunk', ${before[0]!.id}, 9, 0, 'old page')`
    await db.sql`insert into public.vectors (index_name, namespace, id, file_id, embedding) values ('curriculum-1536', 'grade-old-namespace', 'stale-vector', ${
      before[0]!.id
    }, ${`[${Array(1536).fill(0.01).join(',')}]`})`
    const queued = await post(`/admin/ingest/${maths.id}?force=true`)
    expect(queued).toMatchObject({ status: 202, body: { status: 'queued', reference_id: maths.id } })
    await dispatchAll()
    const after = await db
      .sql`select d.id, d.ingestion_ts, (select array_agg(id order by id) from public.document_chunks c where c.file_id = d.id) as ids from public.documents d where reference_id = ${maths.id}`
    expect(after).toHaveLength(1)
    expect(after[0]!.id).toBe(before[0]!.id)
    expect(after[0]!.ids).toEqual(before[0]!.ids) // the same ids, and the stale rows gone
    expect(new Date(after[0]!.ingestion_ts as Date) > new Date(before[0]!.ingestion_ts as Date)).toBe(true)
    const [count] = await db.sql`select count(*)::int as n from public.vectors where file_id = ${after[0]!.id}`
    expect(count!.n).toBe((after[0]!.ids as string[]).length)
  })

  it('the legacy POST /admin/vector-embedding queues as ingest does, with a Deprecation header', async () => {
    const refs = (await get('/admin/references?status=ready')).body.items as Record<string, any>[]
    const res = await post('/admin/vector-embedding', { reference_id: refs[0]!.id, force: true })
    expect(res).toMatchObject({ status: 202, body: { status: 'queued', reference_id: refs[0]!.id } })
    expect(res.headers.get('deprecation')).toBe('true')
    await dispatchAll()
  })
})

describe('failures', () => {
  it('retries a transient embedder failure with backoff and ends ready', async () => {
    const refs = (await get('/admin/references?status=ready')).body.items as Record<string, any>[]
    embedFailures = 2
    sleeps.length = 0
    const queued = await post(`/admin/ingest/${refs[0]!.id}?force=true`)
    await dispatchAll()
    expect((await get(`/admin/jobs/${queued.body.job_id}`)).body.status).toBe('ready')
    expect(sleeps).toHaveLength(2) // two retries, full jitter within the exponential bounds
    expect(sleeps[0]).toBeLessThanOrEqual(1000)
    expect(sleeps[1]).toBeLessThanOrEqual(2000)
  })

  it('fails after three embedder failures, then a requeue runs it to ready once the embedder is back', async () => {
    const refs = (await get('/admin/references?status=ready')).body.items as Record<string, any>[]
    embedFailures = 3
    const queued = await post(`/admin/ingest/${refs[1]!.id}?force=true`)
    await dispatchAll()
    const failed = (await get(`/admin/jobs/${queued.body.job_id}`)).body
    expect(failed).toMatchObject({ status: 'failed', error_message: expect.stringContaining('embed failed: embedding service returned 503') })
    expect(embedFailures).toBe(0)
    expect((await post(`/admin/jobs/${failed.id}/requeue`)).body).toMatchObject({ status: 'queued', retry_count: 1 })
    await dispatchAll()
    expect((await get(`/admin/jobs/${failed.id}`)).body).toMatchObject({ status: 'ready', retry_count: 1, error_message: null })
  })

  it('exposes ingestion metrics: jobs by state, stage durations, pages, chunks, retries, failures by reason', async () => {
    const text = await (await t.request('/metrics', { headers: service })).text()
    expect(text).toMatch(/ingestion_jobs\{state="ready"\} [1-9]/)
    expect(text).toMatch(/ingestion_stage_seconds_count\{stage="embed"\} [1-9]/)
    expect(text).toMatch(/ingestion_pages_total [1-9]/)
    expect(text).toMatch(/ingestion_chunks_total [1-9]/)
    expect(text).toMatch(/ingestion_retries_total\{stage="embed"\} [1-9]/)
    expect(text).toMatch(/ingestion_failures_total\{reason="embedding"\} 1/)
  })

  it('fails the job and the document with error_message when the PDF is gone; requeue puts it back once', async () => {
    const [ref] = await db.sql`insert into public.curriculum_references (source, pdf_source, source_url, title, grade, subject, language)
      values ('fixture', ${`${portal.url}/fichiers/absent.pdf`}, ${`${portal.url}/fichiers/absent.pdf`}, 'Retiré', '6AS', 'histoire', 'fr') returning id`
    const queued = await post(`/admin/ingest/${ref!.id}`)
    await dispatchAll()
    const job = (await get(`/admin/jobs/${queued.body.job_id}`)).body
    expect(job).toMatchObject({ status: 'failed', error_message: expect.stringMatching(/^download failed: HTTP 404/) })
    const [doc] = await db.sql`select status from public.documents where id = ${job.file_id}`
    expect(doc!.status).toBe('failed')
    const requeued = await post(`/admin/jobs/${job.id}/requeue`)
    expect(requeued.body).toMatchObject({ status: 'queued', retry_count: 1, error_message: null })
    expect((await post(`/admin/jobs/${job.id}/requeue`)).status).toBe(409)
    expect((await post(`/admin/jobs/${crypto.randomUUID()}/requeue`)).status).toBe(404)
    await dispatchAll() // fails again: the file is still gone
    expect((await get(`/admin/jobs/${job.id}`)).body.status).toBe('failed')
  })

  it('fails a job whose PDF is corrupt without retrying, with the reason', async () => {
    const [ref] = await db.sql`insert into public.curriculum_references (source, pdf_source, source_url, title, grade, subject, language)
      values ('fixture', ${`${portal.url}/fichiers/page-html.pdf`}, ${`${portal.url}/fichiers/page-html.pdf`}, 'Pas un PDF', '6AS', 'histoire', 'fr') returning id`
    sleeps.length = 0
    const queued = await post(`/admin/ingest/${ref!.id}`)
    await dispatchAll()
    expect((await get(`/admin/jobs/${queued.body.job_id}`)).body).toMatchObject({ status: 'failed', error_message: expect.stringContaining('not a PDF') })
    expect(sleeps).toEqual([])
  })
})
