// The crash matrix of ingestion. A run is stopped dead at each job state (as kill -9 would leave it: its
// last transition committed, nothing after it), then the operator's recoveries — reclaim, requeue, a
// forced re-ingestion — happen in every order, and the stopped run may even wake up again (a worker that
// was only frozen). After every step references, documents and jobs are in step, and the catalogue
// shows the latest version that completed, or nothing when none did. Finally, a real worker process is
// killed with SIGKILL in the middle of a re-ingestion.
import { spawn } from 'node:child_process'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { createTestApp, json, type TestApp } from './helpers/app.ts'
import { bearer } from './helpers/tokens.ts'
import { createUser } from './helpers/users.ts'
import { makePdf } from '../scripts/lib/pdf.ts'
import { SourceSchema } from '../functions-shared/sources-file.ts'
import { resolveHostNode } from '../scripts/lib/node-adapter.ts'
import { claimNextJob, type JobOutcome, processJob } from '../functions-shared/ingestion/pipeline.ts'

const root = new URL('..', import.meta.url).pathname
let db: TestDatabase
let t: TestApp
let admin: Record<string, string>
let server: Server
let base: string

/** The PDF each path serves now: a version marker on every page. */
const current = new Map<string, string>()
const pdfs = new Map<string, Uint8Array>()
/** A held download answers only when released (a worker stuck in parsing). */
let hold: Promise<void> | null = null

async function pdfOf(version: string): Promise<Uint8Array> {
  let pdf = pdfs.get(version)
  if (!pdf) {
    const page = (n: number) =>
      `Version ${version}, page ${n}. Une équation du premier degré se résout en isolant l'inconnue: on ajoute, on soustrait, puis on divise les deux membres par le même nombre non nul. ${
        'Exemple résolu pas à pas. '.repeat(4)
      }`
    pdf = await makePdf([page(1), page(2)])
    pdfs.set(version, pdf)
  }
  return pdf
}

/** What each run downloaded (recorded when it enters tokenizing), by job and attempt. */
const downloaded = new Map<string, string>()
/** A run to stop: at this state of this job, the run waits on `gate` forever (or until released). */
let freeze: { job: string; status: string; reached: () => void; gate: Promise<void> } | null = null

