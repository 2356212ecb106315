// Runs supabase/tests/*.sql (pgTAP) on this run's database, PGlite or a server, and checks the TAP.
import { readdirSync, readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'

const dir = new URL('../supabase/tests/', import.meta.url)
const files = readdirSync(dir).filter((f) => f.endsWith('.sql')).sort()

let db: TestDatabase
beforeAll(async () => {
  db = await createTestDatabase()
})
afterAll(async () => db?.close())

/** The TAP lines a file's statements returned, in order. */
function tapLines(results: unknown): string[] {
  const sets = (Array.isArray(results) && Array.isArray(results[0]) ? results : [results]) as Record<string, unknown>[][]
  return sets.flatMap((rows) => rows.flatMap((row) => Object.values(row).filter((v): v is string => typeof v === 'string')).flatMap((v) => v.split('\n')))
}

describe.each(files)('%s', (file) => {
  it('passes every assertion of its plan', async () => {
    // the file manages its own transaction, so it needs a connection of its own
    const conn = await db.sql.reserve()
    let lines: string[]
    try {
      lines = tapLines(await conn.unsafe(readFileSync(new URL(file, dir), 'utf8')))
    } finally {
      conn.release()
    }
    const plan = lines.find((l) => /^1\.\.\d+$/.test(l))
    expect(plan, lines.join('\n')).toBeDefined()
    const planned = Number(plan!.slice(3))
    const results = lines.filter((l) => /^(not )?ok \d+/.test(l))
    const failures = results.filter((l) => l.startsWith('not ok'))
    expect(failures, lines.join('\n')).toEqual([])
    expect(results).toHaveLength(planned)
  })
})
