// The whole local stack in one process: the embedded PGlite (unless DATABASE_URL is set), the platform
// shim and migrations, and the gateway on PORT. Used by `npm start` and by `npm run demo` when no stack
// is running.
import { probePostgres } from './pg-probe.ts'
import { createServer } from 'node:net'
import { resolve } from 'node:path'
import { type Config, LOCAL_JWT_SECRET } from '../../functions-shared/config.ts'
import { createDb, type Sql } from '../../functions-shared/db/client.ts'
import { apiKey } from '../../functions-shared/lib/keys.ts'
import type { LogRoot } from '../../functions-shared/lib/logger.ts'
import { type EmbeddedDb, startEmbedded } from './embedded-db.ts'
import { migrateRepository } from './migrations.ts'
import { MigrationHistoryError } from '../../functions-shared/db/migrate.ts'
import { type Gateway, startGateway } from './gateway.ts'
import { portProblem, StartupError, unreachableDatabase } from './startup-error.ts'
import { isLoopback } from '../../local-platform/auth/redirects.ts'
import { folderJwtSecret } from './jwt-secret.ts'

export interface Stack {
  gateway: Gateway
  embedded: boolean
  databaseUrl: string
  anonKey: string
  serviceKey: string
  close(): Promise<void>
}

/** Fails (as the listen would) when the port is taken; 0 is always free. */
async function portFree(host: string, port: number): Promise<void> {
  if (port === 0) return
  await new Promise<void>((resolve, reject) => {
    const probe = createServer()
    probe.once('error', reject)
    probe.listen(port, host, () => probe.close(() => resolve()))
  })
}

/**
 * `folderJwtSecret`: the settings name no JWT_SECRET (`npm start`, `npm run demo` without one), so the
 * stack signs with its data folder's secret, made on its first start (jwt-secret.ts), not the published
 * default; tests that start a stack in process keep the secret of their config.
 */
export async function startStack(
  config: Config,
  logs: LogRoot,
  hooks: { onPart?: (part: { sql?: Sql; embedded?: EmbeddedDb; gateway?: Gateway }) => void; folderJwtSecret?: boolean } = {},
): Promise<Stack> {
  const log = logs.get('start')
  // the default JWT_SECRET is published (the Supabase CLI's): on an interface other machines reach,
  // anyone could sign a service-role or admin token with it
  if (!hooks.folderJwtSecret && config.JWT_SECRET === LOCAL_JWT_SECRET && config.HOST !== 'localhost' && !isLoopback(config.HOST)) {
    throw new StartupError(
      `JWT_SECRET is the published local-development secret, and HOST=${config.HOST} lets other machines reach the gateway: set JWT_SECRET to a secret of your own (32 characters or more), or HOST=127.0.0.1`,
    )
  }
  let embedded: EmbeddedDb | undefined
  let databaseUrl = config.DATABASE_URL
  // the ports first: a stack that cannot serve opens and migrates nothing
  await portFree(config.HOST, config.PORT).catch((err: unknown) => {
    throw portProblem(err, 'the API gateway', 'PORT', config.HOST, config.PORT) ?? err
  })
  if (!databaseUrl) {
    await portFree('127.0.0.1', config.DB_PORT).catch((err: unknown) => {
      throw portProblem(err, 'the embedded database', 'DB_PORT', '127.0.0.1', config.DB_PORT) ?? err
    })
    embedded = await startEmbedded({
      dataDir: resolve(config.DATA_DIR),
      port: config.DB_PORT,
      idleInTransactionMs: config.DB_IDLE_IN_TRANSACTION_MS,
      // with FUNCTIONS_RUNTIME=deno every function process is a client of its own
      maxConnections: config.FUNCTIONS_RUNTIME === 'deno' ? 24 : undefined,
    }).catch((err: unknown) => {
      throw portProblem(err, 'the embedded database', 'DB_PORT', '127.0.0.1', config.DB_PORT) ?? err
    })
    hooks.onPart?.({ embedded })
    databaseUrl = embedded.url
  }
  if (!embedded) await probePostgres(databaseUrl)
  const sql = createDb(databaseUrl, {
    max: embedded ? 1 : config.DB_POOL_MAX,
    prepare: config.DB_PREPARE,
    statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS,
  })
  hooks.onPart?.({ sql })
  const url = databaseUrl
  const migrated = await migrateRepository(sql).catch((err: unknown) => {
    if (err instanceof MigrationHistoryError) throw new StartupError(err.message)
    throw unreachableDatabase(err, url, 'start PostgreSQL or fix DATABASE_URL (unset it to use the embedded database)') ?? err
  })
  log.info({ shim_applied: migrated.shimApplied, applied: migrated.applied, rerecorded: migrated.rerecorded }, 'database migrated')
  // made once the folder is known to serve (its ports free, its database open): a start that fails
  // earlier leaves a new folder as it found it
  if (hooks.folderJwtSecret) config = { ...config, JWT_SECRET: folderJwtSecret(config.DATA_DIR, { create: true })! }
  const [anonKey, serviceKey] = await Promise.all([apiKey(config.JWT_SECRET, 'anon'), apiKey(config.JWT_SECRET, 'service_role')])
  const gateway = await startGateway({ config, sql, deps: { logs }, embedded: embedded !== undefined, databaseUrl }).catch((err: unknown) => {
    throw portProblem(err, 'the API gateway', 'PORT', config.HOST, config.PORT) ?? err
  })
  hooks.onPart?.({ gateway })
  return {
    gateway,
    embedded: embedded !== undefined,
    databaseUrl,
    anonKey: config.SUPABASE_ANON_KEY ?? anonKey,
    serviceKey: config.SUPABASE_SERVICE_ROLE_KEY ?? serviceKey,
    async close() {
      await gateway.close()
      await sql.end({ timeout: 5 })
      await embedded?.close()
    },
  }
}