beforeAll(async () => {
  db = await createTestDatabase()
  server = createServer(async (req, res) => {
    const path = new URL(req.url!, 'http://x').pathname
    if (hold) await hold
    const version = current.get(path)
    if (!version) return res.writeHead(404).end()
    res.writeHead(200, { 'content-type': 'application/pdf' }).end(await pdfOf(version))
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  t = createTestApp({
    sql: db.sql,
    env: { FETCH_ALLOW_LOOPBACK: 'true', RATE_LIMIT_ADMIN_PER_MINUTE: '100000', RATE_LIMIT_PUBLIC_PER_MINUTE: '100000', LOG_LEVEL: 'silent' },
    deps: {
      sources: [SourceSchema.parse({ name: 'crash', index_urls: [`${base}/index.html`] })],
      resolveHost: resolveHostNode,
      sleep: async () => {},
      onJobTransition: async (e) => {
        if (e.status === 'tokenizing') {
          const [row] = await db
            .sql`select r.pdf_source from public.ingestion_jobs j join public.curriculum_references r on r.id = j.reference_id where j.id = ${e.job_id}`
          downloaded.set(`${e.job_id}:${e.attempt}`, current.get(new URL(row!.pdf_source as string).pathname)!)
        }
        if (freeze && freeze.job === e.job_id && freeze.status === e.status) {
          const f = freeze
          freeze = null
          f.reached()
          await f.gate
        }
      },
    },
  })
  admin = bearer((await createUser(db.sql, { role: 'admin' })).token)
})
afterAll(async () => {
  server?.closeAllConnections()
  server?.close()
  await db?.close()
})

async function post(path: string): Promise<{ status: number; body: Record<string, any> }> {
  const res = await t.request(path, { method: 'POST', headers: admin })
  return { status: res.status, body: await json(res) }
}

async function newReference(): Promise<{ id: string; path: string }> {
  const path = `/${crypto.randomUUID()}.pdf`
  const url = `${base}${path}`
  const [row] = await db.sql`insert into public.curriculum_references (source, pdf_source, source_url, title, grade, subject, language, status)
    values ('crash', ${url}, ${url}, 'Maths 4AS', '4AS', 'mathematiques', 'fr', 'discovered') returning id`
  return { id: row!.id as string, path }
}

/** Claims the oldest queued job and runs it; its outcome, and which version it published if it did. */
async function runNext(): Promise<{ outcome: JobOutcome; version: string | undefined } | null> {
  const job = await claimNextJob(t.deps)
  if (!job) return null
  const outcome = await processJob(t.deps, job, `run-${job.id}`)
  return { outcome, version: downloaded.get(`${job.id}:${job.attempt}`) }
}

/** Runs one job and stops it dead at `status` ("kill -9"): the run never goes on unless released. */
async function runAndStop(status: string): Promise<{ jobId: string; release: () => Promise<{ outcome: JobOutcome; version: string | undefined }> }> {
  const job = (await claimNextJob(t.deps))!
  let reached!: () => void
  let open!: () => void
  const atState = new Promise<void>((r) => (reached = r))
  freeze = { job: job.id, status, reached, gate: new Promise<void>((r) => (open = r)) }
  const run = processJob(t.deps, job, `zombie-${job.id}`)
  await atState
  return {
    jobId: job.id,
    release: async () => {
      open()
      return { outcome: await run, version: downloaded.get(`${job.id}:${job.attempt}`) }
    },
  }
}

/**
 * References, documents and jobs in step, and the catalogue showing `served` (the version of the last
 * run that completed) or nothing.
 */
async function expectInStep(refId: string, served: string | null, context: string) {
  const jobs = await db.sql`select id, status from public.ingestion_jobs where reference_id = ${refId} order by seq`
  const [ref] = await db.sql`select status from public.curriculum_references where id = ${refId}`
  const docs = await db.sql`select id, status, chunk_count, vectordb_vector_count from public.documents where reference_id = ${refId}`
  const at = `${context}: ${JSON.stringify({ jobs, ref, docs, served })}`
  expect(docs.length, at).toBeLessThanOrEqual(1)
  const active = jobs.filter((j) => j.status !== 'ready' && j.status !== 'failed')
  expect(active.length, at).toBeLessThanOrEqual(1)
  const newest = jobs.at(-1)
  if (active.length === 1) expect(active[0]!.id, at).toBe(newest!.id)
  // nothing staged but by a job that is running
  const [staged] = await db.sql`select count(*)::int as n from public.ingestion_staging s join public.ingestion_jobs j on j.id = s.job_id
                                 where j.reference_id = ${refId} and j.status in ('queued', 'ready', 'failed')`
  expect(staged!.n, at).toBe(0)
  const doc = docs[0]
  const textbooks = await json(await t.request('/curriculum/textbooks?grade=4AS&subject=mathematiques'))
  const listed = textbooks.textbooks.some((b: { id: string }) => b.id === doc?.id)
  if (served) {
    expect(doc?.status, at).toBe('ready')
    const chunks = await db.sql`select content from public.document_chunks where file_id = ${doc!.id} order by page_number, chunk_index`
    const [vectors] = await db.sql`select count(*)::int as n from public.vectors where file_id = ${doc!.id}`
    expect(chunks.length, at).toBeGreaterThan(0)
    expect(chunks.length, at).toBe(doc!.chunk_count)
    expect(vectors!.n, at).toBe(chunks.length)
    for (const c of chunks) expect(c.content, at).toContain(`Version ${served},`)
    expect(listed, at).toBe(true)
    expect(ref!.status, at).toBe(active.length ? 'processing' : 'ready')
  } else {
    expect(listed, at).toBe(false)
    if (doc) {
      const [n] = await db
        .sql`select (select count(*) from public.document_chunks where file_id = ${doc.id})::int + (select count(*) from public.vectors where file_id = ${doc.id})::int as n`
      expect(n!.n, at).toBe(0)
      expect(doc.status, at).toBe(active.length ? 'processing' : 'failed')
    }
    expect(ref!.status, at).toBe(active.length ? 'processing' : newest ? 'failed' : 'discovered')
  }
}

type Action = 'reclaim' | 'requeue' | 'force' | 'resume'
interface Scenario {
  state: 'queued' | 'parsing' | 'tokenizing' | 'embedding_request_sent'
  reingest: boolean
  order: Action[]
}

async function runScenario(s: Scenario) {
  const ref = await newReference()
  const label = JSON.stringify(s)
  let served: string | null = null
  let version = 1
  const publish = (r: { outcome: JobOutcome; version: string | undefined } | null) => {
    if (r?.outcome.status === 'ready') served = r.version!
  }
  if (s.reingest) {
    current.set(ref.path, `${ref.id}-v${version}`)
    expect((await post(`/admin/ingest/${ref.id}`)).status).toBe(202)
    publish(await runNext())
    expect(served, label).not.toBeNull()
  }
  current.set(ref.path, `${ref.id}-v${++version}`)
  expect((await post(`/admin/ingest/${ref.id}${s.reingest ? '?force=true' : ''}`)).status, label).toBe(202)
  const zombie = s.state === 'queued' ? null : await runAndStop(s.state)
  await expectInStep(ref.id, served, `${label} stopped`)

  for (const action of s.order) {
    if (action === 'reclaim') {
      await db.sql`select public.reclaim_stale_jobs(0)`
    } else if (action === 'requeue') {
      const [newest] = await db.sql`select id, status from public.ingestion_jobs where reference_id = ${ref.id} order by seq desc limit 1`
      const r = await post(`/admin/jobs/${newest!.id}/requeue`)
      expect(r.status, `${label} requeue ${JSON.stringify(r.body)}`).toBe(newest!.status === 'failed' ? 200 : 409)
      // a job that a forced re-ingestion superseded cannot come back
      const [older] = await db.sql`select id from public.ingestion_jobs where reference_id = ${ref.id} and status = 'failed' and id <> ${newest!.id} limit 1`
      if (older) expect((await post(`/admin/jobs/${older.id}/requeue`)).status, label).toBe(409)
    } else if (action === 'force') {
      current.set(ref.path, `${ref.id}-v${++version}`)
      expect((await post(`/admin/ingest/${ref.id}?force=true`)).status, label).toBe(202)
    } else if (zombie) {
      const r = await zombie.release()
      expect(['ready', 'failed', 'superseded'], label).toContain(r.outcome.status)
      publish(r)
    }
    await expectInStep(ref.id, served, `${label} after ${action}`)
  }
  if (zombie && !s.order.includes('resume')) publish(await zombie.release())

  // the operator finishes: whatever is queued runs; a failed newest job is requeued once and runs
  for (let r = await runNext(); r; r = await runNext()) publish(r)
  const [newest] = await db.sql`select id, status from public.ingestion_jobs where reference_id = ${ref.id} order by seq desc limit 1`
  if (newest!.status === 'failed') {
    expect((await post(`/admin/jobs/${newest!.id}/requeue`)).status, label).toBe(200)
    publish(await runNext())
  }
  await expectInStep(ref.id, served, `${label} finished`)
  // the last version asked for is the one served
  expect(served, label).toBe(`${ref.id}-v${version}`)
}

const STATES = ['queued', 'parsing', 'tokenizing', 'embedding_request_sent'] as const
const permutations = <T>(
  xs: T[],
): T[][] => (xs.length <= 1 ? [xs] : xs.flatMap((x, i) => permutations([...xs.slice(0, i), ...xs.slice(i + 1)]).map((p) => [x, ...p])))

describe('a run stopped dead at each job state, then reclaim, requeue and force in every order', () => {
  for (const state of STATES) {
    for (const reingest of [false, true]) {
      it(`${reingest ? 're-ingestion of a served document' : 'first ingestion'}, stopped in ${state}`, async () => {
        for (const order of permutations<Action>(['reclaim', 'requeue', 'force'])) await runScenario({ state, reingest, order: [...order, 'resume'] })
      }, 120_000)
    }
  }

  it('and with the stopped run waking up at any point', async () => {
    const scenario = fc.record({
      state: fc.constantFrom(...STATES),
      reingest: fc.boolean(),
      order: fc.shuffledSubarray<Action>(['reclaim', 'requeue', 'force', 'resume'], { minLength: 1 }),
    })
    await fc.assert(fc.asyncProperty(scenario, runScenario), { numRuns: 24 })
  }, 240_000)
})

describe('a worker process killed with SIGKILL during a re-ingestion', () => {
  it('leaves the previous version served; the next worker reclaims it, and after a requeue publishes the new one', async () => {
    const ref = await newReference()
    current.set(ref.path, `${ref.id}-v1`)
    expect((await post(`/admin/ingest/${ref.id}`)).status).toBe(202)
    const first = await runNext()
    expect(first?.outcome.status).toBe('ready')
    await expectInStep(ref.id, `${ref.id}-v1`, 'first version')

    current.set(ref.path, `${ref.id}-v2`)
    expect((await post(`/admin/ingest/${ref.id}?force=true`)).status).toBe(202)
    let release!: () => void
    hold = new Promise<void>((r) => (release = r))
    const env = {
      PATH: process.env.PATH ?? '',
      DATABASE_URL: db.url,
      FETCH_ALLOW_LOOPBACK: 'true',
      FETCH_ALLOWED_HOSTS: new URL(base).host,
      SCRAPER_SOURCES_FILE: 'none.json',
      LOG_LEVEL: 'warn',
      JOB_STALE_SECONDS: '1',
    }
    const worker = spawn(`${root}node_modules/.bin/node`, ['scripts/worker.ts'], { cwd: root, env, stdio: 'ignore' })
    try {
      // the worker claims the job and waits on the download: kill -9
      for (;;) {
        const [job] = await db.sql`select status from public.ingestion_jobs where reference_id = ${ref.id} order by seq desc limit 1`
        if (job!.status === 'parsing') break
        await new Promise((r) => setTimeout(r, 20))
      }
      worker.kill('SIGKILL')
      await new Promise((r) => worker.once('exit', r))
    } finally {
      worker.kill('SIGKILL')
      release()
      hold = null
    }
    await expectInStep(ref.id, `${ref.id}-v1`, 'killed')
    // the next worker reclaims the dead run (no progress for more than JOB_STALE_SECONDS) and finds no work
    await db.sql`update public.ingestion_jobs set locked_at = locked_at - interval '5 seconds' where reference_id = ${ref.id} and status = 'parsing'`
    const again = spawn(`${root}node_modules/.bin/node`, ['scripts/worker.ts', '--once'], { cwd: root, env, stdio: 'ignore' })
    expect(await new Promise((r) => again.once('exit', r))).toBe(0)
    const [reclaimed] = await db.sql`select id, status, error_message from public.ingestion_jobs where reference_id = ${ref.id} order by seq desc limit 1`
    expect(reclaimed).toMatchObject({ status: 'failed', error_message: expect.stringMatching(/worker stopped responding/) })
    await expectInStep(ref.id, `${ref.id}-v1`, 'reclaimed')
    expect((await post(`/admin/jobs/${reclaimed!.id}/requeue`)).status).toBe(200)
    const last = spawn(`${root}node_modules/.bin/node`, ['scripts/worker.ts', '--once'], { cwd: root, env, stdio: 'ignore' })
    expect(await new Promise((r) => last.once('exit', r))).toBe(0)
    await expectInStep(ref.id, `${ref.id}-v2`, 'requeued and run')
  }, 120_000)
})
