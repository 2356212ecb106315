// A throwaway, migrated database for one benchmark run: a new database on the BENCH_DATABASE_URL server
// (dropped at the end), or an in-memory embedded PGlite.
import { createDb, type Sql } from '../../functions-shared/db/client.ts'
import { startEmbedded } from '../../scripts/lib/embedded-db.ts'
import { migrateRepository } from '../../scripts/lib/migrations.ts'

export interface ScratchDb {
  url: string
  kind: 'server' | 'pglite'
  label: string
  /** a migrated client on it */
  sql: Sql
  close(): Promise<void>
}

export async function scratchDatabase(name: string, options: { max?: number } = {}): Promise<ScratchDb> {
  const serverUrl = process.env.BENCH_DATABASE_URL
  let url: string
  let drop: () => Promise<void>
  if (serverUrl) {
    const dbName = `ct_${name}_${process.pid}`
    const admin = createDb(serverUrl, { max: 1, prepare: false })
    await admin.unsafe(`create database ${dbName}`)
    const u = new URL(serverUrl)
    u.pathname = `/${dbName}`
    url = u.toString()
    drop = async () => {
      await admin.unsafe(`drop database if exists ${dbName} with (force)`)
      await admin.end()
    }
  } else {
    const embedded = await startEmbedded({ port: 0 })
    url = embedded.url
    drop = () => embedded.close()
  }
  const sql = createDb(url, { max: serverUrl ? (options.max ?? 1) : 1, prepare: true })
  await migrateRepository(sql)
  return {
    url,
    kind: serverUrl ? 'server' : 'pglite',
    label: serverUrl ? 'PostgreSQL server' : 'embedded PGlite',
    sql,
    async close() {
      await sql.end()
      await drop()
    },
  }
}
