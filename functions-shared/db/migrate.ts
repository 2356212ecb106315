// Applies the platform shim (only where the database has no auth schema, i.e. never on Supabase), its
// later additions (idempotent, on every local database: one whose auth schema has no GoTrue migration
// table), then supabase/migrations/*.sql in order, once each, recorded as the Supabase CLI records them.
// A database that records a migration the directory does not have is refused, but for one made by the
// chain the baseline replaced (SQUASHED_CHAIN), which is re-recorded as the baseline.
import type { Sql } from './client.ts'

export interface Migration {
  version: string
  name: string
  sql: string
}

export interface MigrateResult {
  shimApplied: boolean
  applied: string[]
  /** the baseline, recorded in place of the chain it replaced (a database made by that chain) */
  rerecorded?: string[]
}

/**
 * The chain of 35 migrations that the baseline (one migration per concern) replaced before anything was
 * deployed. scripts/schema-compare.sh proves, in CI, that both make the same database, so a database
 * that records exactly this chain is the baseline's and is recorded as such.
 */
export const SQUASHED_CHAIN = {
  versions: `
    20261122000100 20261122000200 20261122000300 20261122000400 20261122000500 20261122000600 20261122000700 20261122000800
    20261122000900 20261123000100 20261123000200 20261123000300 20261123000400 20261123000500 20261123000600 20261123000700
    20261123000800 20261123000900 20261123001000 20261124000100 20261124000200 20261124000300 20261124000400 20261125000100
    20261126000100 20261127000100 20261128000100 20261129000100 20261130000100 20261130000200 20261130000300 20261130000400
    20261130000500 20261130000600 20261130000700`.trim().split(/\s+/),
  baseline: ['20261101000100', '20261101000200', '20261101000300', '20261101000400', '20261101000500', '20261101000600', '20261101000700'],
}

/** `<version>_<name>.sql` as the Supabase CLI names migrations. */
export function parseMigrationFile(file: string, sql: string): Migration {
  const match = /^(\d+)_(.+)\.sql$/.exec(file)
  if (!match) throw new Error(`migration file name must be <version>_<name>.sql: ${file}`)
  return { version: match[1]!, name: match[2]!, sql }
}

/** A database whose recorded migrations this directory cannot continue. */
export class MigrationHistoryError extends Error {
  override name = 'MigrationHistoryError'
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
    const recorded = await tx<{ version: string; name: string | null }[]>`select version, name from supabase_migrations.schema_migrations`
    const done = new Set(recorded.map((r) => r.version))
    const present = new Set(sorted.map((m) => m.version))
    const missing = recorded.filter((r) => !present.has(r.version)).sort((a, b) => a.version.localeCompare(b.version))
    let rerecorded: string[] | undefined
    if (missing.length > 0) {
      const baseline = sorted.filter((m) => SQUASHED_CHAIN.baseline.includes(m.version))
      const squashed = done.size === SQUASHED_CHAIN.versions.length && SQUASHED_CHAIN.versions.every((v) => done.has(v))
      if (!squashed || baseline.length !== SQUASHED_CHAIN.baseline.length) {
        const names = missing.map((r) => `${r.version}_${r.name ?? ''}`)
        throw new MigrationHistoryError(
          `this database records migrations that supabase/migrations/ does not have (${names.slice(0, 3).join(', ')}${
            names.length > 3 ? `, ... ${names.length} in all` : ''
          }): the migration chain was squashed into one baseline migration per concern, which takes the place of the whole ` +
            `former chain only; start from a fresh database (the embedded one: stop the stack, move its DATA_DIR aside, ` +
            `e.g. mv .data .data.old, and npm start again; a server: an empty database for DATABASE_URL)`,
        )
      }
      // made by the chain the baseline replaced: the same database, recorded as the baseline
      await tx`delete from supabase_migrations.schema_migrations where version = any(${SQUASHED_CHAIN.versions}::text[])`
      for (const m of baseline) {
        await tx`insert into supabase_migrations.schema_migrations (version, name, statements) values (${m.version}, ${m.name}, ${[m.sql]})`
        done.add(m.version)
      }
      rerecorded = baseline.map((m) => `${m.version}_${m.name}`)
    }
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
    return rerecorded ? { shimApplied, applied, rerecorded } : { shimApplied, applied }
  })) as MigrateResult
}
