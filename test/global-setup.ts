// Migrates one template database for the whole run. Each test file then gets its own copy: a PGlite
// data-dir dump loaded into a fresh instance, or `create database ... template` on a server.
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestProject } from 'vitest/node'
import { pgtap } from '@electric-sql/pglite-pgtap'
import { createDb } from '../functions-shared/db/client.ts'
import { startEmbedded } from '../scripts/lib/embedded-db.ts'
import { migrateRepository } from '../scripts/lib/migrations.ts'

declare module 'vitest' {
  export interface ProvidedContext {
    /** PGlite: path of the migrated data-dir dump */
    pgliteDump: string | null
    /** server: name of the migrated template database */
    templateDatabase: string | null
  }
}

export default async function setup(project: TestProject) {
  const serverUrl = process.env.TEST_DATABASE_URL
  if (serverUrl) {
    // one template per project (unit, e2e): their setups run side by side in this process
    const template = `ct_template_${process.pid}_${project.name.replace(/[^a-z0-9]/gi, '_')}`
    const admin = createDb(serverUrl, { max: 1, prepare: false })
    await admin.unsafe(`drop database if exists ${template}`)
    await admin.unsafe(`create database ${template}`)
    const url = new URL(serverUrl)
    url.pathname = `/${template}`
    const sql = createDb(url.toString(), { max: 1, prepare: false })
    await sql.unsafe('create extension if not exists pgtap')
    await migrateRepository(sql)
    await sql.end()
    project.provide('templateDatabase', template)
    project.provide('pgliteDump', null)
    return async () => {
      // drop the template and any copy a crashed file left behind
      const left = await admin`select datname from pg_database where datname like ${`${template}\\_%`} or datname = ${template}`
      for (const { datname } of left) await admin.unsafe(`drop database if exists ${datname} with (force)`)
      await admin.end()
    }
  }
  const dir = await mkdtemp(join(tmpdir(), 'ct-test-'))
  const embedded = await startEmbedded({ port: 0, extensions: { pgtap } })
  const sql = createDb(embedded.url, { max: 1, prepare: true })
  await migrateRepository(sql)
  await sql.end()
  const dump = await embedded.db.dumpDataDir('none')
  await embedded.close()
  const file = join(dir, 'migrated.tar')
  await writeFile(file, new Uint8Array(await dump.arrayBuffer()))
  project.provide('pgliteDump', file)
  project.provide('templateDatabase', null)
  return async () => {
    await rm(dir, { recursive: true, force: true })
  }
}
