// The local gateway: one Node server that serves every router under /functions/v1 (as Supabase does),
// the local auth server under /auth/v1, /rest/v1 and, with DEMO_PORTAL, the demo curriculum portal.
// With FUNCTIONS_RUNTIME=deno the functions run in Deno processes of their own behind /functions/v1
// (scripts/lib/deno-functions.ts), and this process keeps auth, /rest/v1, the portal and the jobs that
// need the page recognizer. The server's connection limits are in scripts/lib/gateway-connections.ts.
import { serve, type ServerType } from '@hono/node-server'
import type { AddressInfo } from 'node:net'
import type { Config } from '../../functions-shared/config.ts'
import type { Sql } from '../../functions-shared/db/client.ts'
import { createApp, ROUTER_NAMES } from '../../functions-shared/app.ts'
import { createDeps, type Deps } from '../../functions-shared/deps.ts'
import { createAiProvider } from '../../functions-shared/ai/select.ts'
import { tokenVerifier } from '../../functions-shared/http/guards.ts'
import { localAuthRouter } from '../../local-platform/auth/routes.ts'
import { GoTrueError, goTrueErrorResponse } from '../../local-platform/auth/errors.ts'
import { mailboxOf, mailRouter } from '../../local-platform/auth/mailbox.ts'
import { TRUSTED_CALLER } from '../../local-platform/auth/rate-limits.ts'
import { createSupabaseClients } from '../../functions-shared/identity/supabase.ts'
import { expireReservations } from '../../functions-shared/wallet/reservations.ts'
import { connectGuardNode, readAssetNode, readSourcesNode, remoteAddressNode, resolveHostNode } from './node-adapter.ts'
import { buildDemoPortal, DEMO_PORTAL_BASE } from './demo-portal.ts'
import { ocrFromConfig } from './ocr.ts'
import { createIsolatedExtractor } from './pdf-isolate.ts'
import { closeRunsLeftRunning } from '../../functions-shared/catalogue/listings.ts'
import { restRouter } from '../../local-platform/rest/router.ts'
import { restSettings } from './rest-settings.ts'
import { fileURLToPath } from 'node:url'
import { createServer as createHttpServer, type IncomingMessage } from 'node:http'
import { configEnv, type DenoFunctions, startDenoFunctions } from './deno-functions.ts'
import { startJobLoop } from './job-loop.ts'
import { startAppFunctions } from './app-functions.ts'
import {
  answerClientErrors,
  closeAfterRefusedBody,
  closeStalledReaders,
  createGatewayServer,
  limitConnections,
  limitPipelining,
} from './gateway-connections.ts'

export const FUNCTIONS_BASE = '/functions/v1'

export interface Gateway {
  url: string
  deps: Deps
  server: ServerType
  /** FUNCTIONS_RUNTIME=deno: the function processes */
  functions?: DenoFunctions
  /** stops accepting, lets in-flight requests and background jobs finish (up to timeoutMs), then closes what is left */
  close(timeoutMs?: number): Promise<void>
}

export interface GatewayOptions {
  config: Config
  sql: Sql
  port?: number
  deps?: Partial<Deps>
  embedded?: boolean
  /** the database the Deno functions connect to (FUNCTIONS_RUNTIME=deno) */
  databaseUrl?: string
  /** FUNCTIONS_RUNTIME=deno: each function's output lines (default: written to stdout as they come) */
  onFunctionOutput?: (name: string, line: string) => void
}

/** The client's address as the gateway sees it: the socket's, or X-Forwarded-For's first with TRUST_PROXY. */
function clientAddress(config: Config, request: Request, env: unknown): string | undefined {
  const forwarded = config.TRUST_PROXY ? request.headers.get('x-forwarded-for')?.split(',')[0]?.trim() : undefined
  return forwarded || (env as { incoming?: IncomingMessage } | undefined)?.incoming?.socket.remoteAddress
}

