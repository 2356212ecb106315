// Reads the platform shim and supabase/migrations/*.sql from the repository (Node).
import { readdir, readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { parseMigrationFile, migrate, type Migration, type MigrateResult } from '../../functions-shared/db/migrate.ts'
import type { Sql } from '../../functions-shared/db/client.ts'

export const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const MIGRATIONS_DIR = new URL('../../supabase/migrations/', import.meta.url)
const SHIM = new URL('../../supabase/local/platform-shim.sql', import.meta.url)

export async function loadMigrations(): Promise<{ shim: string; migrations: Migration[] }> {
  const files = (await readdir(MIGRATIONS_DIR)).filter((f) => f.endsWith('.sql')).sort()
  const migrations = await Promise.all(files.map(async (f) => parseMigrationFile(f, await readFile(new URL(f, MIGRATIONS_DIR), 'utf8'))))
  return { shim: await readFile(SHIM, 'utf8'), migrations }
}

export async function migrateRepository(sql: Sql): Promise<MigrateResult> {
  return migrate(sql, await loadMigrations())
}
