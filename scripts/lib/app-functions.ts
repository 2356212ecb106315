// An app's own Edge Functions on the local stack, as `supabase functions serve` serves them: every
// sub-folder of FUNCTIONS_DIR with an index.ts (names as Supabase allows them; `_shared` and the like are
// not functions) that is not one of the service's own, each in a Deno process of its own
// (scripts/deno/function-host.ts), at /functions/v1/<name>. As on Supabase, a request needs a valid JWT
// of the project (the anon key will do) unless the function's `[functions.<name>] verify_jwt = false` in
// the config.toml beside the folder says otherwise; the function gets SUPABASE_URL, SUPABASE_ANON_KEY,
// SUPABASE_SERVICE_ROLE_KEY and SUPABASE_DB_URL.
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { parse as parseToml } from 'smol-toml'
import type { TokenVerifier } from '../../functions-shared/http/auth.ts'
import type { Config } from '../../functions-shared/config.ts'
import type { Logger } from '../../functions-shared/lib/logger.ts'
import { apiKey } from '../../functions-shared/lib/keys.ts'
import { startDenoFunctions } from './deno-functions.ts'

const NAME = /^[A-Za-z][A-Za-z0-9_-]*$/

export interface AppFunction {
  name: string
  /** the function's index.ts, absolute */
  entry: string
  verifyJwt: boolean
}

/** The functions of `dir` (relative to `root`) other than `exclude`, with their verify_jwt. */
export function discoverFunctions(root: string, dir: string, exclude: readonly string[]): AppFunction[] {
  const folder = resolve(root, dir)
  if (!existsSync(folder)) return []
  const tomlPath = join(dirname(folder), 'config.toml')
  const toml = existsSync(tomlPath)
    ? (parseToml(readFileSync(tomlPath, 'utf8')) as { functions?: Record<string, { verify_jwt?: boolean; enabled?: boolean }> })
    : {}
  return readdirSync(folder, { withFileTypes: true })
    .filter((d) => d.isDirectory() && NAME.test(d.name) && !exclude.includes(d.name) && existsSync(join(folder, d.name, 'index.ts')))
    .filter((d) => toml.functions?.[d.name]?.enabled !== false)
    .map((d) => ({ name: d.name, entry: join(folder, d.name, 'index.ts'), verifyJwt: toml.functions?.[d.name]?.verify_jwt !== false }))
    .sort((a, b) => a.name.localeCompare(b.name))
}

/**
 * The edge gateway's check of a function with verify_jwt: the Authorization header's bearer token must
 * be a JWT of the project. Its refusals, as Supabase's gateway words them; null when the request may go on.
 */
export async function jwtRefusal(verifier: TokenVerifier, request: Request): Promise<Response | null> {
  const header = request.headers.get('authorization')
  if (!header) return Response.json({ msg: 'Error: Missing authorization header' }, { status: 401 })
  const token = /^Bearer\s+(\S+)$/i.exec(header)?.[1]
  if (!token) return Response.json({ msg: "Error: Auth header is not 'Bearer {token}'" }, { status: 401 })
  try {
    await verifier.claims(token)
    return null
  } catch {
    return Response.json({ msg: 'Invalid JWT' }, { status: 401 })
  }
}

export interface AppFunctions {
  /** whether a request is for one of the app's functions */
  owns(request: Request): boolean
  fetch(request: Request, clientIp: string | undefined): Promise<Response>
  close(): Promise<void>
}

export interface AppFunctionOptions {
  root: string
  config: Config
  verifier: TokenVerifier
  /** the service's own functions (served as they are) */
  exclude: readonly string[]
  basePath: string
  publicUrl: string
  databaseUrl: string | undefined
  log: Logger
  onOutput?: (name: string, line: string) => void
}

/** Starts the app's functions of FUNCTIONS_DIR, each in its Deno process; null when it has none. */
export async function startAppFunctions(options: AppFunctionOptions): Promise<AppFunctions | null> {
  const found = discoverFunctions(options.root, options.config.FUNCTIONS_DIR, options.exclude)
  if (found.length === 0) return null
  const byName = new Map(found.map((f) => [f.name, f]))
  const secret = options.config.JWT_SECRET
  const processes = await startDenoFunctions({
    names: found.map((f) => f.name),
    entry: (name) => ['scripts/deno/function-host.ts', byName.get(name)!.entry],
    basePath: options.basePath,
    log: options.log,
    ...(options.onOutput ? { onOutput: options.onOutput } : {}),
    env: {
      SUPABASE_URL: options.publicUrl,
      SUPABASE_ANON_KEY: await apiKey(secret, 'anon'),
      SUPABASE_SERVICE_ROLE_KEY: await apiKey(secret, 'service_role'),
      ...(options.databaseUrl ? { SUPABASE_DB_URL: options.databaseUrl } : {}),
    },
  })
  options.log.info({ functions: found.map((f) => f.name) }, "the app's own functions served, each in its own Deno process")
  const nameOf = (request: Request) => new URL(request.url).pathname.slice(options.basePath.length).split('/')[1] ?? ''
  return {
    owns: (request) => new URL(request.url).pathname.startsWith(`${options.basePath}/`) && byName.has(nameOf(request)),
    async fetch(request, clientIp) {
      const fn = byName.get(nameOf(request))!
      // the edge gateway lets a browser's preflight through, as supabase-js's functions.invoke needs
      if (fn.verifyJwt && request.method !== 'OPTIONS') {
        const refused = await jwtRefusal(options.verifier, request)
        if (refused) return refused
      }
      return processes.fetch(request, clientIp)
    },
    close: () => processes.close(),
  }
}
