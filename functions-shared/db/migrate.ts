// Applies the platform shim (only where the database has no auth schema, i.e. never on Supabase), its
// later additions (idempotent, on every local database: one whose auth schema has no GoTrue migration
// table), then supabase/migrations/*.sql in order, once each, recorded as the Supabase CLI records them.
import type { Sql } from './client.ts'

export interface Migration {
  version: string
  name: string
  sql: string
}

export interface MigrateResult {
  shimApplied: boolean
  applied: string[]
}

/** `<version>_<name>.sql` as the Supabase CLI names migrations. */
export function parseMigrationFile(file: string, sql: string): Migration {
  const match = /^(\d+)_(.+)\.sql$/.exec(file)
  if (!match) throw new Error(`migration file name must be <version>_<name>.sql: ${file}`)
  return { version: match[1]!, name: match[2]!, sql }
}

const LOCK_KEY = 7_315_020_261

export async function migrate(sql: Sql, options: { shim: string; shimAdditions?: string[]; migrations: Migration[] }): Promise<MigrateResult> {
  const sorted = [...options.migrations].sort((a, b) => a.version.localeCompare(b.version))
  return (await sql.begin(async (tx) => {
    // one migrator at a time, even when several instances start together
    await tx`select pg_advisory_xact_lock(${LOCK_KEY})`
    const [{ has_auth }] = await tx<[{ has_auth: boolean }]>`select to_regnamespace('auth') is not null as has_auth`
    let shimApplied = false
    if (!has_auth) {
      await tx.unsafe(options.shim)
      shimApplied = true
    }
    const [{ local }] = await tx<[{ local: boolean }]>`select to_regclass('auth.schema_migrations') is null as local`
    if (local) { for (const addition of options.shimAdditions ?? []) await tx.unsafe(addition) }
    await tx.unsafe(`
      create schema if not exists supabase_migrations;
      create table if not exists supabase_migrations.schema_migrations (version text not null primary key, statements text[], name text);
    `)
    const done = new Set((await tx<{ version: string }[]>`select version from supabase_migrations.schema_migrations`).map((r) => r.version))
    const applied: string[] = []
    for (const m of sorted) {
      if (done.has(m.version)) continue
      try {
        await tx.unsafe(m.sql)
      } catch (err) {
        throw new Error(`migration ${m.version}_${m.name} failed: ${(err as Error).message}`, { cause: err })
      }
      await tx`insert into supabase_migrations.schema_migrations (version, name, statements) values (${m.version}, ${m.name}, ${[m.sql]})`
      applied.push(`${m.version}_${m.name}`)
    }
    return { shimApplied, applied }
  })) as MigrateResult
}
