// `npm start`: the whole local stack in one process. Embedded PGlite unless DATABASE_URL is set; the
// platform shim and migrations applied; every router served under /functions/v1 on PORT.
import { jwtSecretGiven, loadConfigOrExit } from './lib/load-config.ts'
import type { Sql } from '../functions-shared/db/client.ts'
import { createLogRoot } from '../functions-shared/lib/logger.ts'
import type { EmbeddedDb } from './lib/embedded-db.ts'
import type { Gateway } from './lib/gateway.ts'
import { startStack } from './lib/stack.ts'
import { DEMO_PORTAL_BASE } from './lib/demo-portal.ts'
import { exitWithStartupError, safeDbUrl } from './lib/startup-error.ts'
import { stackStatus, statusLines } from './lib/status.ts'

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
  folderJwtSecret: !jwtSecretGiven(),
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

const status = await stackStatus(stack.gateway.deps.config, { base: stack.gateway.url, dbUrl: stack.embedded ? databaseUrl : safeDbUrl(databaseUrl) })
const extra: [string, string][] = [
  ['Health', `${status.functions_url}/health`],
  ['API reference', `${status.functions_url}/docs`],
  ...(config.LOCAL_AUTH ? ([['Mail', `${stack.gateway.url}/mail`]] as [string, string][]) : []),
]
if (demo) extra.push(['Demo portal', `${stack.gateway.url}${DEMO_PORTAL_BASE}/programmes/page1.html`])
process.stdout.write(`
curriculum-tutor is running (${stack.embedded ? 'embedded PGlite database' : 'PostgreSQL server'}${
  config.FUNCTIONS_RUNTIME === 'deno' ? ', each function in its own Deno process' : ''
})

${statusLines({ ...status, anon_key: stack.anonKey, service_role_key: stack.serviceKey }, extra)}

An app connects with createClient(API URL, anon key); \`npm run status -- -o env\` prints these as .env lines.${
  demo ? '\nThe demo portal is the scraper source "demo": try npm run demo.' : ''
}
Press Ctrl-C to stop.
`)
