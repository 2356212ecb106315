// `npm run worker -- --once` as a process: it takes the queued jobs and runs them to ready, then stops.
import { spawn } from 'node:child_process'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { type Portal, startPortal } from './helpers/portal.ts'

const root = new URL('..', import.meta.url).pathname
let db: TestDatabase
let portal: Portal
beforeAll(async () => {
  db = await createTestDatabase()
  portal = await startPortal()
})
afterAll(async () => {
  await portal?.close()
  await db?.close()
})

async function runWorker(env: Record<string, string> = {}) {
  const child = spawn(`${root}node_modules/.bin/node`, ['scripts/worker.ts', '--once'], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', DATABASE_URL: db.url, FETCH_ALLOW_LOOPBACK: 'true', LOG_LEVEL: 'info', SCRAPER_SOURCES_FILE: 'none.json', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout.on('data', (d) => (output += d))
  child.stderr.on('data', (d) => (output += d))
  const code = await new Promise((resolve) => child.once('exit', resolve))
  return { code, output }
}

describe('the worker', () => {
  it('runs every queued job and exits when the queue is empty; a reference of an unknown source reaches only FETCH_ALLOWED_HOSTS', async () => {
    const pdf = `${portal.url}/fichiers/5AS/physique/ondes.pdf`
    const [ref] = await db.sql`insert into public.curriculum_references (source, pdf_source, source_url, title, grade, subject, language)
      values ('elsewhere', ${pdf}, ${pdf}, 'Ondes', '5AS', 'physique', 'fr') returning id`
    const [job] = await db.sql`select id from public.request_ingestion(${ref!.id})`

    // its source is not configured: refused, with the reason in the audit, and the portal never asked
    const refused = await runWorker()
    expect(refused.code, refused.output).toBe(0)
    const [failed] = await db.sql`select status, error_message from public.ingestion_jobs where id = ${job!.id}`
    expect(failed).toEqual({
      status: 'failed',
      error_message: 'download refused: the source "elsewhere" of this reference is not configured, and FETCH_ALLOWED_HOSTS allows no host',
    })
    const [audit] = await db.sql`select error_message from public.ingestion_audit where job_id = ${job!.id} and to_status = 'failed'`
    expect(audit!.error_message).toMatch(/download refused/)
    expect(portal.hits.get('/fichiers/5AS/physique/ondes.pdf') ?? 0).toBe(0)

    // the global allowlist lets it through (its port included)
    await db.sql`select public.transition_job(${job!.id}, 'queued')`
    const { code, output } = await runWorker({ FETCH_ALLOWED_HOSTS: `example.invalid, ${new URL(portal.url).host}` })
    expect(code, output).toBe(0)
    expect(output).toContain('"message":"queue empty"')
    expect(output).toContain('"processed":1')
    const [row] = await db.sql`select status, chunks_created from public.ingestion_jobs where id = ${job!.id}`
    expect(row!.status).toBe('ready')
    expect(row!.chunks_created).toBeGreaterThan(0)
  }, 60_000)
})
