// The embedded database: PGlite (Postgres in WASM) with pgvector, persisted under DATA_DIR and exposed
// on a local port (scripts/lib/pglite-server.ts), so postgres.js and psql connect to it like to any server.
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { readFileSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { join, resolve } from 'node:path'
import { type Extensions, PGlite } from '@electric-sql/pglite'
import { vector } from '@electric-sql/pglite-pgvector'
import { pgcrypto } from '@electric-sql/pglite/contrib/pgcrypto'
import { unaccent } from '@electric-sql/pglite/contrib/unaccent'
import { PgliteServer } from './pglite-server.ts'
import { type DataDirLock, lockDataDir } from './data-dir-lock.ts'

export interface EmbeddedDb {
  db: PGlite
  url: string
  close(): Promise<void>
}

export interface EmbeddedOptions {
  /** a folder, or undefined for an in-memory database */
  dataDir?: string
  /** a dump made by dumpDataDir, to start from */
  loadDataDir?: Blob
  port: number
  host?: string
  /** extra extensions (tests add pgTAP) */
  extensions?: Extensions
  /** clients that may be connected at once; each has the session to itself for a whole exchange or transaction */
  maxConnections?: number
  /** a client idle in a transaction this long while another waits is disconnected (0: never) */
  idleInTransactionMs?: number
  /** a client that has not given the password this long after connecting is disconnected (default 10 s) */
  authenticationTimeoutMs?: number
  /** clients waiting to authenticate at once, the longest-waiting let go past it (default 64) */
  maxUnauthenticated?: number
  /** the password clients must give; default: the data folder's (PASSWORD_FILE), or a new one for an in-memory database */
  password?: string
}

/**
 * The file of the data folder that holds the embedded database's password: made on the first start
 * (24 random bytes, base64url, readable by its owner only) and kept, so that `npm run worker`, `npm run
 * status` and psql reach the database the folder's `npm start` serves. Any local process could otherwise
 * connect to the database port and, as its superuser, rewrite wallets and ledgers.
 */
export const PASSWORD_FILE = 'db-password'

const newPassword = () => randomBytes(24).toString('base64url')

async function folderPassword(dataDir: string): Promise<string> {
  const file = join(dataDir, PASSWORD_FILE)
  const kept = await readFile(file, 'utf8').then((p) => p.trim(), () => '')
  if (kept) return kept
  const made = newPassword()
  await writeFile(file, `${made}\n`, { mode: 0o600 })
  return made
}

/**
 * The URL of the embedded database a running `npm start` serves on DB_PORT, with its data folder's
 * password (or the bare default when the folder has none: the stack is not started there).
 */
export function embeddedDatabaseUrl(config: { DATA_DIR: string; DB_PORT: number }): string {
  let password = 'postgres'
  try {
    password = readFileSync(join(resolve(config.DATA_DIR), PASSWORD_FILE), 'utf8').trim() || password
  } catch {
    // no password file: no stack has started with this folder
  }
  return `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${config.DB_PORT}/postgres`
}

export async function startEmbedded(options: EmbeddedOptions): Promise<EmbeddedDb> {
  // the folder is locked before anything reads or writes it: a second process stops here (DataDirLockedError)
  let lock: DataDirLock | undefined
  if (options.dataDir) {
    await mkdir(options.dataDir, { recursive: true })
    lock = await lockDataDir(options.dataDir)
  }
  let db: PGlite
  try {
    db = await PGlite.create({
      ...(options.dataDir ? { dataDir: options.dataDir } : {}),
      ...(options.loadDataDir ? { loadDataDir: options.loadDataDir } : {}),
      extensions: { vector, pgcrypto, unaccent, ...options.extensions },
    })
  } catch (err) {
    await lock?.release()
    throw err
  }
  let password: string
  try {
    password = options.password ?? (options.dataDir ? await folderPassword(options.dataDir) : newPassword())
  } catch (err) {
    await db.close()
    await lock?.release()
    throw err
  }
  const server = new PgliteServer(db, {
    password,
    port: options.port,
    host: options.host ?? '127.0.0.1',
    maxConnections: options.maxConnections ?? 8,
    ...(options.idleInTransactionMs !== undefined ? { idleInTransactionMs: options.idleInTransactionMs } : {}),
    ...(options.authenticationTimeoutMs !== undefined ? { authenticationTimeoutMs: options.authenticationTimeoutMs } : {}),
    ...(options.maxUnauthenticated !== undefined ? { maxUnauthenticated: options.maxUnauthenticated } : {}),
  })
  try {
    await server.start()
  } catch (err) {
    await db.close()
    await lock?.release()
    throw err
  }
  const url = server.url
  let closed = false
  return {
    db,
    url,
    async close() {
      if (closed) return
      closed = true
      await server.stop()
      await db.close()
      await lock?.release()
    },
  }
}
