// The local gateway: one Node server that serves every router under /functions/v1 (as Supabase does),
// the local auth server under /auth/v1 and, with DEMO_PORTAL, the demo curriculum portal.
import { serve, type ServerType } from '@hono/node-server'
import type { AddressInfo } from 'node:net'
import type { Config } from '../../functions-shared/config.ts'
import type { Sql } from '../../functions-shared/db/client.ts'
import { createApp } from '../../functions-shared/app.ts'
import { createDeps, type Deps } from '../../functions-shared/deps.ts'
import { localAuthRouter } from '../../functions-shared/local-auth/routes.ts'
import { TRUSTED_CALLER } from '../../functions-shared/local-auth/rate-limits.ts'
import { createSupabaseClients } from '../../functions-shared/identity/supabase.ts'
import { expireReservations } from '../../functions-shared/wallet/service.ts'
import { readAssetNode, readSourcesNode, remoteAddressNode, resolveHostNode } from './node-adapter.ts'
import { buildDemoPortal, DEMO_PORTAL_BASE } from './demo-portal.ts'
import { ocrFromConfig } from './ocr.ts'
import { restRouter, type RestOptions } from '../../functions-shared/rest/router.ts'
import { readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { parse as parseToml } from 'smol-toml'

const CONFIG_TOML = fileURLToPath(new URL('../../supabase/config.toml', import.meta.url))

/** /rest/v1's schemas and row cap, from supabase/config.toml's [api] section (as PostgREST takes them). */
export async function restSettings(): Promise<RestOptions> {
  const api = (parseToml(await readFile(CONFIG_TOML, 'utf8')).api ?? {}) as { schemas?: string[]; max_rows?: number }
  return { schemas: api.schemas ?? ['public'], maxRows: typeof api.max_rows === 'number' && api.max_rows > 0 ? api.max_rows : null }
}

export const FUNCTIONS_BASE = '/functions/v1'

export interface Gateway {
  url: string
  deps: Deps
  server: ServerType
  /** stops accepting, lets in-flight requests and background jobs finish (up to timeoutMs), then closes what is left */
  close(timeoutMs?: number): Promise<void>
}

export async function startGateway(options: { config: Config; sql: Sql; port?: number; deps?: Partial<Deps>; embedded?: boolean }): Promise<Gateway> {
  // Listen first: with PORT=0 the URL (which supabase-js calls for auth) is known only then.
  let handle: (request: Request, env: unknown) => Response | Promise<Response> = () => new Response('starting', { status: 503 })
  const server = await new Promise<ServerType>((resolve, reject) => {
    const s = serve({ fetch: (request, env) => handle(request, env), port: options.port ?? options.config.PORT, hostname: options.config.HOST }, () => resolve(s))
    s.once('error', reject)
  })
  const { port } = server.address() as AddressInfo
  const url = `http://${options.config.HOST}:${port}`
  // The demo portal lives on this loopback server, so serving it lets downloads reach loopback.
  const demo = options.config.DEMO_PORTAL === 'on' || (options.config.DEMO_PORTAL === 'auto' && options.embedded === true)
  const config: Config = {
    ...options.config,
    SUPABASE_URL: options.config.SUPABASE_URL ?? url,
    FETCH_ALLOW_LOOPBACK: options.config.FETCH_ALLOW_LOOPBACK || demo,
  }
  const publicBase = (options.config.PUBLIC_URL ?? url).replace(/\/$/, '')
  // The identity endpoints reach the local auth server in process: no loopback round trip, and the
  // Sb-Forwarded-For they send (their client's address) is believed, which it never is from the network.
  let app: ReturnType<typeof createApp> | undefined
  const authBase = `${config.SUPABASE_URL}/auth/v1/`
  const authFetch: typeof fetch = async (input, init) => {
    const request = new Request(input, init)
    if (config.LOCAL_AUTH && app && request.url.startsWith(authBase)) return app.fetch(request, { [TRUSTED_CALLER]: true })
    return fetch(request)
  }
  const deps = createDeps(config, {
    supabase: createSupabaseClients(config, authFetch),
    sql: options.sql,
    remoteAddress: remoteAddressNode,
    readAsset: readAssetNode,
    resolveHost: resolveHostNode,
    sources: options.deps?.sources ?? (await readSourcesNode(config.SCRAPER_SOURCES_FILE, { PUBLIC_URL: publicBase, PUBLIC_HOST: new URL(publicBase).host })),
    // scanned pages are recognized in this process (recognizers start on the first scan)
    ocr: ocrFromConfig(config),
    ...options.deps,
  })
  app = createApp(deps, { basePath: FUNCTIONS_BASE })
  if (demo) {
    const portal = await buildDemoPortal(config.DATA_DIR)
    app.route(DEMO_PORTAL_BASE, portal.app)
    deps.logs.get('start').info({ url: `${publicBase}${DEMO_PORTAL_BASE}/programmes/page1.html`, files: portal.files.length }, 'demo portal served')
  }
  if (config.LOCAL_AUTH) app.route('/auth/v1', localAuthRouter(deps))
  // supabase-js's .from() and .rpc(): a PostgREST subset with the same role-and-claims path (hosted: PostgREST)
  app.route('/rest/v1', restRouter(deps, await restSettings()))
  handle = (request, env) => app.fetch(request, env as never)
  // The expiry job, locally (on Supabase, pg_cron runs it); every wallet RPC also expires first.
  const log = deps.logs.get('expiry')
  const expiry =
    config.EXPIRY_INTERVAL_SECONDS > 0
      ? setInterval(() => {
          expireReservations({ ctx: { deps, requestId: `expiry-${Date.now()}` } })
            .then((r) => r.expired > 0 && log.info(r, 'expired stale reservations'))
            .catch((err: Error) => log.error({ err: { message: err.message } }, 'expiry job failed'))
        }, config.EXPIRY_INTERVAL_SECONDS * 1000).unref()
      : undefined
  return {
    url,
    deps,
    server,
    close: (timeoutMs = config.SHUTDOWN_TIMEOUT_MS) =>
      new Promise<void>((resolve) => {
        clearInterval(expiry)
        const s = server as { closeAllConnections?: () => void; closeIdleConnections?: () => void }
        const force = setTimeout(() => s.closeAllConnections?.(), timeoutMs)
        server.close(() => {
          clearTimeout(force)
          resolve()
        })
        s.closeIdleConnections?.()
      }).then(async () => {
        // ingestion jobs started by a dispatch; one still running after the timeout stays in its state and
        // is reclaimed as failed after JOB_STALE_SECONDS
        let timer: ReturnType<typeof setTimeout> | undefined
        await Promise.race([deps.background.idle(), new Promise<void>((r) => (timer = setTimeout(r, timeoutMs)))])
        clearTimeout(timer)
        await deps.ocr?.close()
      }),
  }
}
