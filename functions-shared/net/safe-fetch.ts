// Every outbound download (scraper and ingestion) goes through here: http(s) only, hosts from an
// allowlist, redirects followed by hand and each hop checked again, non-public addresses refused after
// DNS resolution, a deadline, and the body streamed under a hard size cap.
//
// Limit: the check resolves the name, then fetch resolves it again (runtimes offer no portable hook to
// pin the connection to the checked address), so a DNS answer that changes in between (rebinding) is not
// caught; the host allowlist is the first line of defence.
import ipaddr from 'ipaddr.js'
import { VERSION } from '../version.ts'

export type Resolver = (hostname: string) => Promise<string[]>

export interface SafeFetchOptions {
  /** hosts (exact names, or "*.example.mr" for subdomains) this download may reach; empty = any public host */
  allowedHosts?: readonly string[]
  /** allow loopback addresses (tests and the local demo only); private ranges are refused always */
  allowLoopback?: boolean
  maxBytes: number
  timeoutMs: number
  maxRedirects?: number
  resolve: Resolver
  fetch?: typeof fetch
  accept?: string
}

export type FetchFailureKind = 'blocked' | 'too_large' | 'timeout' | 'http' | 'network'

export class FetchError extends Error {
  override name = 'FetchError'
  readonly kind: FetchFailureKind
  readonly status: number | undefined
  readonly retryAfterMs: number | undefined
  constructor(kind: FetchFailureKind, message: string, extra: { status?: number; retryAfterMs?: number; cause?: unknown } = {}) {
    super(message, { cause: extra.cause })
    this.kind = kind
    this.status = extra.status
    this.retryAfterMs = extra.retryAfterMs
  }
  /** network trouble, timeouts, 429 and 5xx are worth another try; the rest are not */
  get transient(): boolean {
    return this.kind === 'timeout' || this.kind === 'network' || (this.kind === 'http' && (this.status === 429 || (this.status ?? 0) >= 500))
  }
}

export interface SafeResponse {
  url: string
  status: number
  contentType: string
  bytes: Uint8Array
}

export const USER_AGENT = `curriculum-tutor/${VERSION} (+curriculum scraper)`

function hostAllowed(hostname: string, allowed: readonly string[]): boolean {
  if (allowed.length === 0) return true
  const host = hostname.toLowerCase()
  return allowed.some((a) => {
    const rule = a.toLowerCase()
    return rule.startsWith('*.') ? host.endsWith(rule.slice(1)) && host.length > rule.length - 1 : host === rule
  })
}

/** Whether an address may be contacted: only global unicast, plus loopback when allowed. */
export function addressAllowed(address: string, allowLoopback: boolean): boolean {
  if (!ipaddr.isValid(address)) return false
  const parsed = ipaddr.process(address) // IPv4-mapped IPv6 becomes IPv4
  const range = parsed.range()
  return range === 'unicast' || (allowLoopback && range === 'loopback')
}

async function checkUrl(raw: string, options: SafeFetchOptions): Promise<URL> {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new FetchError('blocked', `not a URL: ${raw.slice(0, 200)}`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new FetchError('blocked', `blocked destination: scheme ${url.protocol} is not allowed`)
  if (url.username || url.password) throw new FetchError('blocked', 'blocked destination: credentials in the URL')
  const hostname = url.hostname.replace(/^\[|\]$/g, '')
  if (!hostAllowed(hostname, options.allowedHosts ?? [])) throw new FetchError('blocked', `blocked destination: host ${hostname} is not allowed for this source`)
  // The WHATWG parser has already turned decimal, octal and hex IPv4 forms into dotted quads.
  const addresses = ipaddr.isValid(hostname) ? [hostname] : await options.resolve(hostname).catch((err: unknown) => {
    throw new FetchError('network', `cannot resolve ${hostname}`, { cause: err })
  })
  if (addresses.length === 0) throw new FetchError('network', `cannot resolve ${hostname}`)
  const bad = addresses.find((a) => !addressAllowed(a, options.allowLoopback ?? false))
  if (bad) throw new FetchError('blocked', `blocked destination: ${hostname} resolves to non-public address ${bad}`)
  return url
}

function retryAfterMs(header: string | null): number | undefined {
  if (!header) return undefined
  const seconds = Number(header)
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000)
  const date = Date.parse(header)
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now())
}

async function readCapped(body: ReadableStream<Uint8Array> | null, maxBytes: number, declared: number | null): Promise<Uint8Array> {
  if (declared !== null && declared > maxBytes) throw new FetchError('too_large', `too large: ${declared} bytes declared, ${maxBytes} allowed`)
  if (!body) return new Uint8Array(0)
  const reader = body.getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.byteLength
    if (total > maxBytes) {
      await reader.cancel().catch(() => {})
      throw new FetchError('too_large', `too large: more than ${maxBytes} bytes`)
    }
    chunks.push(value)
  }
  const out = new Uint8Array(total)
  let offset = 0
  for (const c of chunks) {
    out.set(c, offset)
    offset += c.byteLength
  }
  return out
}

export async function safeFetch(raw: string, options: SafeFetchOptions): Promise<SafeResponse> {
  const fetchImpl = options.fetch ?? fetch
  const maxRedirects = options.maxRedirects ?? 5
  const controller = new AbortController()
  const timer = setTimeout(() => controller.abort(), options.timeoutMs)
  try {
    let current = raw
    for (let hop = 0; ; hop++) {
      const url = await checkUrl(current, options)
      let res: Response
      try {
        res = await fetchImpl(url, {
          redirect: 'manual',
          signal: controller.signal,
          headers: { 'User-Agent': USER_AGENT, Accept: options.accept ?? '*/*' },
        })
      } catch (err) {
        if (controller.signal.aborted) throw new FetchError('timeout', `timed out after ${options.timeoutMs} ms`, { cause: err })
        throw new FetchError('network', `network error fetching ${url.host}: ${(err as Error).message}`, { cause: err })
      }
      if (res.status >= 300 && res.status < 400 && res.headers.get('location')) {
        await res.body?.cancel().catch(() => {})
        if (hop >= maxRedirects) throw new FetchError('blocked', `too many redirects (more than ${maxRedirects})`)
        current = new URL(res.headers.get('location')!, url).toString()
        continue
      }
      if (!res.ok) {
        await res.body?.cancel().catch(() => {})
        throw new FetchError('http', `HTTP ${res.status} from ${url.host}`, { status: res.status, retryAfterMs: retryAfterMs(res.headers.get('retry-after')) })
      }
      const declared = res.headers.get('content-length')
      try {
        const bytes = await readCapped(res.body, options.maxBytes, declared === null ? null : Number(declared))
        return { url: url.toString(), status: res.status, contentType: res.headers.get('content-type') ?? '', bytes }
      } catch (err) {
        if (err instanceof FetchError) throw err
        if (controller.signal.aborted) throw new FetchError('timeout', `timed out after ${options.timeoutMs} ms`, { cause: err })
        throw new FetchError('network', `download from ${url.host} broke off: ${(err as Error).message}`, { cause: err })
      }
    }
  } finally {
    clearTimeout(timer)
  }
}
