// `npm start`: the whole local stack in one process. Embedded PGlite unless DATABASE_URL is set; the
// platform shim and migrations applied; every router served under /functions/v1 on PORT.
import { resolve } from 'node:path'
import { loadConfigOrExit } from './lib/load-config.ts'
import { createDb, type Sql } from '../functions-shared/db/client.ts'
import { apiKey } from '../functions-shared/lib/keys.ts'
import { createLogRoot } from '../functions-shared/lib/logger.ts'
import { startEmbedded, type EmbeddedDb } from './lib/embedded-db.ts'
import { migrateRepository } from './lib/migrations.ts'
import { FUNCTIONS_BASE, startGateway, type Gateway } from './lib/gateway.ts'

const config = loadConfigOrExit('curriculum-tutor')

const logs = createLogRoot({ level: config.LOG_LEVEL })
const log = logs.get('start')

// Signals first: a Ctrl-C at any moment of the start must still close the database cleanly.
let stopping = false
let gateway: Gateway | undefined
let sql: Sql | undefined
let embedded: EmbeddedDb | undefined
async function shutdown(signal: string): Promise<void> {
  if (stopping) return
  stopping = true
  log.info({ signal }, 'shutting down: finishing in-flight requests')
  await gateway?.close()
  await sql?.end({ timeout: 5 })
  await embedded?.close()
  log.info('stopped')
  process.exit(0)
}
process.on('SIGINT', () => void shutdown('SIGINT'))
process.on('SIGTERM', () => void shutdown('SIGTERM'))

let databaseUrl = config.DATABASE_URL
if (!databaseUrl) {
  embedded = await startEmbedded({ dataDir: resolve(config.DATA_DIR), port: config.DB_PORT })
  databaseUrl = embedded.url
}
sql = createDb(databaseUrl, {
  max: embedded ? 1 : config.DB_POOL_MAX,
  prepare: config.DB_PREPARE,
  statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS,
})

const migrated = await migrateRepository(sql)
log.info({ shim_applied: migrated.shimApplied, applied: migrated.applied }, 'database migrated')

const [anonKey, serviceKey] = await Promise.all([apiKey(config.JWT_SECRET, 'anon'), apiKey(config.JWT_SECRET, 'service_role')])
gateway = await startGateway({ config, sql, deps: { logs } })

const safeDbUrl = databaseUrl.replace(/\/\/([^:@/]+):[^@/]+@/, '//$1:***@')
process.stdout.write(`
curriculum-tutor is running (${embedded ? 'embedded PGlite database' : 'PostgreSQL server'})

  API URL        ${gateway.url}${FUNCTIONS_BASE}
  Health         ${gateway.url}${FUNCTIONS_BASE}/health
  API reference  ${gateway.url}${FUNCTIONS_BASE}/docs
  Auth URL       ${gateway.deps.config.SUPABASE_URL}/auth/v1${gateway.deps.config.LOCAL_AUTH ? "" : " (external)"}
  Database URL   ${embedded ? databaseUrl : safeDbUrl}
  anon key       ${config.SUPABASE_ANON_KEY ?? anonKey}
  service_role key ${config.SUPABASE_SERVICE_ROLE_KEY ?? serviceKey}

Press Ctrl-C to stop.
`)

