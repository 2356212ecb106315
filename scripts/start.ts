// `npm start`: the whole local stack in one process. Embedded PGlite unless DATABASE_URL is set; the
// platform shim and migrations applied; every router served under /functions/v1 on PORT.
import { loadConfigOrExit } from './lib/load-config.ts'
import type { Sql } from '../functions-shared/db/client.ts'
import { createLogRoot } from '../functions-shared/lib/logger.ts'
import type { EmbeddedDb } from './lib/embedded-db.ts'
import { FUNCTIONS_BASE, type Gateway } from './lib/gateway.ts'
import { startStack } from './lib/stack.ts'
import { DEMO_PORTAL_BASE } from './lib/demo-portal.ts'
import { exitWithStartupError, safeDbUrl } from './lib/startup-error.ts'

const config = loadConfigOrExit('curriculum-tutor')

const logs = createLogRoot({ level: config.LOG_LEVEL })
const log = logs.get('start')

// Signals first: a Ctrl-C at any moment of the start must still close the database cleanly.
let stopping = false
let gateway: Gateway | undefined
let sql: Sql | undefined
let embedded: EmbeddedDb | undefined
async function closeParts(): Promise<void> {
  await gateway?.close()
  await sql?.end({ timeout: 5 })
  await embedded?.close()
}
async function shutdown(signal: string): Promise<void> {
  if (stopping) return
  stopping = true
  log.info({ signal }, 'shutting down: finishing in-flight requests')
  await closeParts()
  log.info('stopped')
  process.exit(0)
}
process.on('SIGINT', () => void shutdown('SIGINT'))
process.on('SIGTERM', () => void shutdown('SIGTERM'))

const stack = await startStack(config, logs, {
  onPart: (part) => {
    sql = part.sql ?? sql
    embedded = part.embedded ?? embedded
    gateway = part.gateway ?? gateway
  },
}).catch(async (err: unknown) => {
  // one sentence for what an operator can fix (a taken port, an unreachable database, a locked
  // DATA_DIR); whatever was opened is closed, so the data directory is left as it was
  stopping = true
  await closeParts().catch(() => {})
  exitWithStartupError('curriculum-tutor', err)
})
const { databaseUrl } = stack
const demo = stack.gateway.deps.config.FETCH_ALLOW_LOOPBACK && (config.DEMO_PORTAL === 'on' || (config.DEMO_PORTAL === 'auto' && stack.embedded))

process.stdout.write(`
curriculum-tutor is running (${stack.embedded ? 'embedded PGlite database' : 'PostgreSQL server'})

  API URL        ${stack.gateway.url}${FUNCTIONS_BASE}
  Health         ${stack.gateway.url}${FUNCTIONS_BASE}/health
  API reference  ${stack.gateway.url}${FUNCTIONS_BASE}/docs
  Auth URL       ${stack.gateway.deps.config.SUPABASE_URL}/auth/v1${stack.gateway.deps.config.LOCAL_AUTH ? "" : " (external)"}
  Database URL   ${stack.embedded ? databaseUrl : safeDbUrl(databaseUrl)}
  anon key       ${stack.anonKey}
  service_role key ${stack.serviceKey}${demo ? `\n  Demo portal    ${stack.gateway.url}${DEMO_PORTAL_BASE}/programmes/page1.html (scraper source "demo"; try npm run demo)` : ''}

Press Ctrl-C to stop.
`)
