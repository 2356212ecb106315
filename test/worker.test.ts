// `npm run worker -- --once` as a process: it takes the queued jobs and runs them to ready, then stops.
import { spawn } from 'node:child_process'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { startPortal, type Portal } from './helpers/portal.ts'

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

describe('the worker', () => {
  it('runs every queued job and exits when the queue is empty', async () => {
    const pdf = `${portal.url}/fichiers/5AS/physique/ondes.pdf`
    const [ref] = await db.sql`insert into public.curriculum_references (source, pdf_source, source_url, title, grade, subject, language)
      values ('elsewhere', ${pdf}, ${pdf}, 'Ondes', '5AS', 'physique', 'fr') returning id`
    const [job] = await db.sql`select id from public.request_ingestion(${ref!.id})`
    const child = spawn(`${root}node_modules/.bin/node`, ['scripts/worker.ts', '--once'], {
      cwd: root,
      env: { PATH: process.env.PATH ?? '', DATABASE_URL: db.url, FETCH_ALLOW_LOOPBACK: 'true', LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    child.stdout.on('data', (d) => (output += d))
    child.stderr.on('data', (d) => (output += d))
    const code = await new Promise((resolve) => child.once('exit', resolve))
    expect(code, output).toBe(0)
    expect(output).toContain('"message":"queue empty"')
    expect(output).toContain('"processed":1')
    const [row] = await db.sql`select status, chunks_created from public.ingestion_jobs where id = ${job!.id}`
    expect(row!.status).toBe('ready')
    expect(row!.chunks_created).toBeGreaterThan(0)
  }, 60_000)
})
