// What a client of the local stack needs, as `supabase status` prints it: the API URL (the base that
// supabase-js's createClient takes: auth under /auth/v1, functions under /functions/v1), the functions
// URL, the database URL and the keys. `npm start` prints them; `npm run status` prints them again, for a
// running stack, also as .env lines (-o env) or JSON (-o json).
import type { Config } from '../../functions-shared/config.ts'
import { apiKey } from '../../functions-shared/lib/keys.ts'
import { embeddedDatabaseUrl } from './embedded-db.ts'

export interface StackStatus {
  api_url: string
  functions_url: string
  auth_url: string
  db_url: string
  anon_key: string
  service_role_key: string
}

/** The stack's addresses and keys from its settings (`base`: the gateway's URL when it is known). */
export async function stackStatus(config: Config, options: { base?: string; dbUrl?: string } = {}): Promise<StackStatus> {
  const base = (options.base ?? config.PUBLIC_URL ?? `http://${config.HOST}:${config.PORT}`).replace(/\/$/, '')
  const auth = config.LOCAL_AUTH ? base : (config.SUPABASE_URL ?? base).replace(/\/$/, '')
  return {
    api_url: base,
    functions_url: `${base}/functions/v1`,
    auth_url: `${auth}/auth/v1`,
    db_url: options.dbUrl ?? config.DATABASE_URL ?? embeddedDatabaseUrl(config),
    anon_key: config.SUPABASE_ANON_KEY ?? (await apiKey(config.JWT_SECRET, 'anon')),
    service_role_key: config.SUPABASE_SERVICE_ROLE_KEY ?? (await apiKey(config.JWT_SECRET, 'service_role')),
  }
}

/** `.env` lines for an app on this stack (supabase-js: createClient(SUPABASE_URL, SUPABASE_ANON_KEY)). */
export function statusEnv(s: StackStatus): string {
  const lines = {
    SUPABASE_URL: s.api_url,
    SUPABASE_ANON_KEY: s.anon_key,
    SUPABASE_FUNCTIONS_URL: s.functions_url,
    SUPABASE_SERVICE_ROLE_KEY: s.service_role_key,
    SUPABASE_DB_URL: s.db_url,
  }
  return Object.entries(lines).map(([k, v]) => `${k}="${v}"`).join('\n')
}

/** The labelled block `npm start` and `npm run status` print. */
export function statusLines(s: StackStatus, extra: [string, string][] = []): string {
  const rows: [string, string][] = [
    ['API URL', s.api_url],
    ['Functions URL', s.functions_url],
    ['Auth URL', s.auth_url],
    ...extra,
    ['Database URL', s.db_url],
    ['anon key', s.anon_key],
    ['service_role key', s.service_role_key],
  ]
  const width = Math.max(...rows.map(([k]) => k.length)) + 2
  return rows.map(([k, v]) => `  ${k.padEnd(width)}${v}`).join('\n')
}

/** The rows `npm start` adds to the block, for `npm run status` to print the same: health, reference, the demo portal when served. */
export async function extraRows(s: StackStatus, demoPortalPath: string): Promise<[string, string][]> {
  const rows: [string, string][] = [
    ['Health', `${s.functions_url}/health`],
    ['API reference', `${s.functions_url}/docs`],
  ]
  const mail = await fetch(`${s.api_url}/mail/api/messages`, { headers: { Authorization: `Bearer ${s.service_role_key}` }, signal: AbortSignal.timeout(3000) })
    .then((r) => r.ok, () => false)
  if (mail) rows.push(['Mail', `${s.api_url}/mail`])
  const portal = `${s.api_url}${demoPortalPath}/programmes/page1.html`
  const served = await fetch(portal, { method: 'HEAD', signal: AbortSignal.timeout(3000) }).then((r) => r.ok, () => false)
  if (served) rows.push(['Demo portal', portal])
  return rows
}

/**
 * Whether the stack at `base` accepts `serviceKey`: a stack started with another JWT secret (another
 * DATA_DIR, or JWT_SECRET) refuses the keys these settings sign. The sentence that says so, or null.
 */
export async function keyMismatch(base: string, serviceKey: string): Promise<string | null> {
  const res = await fetch(`${base}/rest/v1/profiles?select=id&limit=1`, {
    headers: { apikey: serviceKey, Authorization: `Bearer ${serviceKey}` },
    signal: AbortSignal.timeout(5000),
  }).catch(() => null)
  if (res?.status !== 401) return null
  return `the stack at ${base} refuses the keys these settings make: it was started with another JWT secret (another DATA_DIR, or JWT_SECRET); run this with the DATA_DIR (or JWT_SECRET) the stack was started with`
}
