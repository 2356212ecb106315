// What every command of the admin CLI (scripts/admin.ts) uses: its two errors (a usage error prints the usage,
// a domain error only its message), its output, the API client made from its flags, and the account an email names.
import { loadConfigOrExit } from './load-config.ts'
import { apiKey } from '../../functions-shared/lib/keys.ts'
import { ApiClient } from './api-client.ts'
import { keyMismatch } from './status.ts'

export class UsageError extends Error {}
/** what the command met rather than how it was typed (no such account): exit 1, without the usage text */
export class DomainError extends Error {}

export const out = (line = '') => void process.stdout.write(`${line}\n`)

export async function client(flags: { url?: string | undefined; token?: string | undefined; 'admin-key'?: string | undefined }): Promise<ApiClient> {
  const config = loadConfigOrExit('admin')
  const url = flags.url ?? process.env.CT_URL ?? `http://${config.HOST}:${config.PORT}`
  const adminKey = flags['admin-key'] ?? (flags.token ? undefined : process.env.ADMIN_API_KEY || undefined)
  let token = flags.token ?? process.env.CT_TOKEN
  if (!token && !adminKey) {
    const host = new URL(url).hostname
    if (host !== '127.0.0.1' && host !== 'localhost' && host !== '::1') {
      throw new UsageError(`${url} is not local: give --token (an admin access token or the service-role key) or --admin-key`)
    }
    token = await apiKey(config.JWT_SECRET, 'service_role')
    // signed with this folder's secret: a stack started with another DATA_DIR refuses it, which is worth a sentence
    const mismatch = await keyMismatch(url, token)
    if (mismatch) throw new DomainError(mismatch)
  }
  return new ApiClient({
    url,
    token,
    adminKey,
    onRateLimited: ({ seconds, method, path }) => process.stderr.write(`rate limited on ${method} ${path.split('?')[0]}: waiting ${seconds} s\n`),
  })
}

export function table(rows: Record<string, unknown>[], columns: string[]): void {
  if (rows.length === 0) return out('(none)')
  const cell = (v: unknown) => (v === null || v === undefined ? '-' : typeof v === 'object' ? JSON.stringify(v) : String(v))
  const widths = columns.map((c) => Math.min(60, Math.max(c.length, ...rows.map((r) => cell(r[c]).length))))
  out(columns.map((c, i) => c.padEnd(widths[i]!)).join('  '))
  for (const r of rows) out(columns.map((c, i) => cell(r[c]).slice(0, 60).padEnd(widths[i]!)).join('  '))
}

export async function userId(api: ApiClient, who: string): Promise<string> {
  if (!who.includes('@')) return who
  for (let offset = 0;; offset += 200) {
    const page = await api.get(`/admin/users?limit=200&offset=${offset}`)
    const found = (page.items as { id: string; email: string }[]).find((u) => u.email.toLowerCase() === who.toLowerCase())
    if (found) return found.id
    if (offset + 200 >= page.total) throw new DomainError(`no account has the email ${who}`)
  }
}

export const need = (value: string | undefined, what: string): string => {
  if (!value) throw new UsageError(`missing ${what}`)
  return value
}
