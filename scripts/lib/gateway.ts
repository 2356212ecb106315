// The local gateway: one Node server that serves every router under /functions/v1 (as Supabase does),
// the local auth server under /auth/v1, /rest/v1 and, with DEMO_PORTAL, the demo curriculum portal.
// With FUNCTIONS_RUNTIME=deno the functions run in Deno processes of their own behind /functions/v1
// (scripts/lib/deno-functions.ts), and this process keeps auth, /rest/v1, the portal and the jobs that
// need the page recognizer.
import { serve, type ServerType } from '@hono/node-server'
import type { AddressInfo, Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import type { Config } from '../../functions-shared/config.ts'
import type { Sql } from '../../functions-shared/db/client.ts'
import { createApp, ROUTER_NAMES } from '../../functions-shared/app.ts'
import { createDeps, type Deps } from '../../functions-shared/deps.ts'
import { localAuthRouter } from '../../local-platform/auth/routes.ts'
import { GoTrueError, goTrueErrorResponse } from '../../local-platform/auth/errors.ts'
import { mailboxOf, mailRouter } from '../../local-platform/auth/mailbox.ts'
import { TRUSTED_CALLER } from '../../local-platform/auth/rate-limits.ts'
import { createSupabaseClients } from '../../functions-shared/identity/supabase.ts'
import { expireReservations } from '../../functions-shared/wallet/service.ts'
import { connectGuardNode, readAssetNode, readSourcesNode, remoteAddressNode, resolveHostNode } from './node-adapter.ts'
import { buildDemoPortal, DEMO_PORTAL_BASE } from './demo-portal.ts'
import { ocrFromConfig } from './ocr.ts'
import { createIsolatedExtractor } from './pdf-isolate.ts'
import { closeRunsLeftRunning } from '../../functions-shared/catalogue/listings.ts'
import { restRouter, type RestOptions } from '../../local-platform/rest/router.ts'
import { clientKey } from '../../functions-shared/net/client.ts'
import { readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { parse as parseToml } from 'smol-toml'
import { createServer as createHttpServer, type IncomingMessage, type RequestListener, type ServerOptions } from 'node:http'
import { configEnv, startDenoFunctions, type DenoFunctions } from './deno-functions.ts'
import { startJobLoop } from './job-loop.ts'
import { startAppFunctions } from './app-functions.ts'

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

/**
 * A body refused before it was read (413) is still on its way in, so Node closes the connection after
 * the answer: the answer says so (Connection: close) rather than keep-alive, and the client opens another.
 */
function closeAfterRefusedBody(response: Response): Response {
  if (response.status !== 413) return response
  const headers = new Headers(response.headers)
  headers.set('Connection', 'close')
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers })
}

/** Whose connection it is, for CONNECTION_LIMIT_PER_CLIENT: the client the per-IP rate limits count too. */
export const connectionClient = clientKey

/**
 * The raw answer to a connection past its client's limit, then the connection ends: a 429 in the rate
 * limit's shape (spec §7.1), the limit being on connections open at once (`window: "concurrent"`).
 */
function refuseConnection(socket: Socket, limit: number): void {
  const requestId = crypto.randomUUID()
  const body = JSON.stringify({ error: 'rate_limited', message: `Too many open connections from this client (${limit} at most): close some and retry`, request_id: requestId, retry_after: 1, limit, window: 'concurrent' })
  socket.on('error', () => {})
  socket.end(`HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nRetry-After: 1\r\nX-Request-ID: ${requestId}\r\nConnection: close\r\n\r\n${body}`, () => socket.destroy())
}

/**
 * Counts each client's open connections (connectionClient) and refuses those past the limit, so that one
 * client holding connections open (slow headers or bodies, idle keep-alive) cannot take the file
 * descriptors every other client and the database need. A refused connection's requests never reach the app.
 */
