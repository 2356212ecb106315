// Job claiming under concurrency: dispatchers and workers racing never take the same job.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'

let db: TestDatabase
beforeAll(async () => {
  db = await createTestDatabase()
})
afterAll(async () => db?.close())

describe('claim_next_job', () => {
  it('gives 8 racing claimers 8 different jobs, oldest first, and null once the queue is empty', async () => {
    const refs = Array.from(
      { length: 6 },
      (_, i) => ({ source: 'race', pdf_source: `http://p.test/${i}.pdf`, source_url: `http://p.test/${i}.pdf`, grade: '4AS', subject: 'math', language: 'fr' }),
    )
    const inserted = await db.sql`insert into public.curriculum_references ${db.sql(refs)} returning id`
    const jobs: string[] = []
    for (const r of inserted) jobs.push((await db.sql`select id from public.request_ingestion(${r.id})`)[0]!.id as string)
    const pool = db.connect(8)
    const claims = await Promise.all(Array.from({ length: 8 }, () => pool`select id, status, attempt from public.claim_next_job()`))
    const ids = claims.map((rows) => rows[0]!.id as string | null)
    const taken = ids.filter((x): x is string => x !== null)
    expect(new Set(taken).size).toBe(6)
    expect(taken.sort()).toEqual([...jobs].sort())
    expect(ids.filter((x) => x === null)).toHaveLength(2)
    // one at a time, the order is creation order
    await db.sql`update public.ingestion_jobs set status = 'queued', attempt = 0 where id = any(${jobs})`
    const inOrder: string[] = []
    for (let i = 0; i < jobs.length; i++) inOrder.push((await db.sql`select id from public.claim_next_job()`)[0]!.id as string)
    expect(inOrder).toEqual(jobs)
  })
})