export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  // Listen first: with PORT=0 the URL (which supabase-js calls for auth) is known only then.
  let handle: (request: Request, env: unknown) => Response | Promise<Response> = () => new Response('starting', { status: 503 })
  let refused: WeakSet<object> | undefined
  let stopWatchingReaders = () => {}
  // a request that a refused connection got in before its answer was written is not served either
  let pipelined: WeakSet<object> | undefined
  const fetchHandler = async (request: Request, env: unknown) => {
    const socket = (env as { incoming?: IncomingMessage } | undefined)?.incoming?.socket ?? {}
    if (refused?.has(socket)) return new Response(null, { status: 429, headers: { Connection: 'close', 'Retry-After': '1' } })
    // its connection was closed for pipelining too many: no answer will reach it
    if (pipelined?.has(socket)) return new Response(null, { status: 429, headers: { Connection: 'close' } })
    return closeAfterRefusedBody(await handle(request, env))
  }
  const server = await new Promise<ServerType>((resolve, reject) => {
    const s = serve(
      {
        fetch: fetchHandler,
        // the adapter calls it as node:http's createServer(options, listener), the one form it uses
        createServer: createGatewayServer as unknown as typeof createHttpServer,
        port: options.port ?? options.config.PORT,
        hostname: options.config.HOST,
        // Node checks the headers deadline every connectionsCheckingInterval (30 s by default)
        serverOptions: {
          headersTimeout: options.config.HEADERS_TIMEOUT_MS,
          connectionsCheckingInterval: Math.min(5000, Math.ceil(options.config.HEADERS_TIMEOUT_MS / 4)),
        },
      },
      () => resolve(s),
    )
    s.once('error', reject)
    // behind a proxy every connection is the proxy's: the limit is the proxy's to keep
    if (options.config.CONNECTION_LIMIT_PER_CLIENT > 0 && !options.config.TRUST_PROXY) refused = limitConnections(s, options.config.CONNECTION_LIMIT_PER_CLIENT)
    pipelined = limitPipelining(s)
    if (options.config.SEND_TIMEOUT_MS > 0) stopWatchingReaders = closeStalledReaders(s, options.config.SEND_TIMEOUT_MS)
    // what Node's parser refuses before the app sees it (headers or a query string past 16 KB, a
    // malformed request line) is still answered in JSON with a request id, not with a bare status
    answerClientErrors(s)
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
  // deno-lint-ignore prefer-const -- authFetch, made before the app, reads it once it is set
  let app: ReturnType<typeof createApp> | undefined
  const authBase = `${config.SUPABASE_URL}/auth/v1/`
  const authFetch: typeof fetch = async (input, init) => {
    const request = new Request(input, init)
    if (config.LOCAL_AUTH && app && request.url.startsWith(authBase)) return app.fetch(request, { [TRUSTED_CALLER]: true })
    return fetch(request)
  }
  const pdfReader = createIsolatedExtractor({ size: config.PDF_READERS, maxQueue: config.PDF_READER_QUEUE })
  const deps = createDeps(config, {
    supabase: createSupabaseClients(config, authFetch),
    sql: options.sql,
    ai: createAiProvider(config),
    remoteAddress: remoteAddressNode,
    readAsset: readAssetNode,
    resolveHost: resolveHostNode,
    connectGuard: connectGuardNode,
    sources: options.deps?.sources ?? (await readSourcesNode(config.SCRAPER_SOURCES_FILE, { PUBLIC_URL: publicBase, PUBLIC_HOST: new URL(publicBase).host })),
    // scanned pages are recognized in this process (recognizers start on the first scan)
    ocr: ocrFromConfig(config),
    // pdf.js reads text layers in a worker thread, so that no PDF holds or ends this process
    extractPdf: pdfReader,
    // the local auth server's paths answer the shell's refusals as GoTrue does
    foreignError: (c, status, code, message) => (c.req.path.startsWith('/auth/v1/') ? goTrueErrorResponse(new GoTrueError(status, code, message), c) : null),
    ...options.deps,
  })
  const deno = config.FUNCTIONS_RUNTIME === 'deno'
  app = createApp(deps, { basePath: FUNCTIONS_BASE, routers: deno ? [] : undefined })
  if (demo) {
    const portal = await buildDemoPortal(
      config.DATA_DIR,
      (missing) =>
        deps.logs.get('start').info(
          { pdfs: missing, data_dir: config.DATA_DIR },
          `making the demo portal's ${missing} PDFs (once per data directory; scanned lessons take a few seconds each)`,
        ),
    )
    app.route(DEMO_PORTAL_BASE, portal.app)
    deps.logs.get('start').info({ url: `${publicBase}${DEMO_PORTAL_BASE}/programmes/page1.html`, files: portal.files.length }, 'demo portal served')
  }
  if (config.LOCAL_AUTH) {
    app.route('/auth/v1', localAuthRouter(deps))
    // a path the auth server does not have, answered as GoTrue's router answers it
    app.all('/auth/v1/*', (c) => c.text('404 page not found', 404))
    // the mail the local auth server sends, kept and listed (the CLI's Inbucket/Mailpit)
    app.route('/mail', mailRouter(mailboxOf(deps), async (token) => (await tokenVerifier(deps).claims(token).catch(() => null))?.role === 'service_role'))
  }
  // supabase-js's .from() and .rpc(): a PostgREST subset with the same role-and-claims path (hosted: PostgREST)
  app.route('/rest/v1', restRouter(deps, await restSettings()))
  let functions: DenoFunctions | undefined
  let internal: ServerType | undefined
  let jobs: { stop(): Promise<void> } | undefined
  if (deno) {
    if (!options.databaseUrl) throw new Error('FUNCTIONS_RUNTIME=deno needs the database URL the functions connect to')
    // The functions call the local auth server over loopback, on a port of their own where the client
    // address they forward (Sb-Forwarded-For) is believed, as it is from the in-process identity routes.
    let authUrl = config.SUPABASE_URL!
    if (config.LOCAL_AUTH) {
      const inner = app
      const trusted = (
        request: Request,
      ) => (new URL(request.url).pathname.startsWith('/auth/v1/') ? inner.fetch(request, { [TRUSTED_CALLER]: true }) : new Response(null, { status: 404 }))
      internal = await new Promise<ServerType>((resolve, reject) => {
        const s = serve({ fetch: trusted, port: 0, hostname: '127.0.0.1' }, () => resolve(s))
        s.once('error', reject)
      })
      authUrl = `http://127.0.0.1:${(internal.address() as AddressInfo).port}`
    }
    const write = options.onFunctionOutput ?? ((_name: string, line: string) => process.stdout.write(`${line}\n`))
    functions = await startDenoFunctions({
      names: ROUTER_NAMES,
      basePath: FUNCTIONS_BASE,
      log: deps.logs.get('functions'),
      onOutput: write,
      env: {
        ...configEnv(config),
        DATABASE_URL: options.databaseUrl,
        // one connection each on the embedded database (its socket takes a few clients, one at a time)
        DB_POOL_MAX: String(options.embedded ? 1 : config.DB_POOL_MAX),
        SUPABASE_URL: authUrl,
        PUBLIC_URL: publicBase,
        // behind this gateway, which puts the client's address in X-Forwarded-For (as Supabase's does)
        TRUST_PROXY: 'true',
      },
    }).catch(async (err: unknown) => {
      internal?.close()
      throw err
    })
    // Jobs whose scans need the recognizer wait for a Node process: this one claims them (and any other).
    jobs = startJobLoop(deps, deps.logs.get('worker'))
    const forward = functions
    const local = app
    handle = (request, env) =>
      new URL(request.url).pathname.startsWith(`${FUNCTIONS_BASE}/`)
        ? forward.fetch(request, clientAddress(config, request, env))
        : local.fetch(request, env as never)
  } else {
    handle = (request, env) => app.fetch(request, env as never)
  }
  // an app's own functions of FUNCTIONS_DIR, in Deno processes of their own, whichever the runtime of ours
  const appFunctions = await startAppFunctions({
    root: fileURLToPath(new URL('../../', import.meta.url)),
    config,
    verifier: tokenVerifier(deps),
    exclude: ROUTER_NAMES,
    basePath: FUNCTIONS_BASE,
    publicUrl: publicBase,
    databaseUrl: options.databaseUrl,
    log: deps.logs.get('functions'),
    ...(options.onFunctionOutput ? { onOutput: options.onFunctionOutput } : {}),
  })
  if (appFunctions) {
    const ours = handle
    handle = (request, env) => (appFunctions.owns(request) ? appFunctions.fetch(request, clientAddress(config, request, env)) : ours(request, env))
  }
  // The expiry job, locally (on Supabase, pg_cron runs it); every wallet RPC also expires first.
  const log = deps.logs.get('expiry')
  const expiry = config.EXPIRY_INTERVAL_SECONDS > 0
    ? setInterval(() => {
      expireReservations({ ctx: { deps, requestId: `expiry-${Date.now()}` } })
        .then((r) => r.expired > 0 && log.info(r, 'expired stale reservations'))
        .catch((err: Error) => log.error({ err: { message: err.message } }, 'expiry job failed'))
      interruptStaleTurns()
    }, config.EXPIRY_INTERVAL_SECONDS * 1000).unref()
    : undefined
  // chat turns whose process died (a crash, kill -9: their lease ran out) are interrupted, their holds
  // released: at start, and on the expiry interval (pg_cron on Supabase)
  function interruptStaleTurns(): void {
    deps.sql<{ n: number }[]>`select public.interrupt_stale_turns() as n`
      .then(([r]) => r && r.n > 0 && log.info({ interrupted: r.n }, 'interrupted chat turns whose process had stopped'))
      .catch((err: Error) => log.error({ err: { message: err.message } }, 'interrupting stale chat turns failed'))
  }
  interruptStaleTurns()
  // on the embedded database, whose folder this process alone holds, a scrape run still running at start
  // is one a stopped process left: closed as interrupted, so its source syncs again at once
  if (options.embedded) {
    void closeRunsLeftRunning(deps)
      .then((n) => n > 0 && log.warn({ runs: n }, 'scrape runs left running by a stopped process closed as interrupted'))
      .catch((err: Error) => log.error({ err: { message: err.message } }, 'closing scrape runs left running failed'))
  }
  return {
    url,
    deps,
    server,
    functions,
    close: (timeoutMs = config.SHUTDOWN_TIMEOUT_MS) =>
      new Promise<void>((resolve) => {
        // long work in flight (a sync) stops at its next step and closes what it records
        deps.background.stop()
        clearInterval(expiry)
        stopWatchingReaders()
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
        await jobs?.stop()
        await functions?.close()
        await appFunctions?.close()
        internal?.close()
        await deps.ocr?.close()
        await pdfReader.close()
      }),
  }
}
