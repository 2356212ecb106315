// Reads the platform shim and supabase/migrations/*.sql from the repository (Node).
import { readdir, readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { migrate, type MigrateResult, type Migration, parseMigrationFile } from '../../functions-shared/db/migrate.ts'
import type { Sql } from '../../functions-shared/db/client.ts'

export const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const MIGRATIONS_DIR = new URL('../../supabase/migrations/', import.meta.url)
const LOCAL_DIR = new URL('../../supabase/local/', import.meta.url)
const SHIM = 'platform-shim.sql'

/** The platform shim, its later additions (`platform-shim-*.sql`, in name order) and the migrations. */
export async function loadMigrations(): Promise<{ shim: string; shimAdditions: string[]; migrations: Migration[] }> {
  const files = (await readdir(MIGRATIONS_DIR)).filter((f) => f.endsWith('.sql')).sort()
  const migrations = await Promise.all(files.map(async (f) => parseMigrationFile(f, await readFile(new URL(f, MIGRATIONS_DIR), 'utf8'))))
  const additions = (await readdir(LOCAL_DIR)).filter((f) => f.startsWith('platform-shim-') && f.endsWith('.sql')).sort()
  const shimAdditions = await Promise.all(additions.map((f) => readFile(new URL(f, LOCAL_DIR), 'utf8')))
  return { shim: await readFile(new URL(SHIM, LOCAL_DIR), 'utf8'), shimAdditions, migrations }
}

export async function migrateRepository(sql: Sql): Promise<MigrateResult> {
  return migrate(sql, await loadMigrations())
}
