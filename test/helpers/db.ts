// A freshly migrated database for one test file: PGlite by default, the TEST_DATABASE_URL server when set.
import { readFile } from 'node:fs/promises'
import { inject } from 'vitest'
import { pgtap } from '@electric-sql/pglite-pgtap'
import { createDb, type Sql } from '../../functions-shared/db/client.ts'
import { startEmbedded } from '../../scripts/lib/embedded-db.ts'

export interface TestDatabase {
  sql: Sql
  url: string
  kind: 'pglite' | 'server'
  /** another client on the same database: a pool on a server (real concurrency); on PGlite the one connection */
  connect(max?: number): Sql
  close(): Promise<void>
}

let counter = 0

export async function createTestDatabase(options: { poolMax?: number } = {}): Promise<TestDatabase> {
  const template = inject('templateDatabase')
  const serverUrl = process.env.TEST_DATABASE_URL
  const extra: Sql[] = []
  if (template && serverUrl) {
    // named after the template, so the run's teardown finds copies a crashed file left behind
    const name = `${template}_${process.pid}_${Date.now().toString(36)}_${counter++}`
    const admin = createDb(serverUrl, { max: 1, prepare: false })
    await admin.unsafe(`create database ${name} template ${template}`)
    const url = new URL(serverUrl)
    url.pathname = `/${name}`
    const connect = (max = 4) => {
      const sql = createDb(url.toString(), { max, prepare: true })
      extra.push(sql)
      return sql
    }
    const sql = connect(options.poolMax ?? 4)
    return {
      sql,
      url: url.toString(),
      kind: 'server',
      connect,
      async close() {
        await Promise.all(extra.map((s) => s.end({ timeout: 5 })))
        await admin.unsafe(`drop database if exists ${name} with (force)`)
        await admin.end()
      },
    }
  }
  const dumpPath = inject('pgliteDump')
  if (!dumpPath) throw new Error('global setup provided no database')
  const dump = new Blob([new Uint8Array(await readFile(dumpPath))])
  // room for a gateway's Deno function processes, each a client of its own
  const embedded = await startEmbedded({ loadDataDir: dump, port: 0, extensions: { pgtap }, maxConnections: 24 })
  // PGlite is one connection: further clients share it (queries queue; concurrency is proven on a server)
  const sql = createDb(embedded.url, { max: 1, prepare: true })
  extra.push(sql)
  const connect = () => sql
  return {
    sql,
    url: embedded.url,
    kind: 'pglite',
    connect,
    async close() {
      await Promise.all(extra.map((s) => s.end({ timeout: 5 })))
      await embedded.close()
    },
  }
}