function limitConnections(server: ServerType, limit: number): WeakSet<object> {
  const refused = new WeakSet<object>()
  const open = new Map<string, number>()
  server.on('connection', (socket: Socket) => {
    const client = connectionClient(socket.remoteAddress)
    const count = (open.get(client) ?? 0) + 1
    if (count > limit) {
      refused.add(socket)
      return refuseConnection(socket, limit)
    }
    open.set(client, count)
    socket.once('close', () => {
      const left = (open.get(client) ?? 1) - 1
      if (left > 0) open.set(client, left)
      else open.delete(client)
    })
  })
  return refused
}

/**
 * Closes a connection whose client reads nothing of what it was sent for `timeoutMs`: an answer the client
 * does not read waits in this process's memory (a pipelined request for the API reference's 1.7 MB script
 * on each of 250 connections held 680 MB), and Node puts no deadline on sending it. Progress is a byte
 * leaving for the network, the part of a chunk the socket has written included (libuv's write queue), so
 * a slow client that reads is never cut; a connection with nothing waiting is not concerned (idle
 * keep-alive connections have their own timeout).
 */
function closeStalledReaders(server: ServerType, timeoutMs: number): () => void {
  const watched = new Map<Socket, { sent: number; queued: number; since: number }>()
  const progress = (socket: Socket) => ({
    sent: socket.bytesWritten - socket.writableLength,
    queued: (socket as unknown as { _handle?: { writeQueueSize?: number } })._handle?.writeQueueSize ?? 0,
  })
  server.on('connection', (socket: Socket) => {
    watched.set(socket, { ...progress(socket), since: Date.now() })
    socket.once('close', () => watched.delete(socket))
  })
  const timer = setInterval(() => {
    const now = Date.now()
    for (const [socket, last] of watched) {
      const p = progress(socket)
      if (socket.writableLength === 0 || p.sent !== last.sent || p.queued !== last.queued) watched.set(socket, { ...p, since: now })
      else if (now - last.since >= timeoutMs) socket.destroy()
    }
  }, Math.max(50, Math.min(5000, Math.ceil(timeoutMs / 4))))
  timer.unref()
  return () => clearInterval(timer)
}

/**
 * The server, with the requests whose target is no path answered here: `OPTIONS *` (asking what the
 * server allows) with 204 and Allow, any other target that is neither a path nor an absolute URL with
 * 400 in JSON with a request id. The adapter answered both with a bare 400 and no body.
 */
