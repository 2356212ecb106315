// The JWT secret of a local stack started without JWT_SECRET: its data folder's own, not the published
// default.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { join, resolve } from 'node:path'

/**
 * The file of the data folder that holds the JWT secret of a stack started without JWT_SECRET: made on
 * the first start (48 random bytes, base64url, readable by its owner only) and kept, so that the keys and
 * the sessions it signed outlive a restart, and `npm run status`, `npm run admin` and `npm run demo` sign
 * with it too. The default secret is the Supabase CLI's, published: with it any local process, or any web
 * page the developer opens (the gateway answers CORS for every origin), signed a service-role token and
 * topped up wallets, or an admin token, as the database's password file (db-password) stops it doing in
 * the database.
 */
export const JWT_SECRET_FILE = 'jwt-secret'

/** The data folder's JWT secret: read, or (`create`) made when the folder has none; null otherwise. */
export function folderJwtSecret(dataDir: string, options: { create: boolean }): string | null {
  const file = join(resolve(dataDir), JWT_SECRET_FILE)
  const read = () => {
    try {
      return readFileSync(file, 'utf8').trim() || null
    } catch {
      return null
    }
  }
  const kept = read()
  if (kept || !options.create) return kept
  mkdirSync(resolve(dataDir), { recursive: true })
  try {
    // wx: of two processes making it at once, the first one's is kept and read by both
    writeFileSync(file, `${randomBytes(48).toString('base64url')}\n`, { mode: 0o600, flag: 'wx' })
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
  }
  return read()
}
