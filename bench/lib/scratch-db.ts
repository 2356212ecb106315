// A throwaway, migrated database for one benchmark run: a new database on the BENCH_DATABASE_URL server
// (dropped at the end), or an in-memory embedded PGlite; and the label of the database a benchmark runs on.
import { readFileSync } from 'node:fs'
import { createDb, type Sql } from '../../functions-shared/db/client.ts'
import { startEmbedded } from '../../scripts/lib/embedded-db.ts'
import { migrateRepository } from '../../scripts/lib/migrations.ts'

export interface ScratchDb {
  url: string
  kind: 'server' | 'pglite'
  /** `embedded PGlite <version> (PostgreSQL <version>)` or `PostgreSQL server <server_version>` */
  label: string
  /** a migrated client on it */
  sql: Sql
  close(): Promise<void>
}

const PGLITE_VERSION = (JSON.parse(
  readFileSync(new URL('../../node_modules/@electric-sql/pglite/package.json', import.meta.url), 'utf8'),
) as { version: string }).version

/** The database `sql` reaches, for a benchmark's machine line: the embedded PGlite's version, or the server's server_version. */
export async function databaseLabel(sql: Sql, kind: 'server' | 'pglite'): Promise<string> {
  const [row] = await sql`show server_version`
  const version = String(row!.server_version)
  return kind === 'server' ? `PostgreSQL server ${version}` : `embedded PGlite ${PGLITE_VERSION} (PostgreSQL ${version})`
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
  const kind = serverUrl ? 'server' : 'pglite'
  return {
    url,
    kind,
    label: await databaseLabel(sql, kind),
    sql,
    async close() {
      await sql.end()
      await drop()
    },
  }
}