export function createGatewayServer(options: ServerOptions, listener: RequestListener) {
  return createHttpServer(options, (incoming, outgoing) => {
    const target = incoming.url ?? ''
    if (target.startsWith('/') || /^https?:\/\//i.test(target)) return listener(incoming, outgoing)
    const requestId = crypto.randomUUID()
    if (target === '*' && incoming.method === 'OPTIONS') {
      outgoing.writeHead(204, { Allow: 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS', 'X-Request-ID': requestId })
      return outgoing.end()
    }
    const body = JSON.stringify({ error: 'bad_request', message: `The request target must be a path such as /functions/v1/health, not ${JSON.stringify(target.slice(0, 100))}`, request_id: requestId })
    outgoing.writeHead(400, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body), 'X-Request-ID': requestId })
    outgoing.end(body)
  })
}

/**
 * The most requests one connection may have waiting for their answers (HTTP/1.1 pipelining). Node reads
 * every request a packet holds and serves them all at once, keeping each answer until the ones before it
 * are read: 100 requests for the API reference's script, 7 KB sent on each of 10 connections that read
 * nothing, made it hold 1.85 GB within 8 s. A connection past the limit is closed; clients that pipeline
 * send a few requests ahead, browsers and fetch none.
 */
export const MAX_PIPELINED_REQUESTS = 4

/** Closes a connection past MAX_PIPELINED_REQUESTS; the requests it still holds are not served. */
function limitPipelining(server: ServerType): WeakSet<object> {
  const waiting = new WeakMap<object, number>()
  const closed = new WeakSet<object>()
  // before the app's listener, so that a request past the limit is known as such when the app is asked
  server.prependListener('request', (req: IncomingMessage, res: { once(event: 'close', fn: () => void): unknown }) => {
    const socket = req.socket
    const n = (waiting.get(socket) ?? 0) + 1
    waiting.set(socket, n)
    res.once('close', () => waiting.set(socket, Math.max(0, (waiting.get(socket) ?? 1) - 1)))
    if (n > MAX_PIPELINED_REQUESTS) {
      closed.add(socket)
      socket.destroy()
    }
  })
  return closed
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
        serverOptions: { headersTimeout: options.config.HEADERS_TIMEOUT_MS, connectionsCheckingInterval: Math.min(5000, Math.ceil(options.config.HEADERS_TIMEOUT_MS / 4)) },
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
    s.on('clientError', (err: Error & { code?: string }, socket: Duplex) => {
      if (!socket.writable) return socket.destroy()
      const tooLarge = err.code === 'HPE_HEADER_OVERFLOW'
      const tooSlow = err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      const requestId = crypto.randomUUID()
      const body = JSON.stringify(
        tooLarge
          ? { error: 'request_header_fields_too_large', message: 'The request line or headers are too large (16 KB at most)', request_id: requestId }
          : tooSlow
            ? { error: 'request_timeout', message: 'The request did not arrive in time', request_id: requestId }
            : { error: 'bad_request', message: 'Malformed HTTP request', request_id: requestId },
      )
      const status = tooLarge ? '431 Request Header Fields Too Large' : tooSlow ? '408 Request Timeout' : '400 Bad Request'
      socket.end(`HTTP/1.1 ${status}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nX-Request-ID: ${requestId}\r\nConnection: close\r\n\r\n${body}`)
    })
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
  const pdfReader = createIsolatedExtractor({ size: config.PDF_READERS, maxQueue: config.PDF_READER_QUEUE })
  const deps = createDeps(config, {
    supabase: createSupabaseClients(config, authFetch),
    sql: options.sql,
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
    const portal = await buildDemoPortal(config.DATA_DIR, (missing) =>
      deps.logs.get('start').info({ pdfs: missing, data_dir: config.DATA_DIR }, `making the demo portal's ${missing} PDFs (once per data directory; scanned lessons take a few seconds each)`),
    )
    app.route(DEMO_PORTAL_BASE, portal.app)
    deps.logs.get('start').info({ url: `${publicBase}${DEMO_PORTAL_BASE}/programmes/page1.html`, files: portal.files.length }, 'demo portal served')
  }
  if (config.LOCAL_AUTH) {
    app.route('/auth/v1', localAuthRouter(deps))
    // a path the auth server does not have, answered as GoTrue's router answers it
    app.all('/auth/v1/*', (c) => c.text('404 page not found', 404))
    // the mail the local auth server sends, kept and listed (the CLI's Inbucket/Mailpit)
    app.route('/mail', mailRouter(mailboxOf(deps), async (token) => (await deps.verifier.claims(token).catch(() => null))?.role === 'service_role'))
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
      const trusted = (request: Request) => (new URL(request.url).pathname.startsWith('/auth/v1/') ? inner.fetch(request, { [TRUSTED_CALLER]: true }) : new Response(null, { status: 404 }))
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
      new URL(request.url).pathname.startsWith(`${FUNCTIONS_BASE}/`) ? forward.fetch(request, clientAddress(config, request, env)) : local.fetch(request, env as never)
  } else {
    handle = (request, env) => app.fetch(request, env as never)
  }
  // an app's own functions of FUNCTIONS_DIR, in Deno processes of their own, whichever the runtime of ours
  const appFunctions = await startAppFunctions({
    root: fileURLToPath(new URL('../../', import.meta.url)),
    config,
    verifier: deps.verifier,
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
  const expiry =
    config.EXPIRY_INTERVAL_SECONDS > 0
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
