// FUNCTIONS_RUNTIME=deno: every Edge Function in its own Deno process, as the edge runtime gives each
// function its own worker, with the gateway in front of /functions/v1/<name>. Each process runs the
// function's entry exactly as Supabase would (supabase/functions/<name>/index.ts), listens on a loopback
// port of its own choosing and reaches the database and the auth server over the network.
//
// The gateway forwards a request as Supabase's API gateway does: the path without /functions/v1, the
// client's address in X-Forwarded-For (the functions run with TRUST_PROXY), the request id, and the
// bodies streamed both ways (uploads in, SSE out). A process that exits is started again on the next
// request to it; while none answers, the gateway says so with a 503 in the service's error shape.
import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { Config } from '../../functions-shared/config.ts'
import { settings } from '../../functions-shared/config.ts'
import type { Logger } from '../../functions-shared/lib/logger.ts'
import { pickRequestId } from '../../functions-shared/http/request-context.ts'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const DENO = `${ROOT}node_modules/.bin/deno`
/** what a function may do: the edge runtime's network, environment and read access (no writes, no subprocesses) */
const PERMISSIONS = ['--allow-net', '--allow-env', '--allow-read', '--allow-sys']
const READY = /Listening on https?:\/\/[^:\s]+:(\d+)/
/** headers of one connection, never forwarded (RFC 9110 §7.6.1), and the host the target sets itself */
const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'host', 'content-length']

/** The settings as environment variables, for a process that parses them again (config.ts). */
export function configEnv(config: Config): Record<string, string> {
  const env: Record<string, string> = {}
  for (const key of Object.keys(settings) as (keyof Config)[]) {
    const value = config[key]
    if (value === undefined || value === null) continue
    env[key] = typeof value === 'boolean' ? (value ? 'true' : 'false') : String(value)
  }
  return env
}

export interface DenoFunctions {
  /** forwards a request for /functions/v1/<name>/... to that function's process */
  fetch(request: Request, clientIp: string | undefined): Promise<Response>
  /** the process id of each running function */
  pids(): Record<string, number>
  close(): Promise<void>
}

interface Running {
  child: ChildProcess
  ready: Promise<number>
}

export interface DenoFunctionOptions {
  names: readonly string[]
  /** what `deno run` runs for a function, after its permissions (default: supabase/functions/<name>/index.ts) */
  entry?: (name: string) => string[]
  /** the functions' environment: their settings (see configEnv), with the database and auth URLs */
  env: Record<string, string>
  /** where /functions/v1 begins in a request path */
  basePath: string
  log: Logger
  /** each function's output, line by line (its JSON logs); dropped when absent */
  onOutput?: (name: string, line: string) => void
  startTimeoutMs?: number
}

export async function startDenoFunctions(options: DenoFunctionOptions): Promise<DenoFunctions> {
  const running = new Map<string, Running>()
  let closing = false
  const timeout = options.startTimeoutMs ?? 60_000

  function launch(name: string): Running {
    const child = spawn(DENO, ['run', ...PERMISSIONS, ...(options.entry?.(name) ?? [`supabase/functions/${name}/index.ts`])], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', NO_COLOR: '1', ...options.env, FUNCTION_PORT: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    const ready = new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the ${name} function did not start within ${timeout} ms: ${output.slice(-2000)}`)), timeout)
      let port: number | undefined
      const onLine = (line: string) => {
        const m = port === undefined ? READY.exec(line) : null
        if (m) {
          port = Number(m[1])
          clearTimeout(timer)
          resolve(port)
          return
        }
        if (port === undefined) output += `${line}\n`
        if (line.trim() !== '') options.onOutput?.(name, line)
      }
      for (const stream of [child.stdout!, child.stderr!]) {
        let partial = ''
        stream.setEncoding('utf8')
        stream.on('data', (chunk: string) => {
          const lines = (partial + chunk).split('\n')
          partial = lines.pop() ?? ''
          lines.forEach(onLine)
        })
      }
      child.once('error', (err) => {
        clearTimeout(timer)
        reject(err)
      })
      child.once('exit', (code, signal) => {
        clearTimeout(timer)
        if (running.get(name)?.child === child) running.delete(name)
        if (!closing) options.log.warn({ function: name, code, signal }, 'function process exited; the next request starts it again')
        reject(new Error(`the ${name} function exited (${signal ?? `code ${code}`}) before listening: ${output.slice(-2000)}`))
      })
    })
    ready.catch(() => {}) // a waiting request reports it
    const entry = { child, ready }
    running.set(name, entry)
    return entry
  }

  const portOf = (name: string): Promise<number> => (running.get(name) ?? launch(name)).ready

  // all at once, as `supabase functions serve` does; the stack is ready when every one listens
  await Promise.all(options.names.map((name) => portOf(name))).catch(async (err: unknown) => {
    closing = true
    await stopAll()
    throw err
  })
  options.log.info({ functions: options.names.length, runtime: 'deno' }, 'functions listening, each in its own Deno process')

  async function stopAll(): Promise<void> {
    await Promise.all(
      [...running.values()].map(
        ({ child }) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve()
            const force = setTimeout(() => child.kill('SIGKILL'), 5000)
            child.once('exit', () => {
              clearTimeout(force)
              resolve()
            })
            child.kill('SIGTERM')
          }),
      ),
    )
    running.clear()
  }

  const names = new Set(options.names)
  return {
    async fetch(request, clientIp) {
      const url = new URL(request.url)
      const path = url.pathname.slice(options.basePath.length)
      const name = path.split('/')[1] ?? ''
      const requestId = pickRequestId(request.headers.get('x-request-id') ?? undefined)
      const fail = (status: number, error: string, message: string) =>
        Response.json({ error, message, request_id: requestId }, { status, headers: { 'x-request-id': requestId } })
      if (!names.has(name)) return fail(404, 'not_found', `No function named "${name}"`)
      let port: number
      try {
        port = await portOf(name)
      } catch (err) {
        return fail(503, 'service_unavailable', `The ${name} function is not running: ${(err as Error).message.split(':')[0]}`)
      }
      const headers = new Headers(request.headers)
      for (const h of HOP_BY_HOP) headers.delete(h)
      headers.set('x-request-id', requestId)
      if (clientIp) headers.set('x-forwarded-for', clientIp)
      headers.set('x-forwarded-host', url.host)
      headers.set('x-forwarded-proto', url.protocol.replace(':', ''))
      // the body as the function wrote it: Deno.serve would otherwise compress it for the gateway
      headers.set('accept-encoding', 'identity')
      const hasBody = request.method !== 'GET' && request.method !== 'HEAD' && request.body !== null
      try {
        const res = await fetch(`http://127.0.0.1:${port}${path}${url.search}`, {
          method: request.method,
          headers,
          body: hasBody ? request.body : undefined,
          redirect: 'manual',
          signal: request.signal,
          ...(hasBody ? { duplex: 'half' } : {}),
        } as RequestInit)
        const out = new Headers(res.headers)
        for (const h of HOP_BY_HOP) if (h !== 'content-length') out.delete(h)
        return new Response(res.body, { status: res.status, statusText: res.statusText, headers: out })
      } catch (err) {
        return fail(503, 'service_unavailable', `The ${name} function did not answer: ${(err as Error).message}`)
      }
    },
    pids() {
      return Object.fromEntries([...running.entries()].map(([name, r]) => [name, r.child.pid ?? 0]))
    },
    async close() {
      closing = true
      await stopAll()
    },
  }
}
