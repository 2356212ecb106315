// A database connection that the server closes under a client holding it: what is sent on it fails with
// CONNECTION_CLOSED, and the process goes on. postgres.js 3.4.9 threw a TypeError from a timer there
// (porsager/postgres#1154, #1208), which no caller can catch and which ended the whole process; the guard
// is patches/postgres+3.4.9.patch, applied by patch-package on install. The server ends the session itself
// (idle_session_timeout), which only a PostgreSQL server does: on PGlite this file does not run.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import postgres from 'postgres'

const server = Boolean(process.env.TEST_DATABASE_URL)
let db: TestDatabase

beforeAll(async () => {
  if (server) db = await createTestDatabase()
})
afterAll(async () => {
  await db?.close()
})

describe.runIf(server)('a connection the server closes under its client', () => {
  it('fails the next query on it with CONNECTION_CLOSED instead of ending the process, and the pool serves the next one', async () => {
    let noticed = () => {}
    const closed = new Promise<void>((resolve) => (noticed = resolve))
    // onclose: the client has seen the server end the connection
    const sql = postgres(db.url, { max: 2, prepare: true, onnotice: () => {}, onclose: () => noticed() })
    const uncaught: unknown[] = []
    const onUncaught = (err: unknown) => uncaught.push(err)
    process.on('uncaughtException', onUncaught)
    try {
      const reserved = await sql.reserve()
      const [{ pid }] = await reserved<[{ pid: number }]>`select pg_backend_pid() as pid`
      await reserved`set idle_session_timeout = 50`
      // the server ends the idle session; the query is sent once the client has seen it closed
      await closed
      expect((await db.sql`select count(*)::int as n from pg_stat_activity where pid = ${pid}`)[0]!.n).toBe(0)
      const outcome = await reserved`select ${'x'.repeat(2000)} as big`.then(() => 'fulfilled', (err: { code?: string }) => err.code)
      expect(outcome).toBe('CONNECTION_CLOSED')
      await new Promise((resolve) => setImmediate(resolve))
      expect(uncaught).toEqual([])
      expect((await sql`select 2 as two`)[0]).toEqual({ two: 2 })
    } finally {
      process.off('uncaughtException', onUncaught)
      await sql.end({ timeout: 1 })
    }
  })
})
