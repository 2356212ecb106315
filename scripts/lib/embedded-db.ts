// The embedded database: PGlite (Postgres in WASM) with pgvector, persisted under DATA_DIR and exposed
// on a local port (scripts/lib/pglite-server.ts), so postgres.js and psql connect to it like to any server.
import { mkdir } from 'node:fs/promises'
import { PGlite, type Extensions } from '@electric-sql/pglite'
import { vector } from '@electric-sql/pglite-pgvector'
import { pgcrypto } from '@electric-sql/pglite/contrib/pgcrypto'
import { unaccent } from '@electric-sql/pglite/contrib/unaccent'
import { PgliteServer } from './pglite-server.ts'
import { lockDataDir, type DataDirLock } from './data-dir-lock.ts'

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
  const server = new PgliteServer(db, {
    port: options.port,
    host: options.host ?? '127.0.0.1',
    maxConnections: options.maxConnections ?? 8,
    ...(options.idleInTransactionMs !== undefined ? { idleInTransactionMs: options.idleInTransactionMs } : {}),
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
