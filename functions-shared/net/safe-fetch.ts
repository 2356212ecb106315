// Every outbound download (scraper and ingestion) goes through here: http(s) only, hosts from an
// allowlist, redirects followed by hand and each hop checked again, non-public addresses refused after
// DNS resolution, a deadline, and the body streamed under a hard size cap.
//
// Where the runtime can hold a connection to what was checked (Node: connectGuardNode), the addresses
// are checked again in the lookup that the connection itself uses, so a DNS answer that changes between
// the check and the connection (rebinding) is refused too. Where it cannot (Deno's fetch has no lookup
// hook), fetch resolves the name again after the check, and the host allowlist is the first defence.
import ipaddr from 'ipaddr.js'
import { VERSION } from '../version.ts'
import { parseHostEntry } from './host-entry.ts'

export type Resolver = (hostname: string) => Promise<string[]>

/**
 * A fetch whose connections go only to the addresses that `lookup` gives for a host name, and that
 * fails when `lookup` throws; `close` ends its connections. From the runtime adapter.
 */
export type ConnectGuard = (lookup: Resolver) => { fetch: typeof fetch; close: () => Promise<void> }

export interface SafeFetchOptions {
  /**
   * What this download may reach: entries "host" or "host:port" ("*.example.mr" for the subdomains,
   * "[2001:db8::1]:8443" for an IPv6 literal); an entry without a port allows the URL scheme's default
   * port only. '*' means any host (tests); the address checks apply whatever the list says.
   */
  allowedHosts: readonly string[] | '*'
  /** allow loopback addresses (tests and the local demo only); private ranges are refused always */
  allowLoopback?: boolean
  maxBytes: number
  timeoutMs: number
  maxRedirects?: number
  resolve: Resolver
  /** connections checked where they are made (see ConnectGuard); without it, fetch resolves on its own */
  guard?: ConnectGuard
  fetch?: typeof fetch
  accept?: string
  /**
   * A conditional request: the validators of the copy already held (sent at every hop). A 304 is then
   * an answer, with no bytes, not an error.
   */
  ifNoneMatch?: string | null | undefined
  ifModifiedSince?: string | null | undefined
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
  /** 304 only for a conditional request whose copy is current (then `bytes` is empty) */
  status: number
  contentType: string
  bytes: Uint8Array
  /** the validators to send next time (ETag, Last-Modified), when the server gave them */
  etag: string | null
  lastModified: string | null
}

export const USER_AGENT = `curriculum-tutor/${VERSION} (+curriculum scraper)`

const DEFAULT_PORT: Record<string, string> = { 'http:': '80', 'https:': '443' }

/** Whether the URL's host and port are on the list (an entry without a port: the scheme's default port). */
export function hostAllowed(url: URL, allowed: readonly string[] | '*'): boolean {
  if (allowed === '*') return true
  const host = url.hostname.toLowerCase().replace(/^\[|\]$/g, '')
  const port = url.port || DEFAULT_PORT[url.protocol] || ''
  return allowed.some((raw) => {
    const entry = parseHostEntry(raw)
    if (!entry) return false
    if ((entry.port ?? DEFAULT_PORT[url.protocol]) !== port) return false
    return entry.subdomains ? host.endsWith(`.${entry.host}`) : host === entry.host
  })
}

/**
 * The IPv4 addresses an IPv6 address carries and would reach: IPv4-compatible ::a.b.c.d, mapped
 * ::ffff:a.b.c.d, translated ::ffff:0:a.b.c.d, NAT64 64:ff9b::/96, 6to4 2002::/16, Teredo 2001::/32 (its
 * server and its obfuscated client) and ISATAP interface identifiers. Empty when it carries none.
 */
export function embeddedIpv4(address: ipaddr.IPv6): ipaddr.IPv4[] {
  const p = address.parts
  const b = address.toByteArray()
  const v4 = (bytes: number[]) => new ipaddr.IPv4(bytes)
  const tail = v4(b.slice(12, 16))
  const zero = (from: number, to: number) => p.slice(from, to).every((x) => x === 0)
  if (zero(0, 5) && (p[5] === 0 || p[5] === 0xffff) && !(p[6] === 0 && p[7]! <= 1)) return [tail] // compatible, mapped
  if (zero(0, 4) && p[4] === 0xffff && p[5] === 0) return [tail] // translated
  if (p[0] === 0x64 && p[1] === 0xff9b && zero(2, 6)) return [tail] // NAT64 well-known prefix
  if (p[0] === 0x2002) return [v4(b.slice(2, 6))] // 6to4
  if (p[0] === 0x2001 && p[1] === 0) return [v4(b.slice(4, 8)), v4(b.slice(12, 16).map((x) => x ^ 0xff))] // Teredo
  if ((p[4] === 0 || p[4] === 0x200) && p[5] === 0x5efe) return [tail] // ISATAP
  return []
}

/** Whether an address may be contacted: only global unicast, plus loopback when allowed; an IPv6 address that carries an IPv4 one is judged by it. */
export function addressAllowed(address: string, allowLoopback: boolean): boolean {
  if (!ipaddr.isValid(address)) return false
  const parsed = ipaddr.parse(address)
  const okRange = (range: string) => range === 'unicast' || (allowLoopback && range === 'loopback')
  if (parsed.kind() === 'ipv4') return okRange(parsed.range())
  const v6 = parsed as ipaddr.IPv6
  // a mapped address is the IPv4 one on a dual-stack socket (loopback included)
  if (v6.isIPv4MappedAddress()) return okRange(v6.toIPv4Address().range())
  const range = v6.range()
  if (range === 'loopback' || range === 'unspecified') return okRange(range)
  // the NAT64 local-use prefix (RFC 8215) is never public
  if (v6.parts[0] === 0x64 && v6.parts[1] === 0xff9b && v6.parts[2] === 1) return false
  const carried = embeddedIpv4(v6)
  // tunnelled or translated: only to public addresses (the loopback allowance is for loopback itself)
  if (carried.length > 0) return carried.every((a) => a.range() === 'unicast')
  return okRange(range)
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
  if (!hostAllowed(url, options.allowedHosts)) throw new FetchError('blocked', `blocked destination: ${url.host} is not allowed for this source`)
  // The WHATWG parser has already turned decimal, octal and hex IPv4 forms into dotted quads.
  const addresses = ipaddr.isValid(hostname) ? [hostname] : await options.resolve(hostname).catch((err: unknown) => {
    throw new FetchError('network', `cannot resolve ${hostname}`, { cause: err })
  })
  checkAddresses(hostname, addresses, options)
  return url
}

function checkAddresses(hostname: string, addresses: readonly string[], options: SafeFetchOptions): void {
  if (addresses.length === 0) throw new FetchError('network', `cannot resolve ${hostname}`)
  const bad = addresses.find((a) => !addressAllowed(a, options.allowLoopback ?? false))
  if (bad) throw new FetchError('blocked', `blocked destination: ${hostname} resolves to non-public address ${bad}`)
}

/** The FetchError that a guarded lookup threw, when a fetch failed because of it. */
function guardError(err: unknown): FetchError | undefined {
  for (let e = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) if (e instanceof FetchError) return e
  return undefined
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
  // the connection's own lookup resolves and checks the name again: what is reached is what was checked
  const guarded = options.fetch ? undefined : options.guard?.(async (hostname) => {
    const addresses = await options.resolve(hostname).catch((err: unknown) => {
      throw new FetchError('network', `cannot resolve ${hostname}`, { cause: err })
    })
    checkAddresses(hostname, addresses, options)
    return addresses
  })
  const fetchImpl = options.fetch ?? guarded?.fetch ?? fetch
  const maxRedirects = options.maxRedirects ?? 5
  const controller = new AbortController()
  const timer = setTimeout(() => controller.abort(), options.timeoutMs)
  try {
    let current = raw
    for (let hop = 0;; hop++) {
      const url = await checkUrl(current, options)
      let res: Response
      try {
        res = await fetchImpl(url, {
          redirect: 'manual',
          signal: controller.signal,
          headers: {
            'User-Agent': USER_AGENT,
            Accept: options.accept ?? '*/*',
            ...(options.ifNoneMatch ? { 'If-None-Match': options.ifNoneMatch } : {}),
            ...(options.ifModifiedSince ? { 'If-Modified-Since': options.ifModifiedSince } : {}),
          },
        })
      } catch (err) {
        if (controller.signal.aborted) throw new FetchError('timeout', `timed out after ${options.timeoutMs} ms`, { cause: err })
        const refused = guardError(err)
        if (refused) throw refused
        throw new FetchError('network', `network error fetching ${url.host}: ${(err as Error).message}`, { cause: err })
      }
      if (res.status >= 300 && res.status < 400 && res.headers.get('location')) {
        await res.body?.cancel().catch(() => {})
        // a loop or a chain too long is the server's answer, not a destination refused here
        if (hop >= maxRedirects) throw new FetchError('http', `too many redirects (more than ${maxRedirects}) from ${url.host}`, { status: res.status })
        current = new URL(res.headers.get('location')!, url).toString()
        continue
      }
      const validators = { etag: res.headers.get('etag'), lastModified: res.headers.get('last-modified') }
      if (res.status === 304 && (options.ifNoneMatch || options.ifModifiedSince)) {
        await res.body?.cancel().catch(() => {})
        return { url: url.toString(), status: 304, contentType: res.headers.get('content-type') ?? '', bytes: new Uint8Array(0), ...validators }
      }
      if (!res.ok) {
        await res.body?.cancel().catch(() => {})
        throw new FetchError('http', `HTTP ${res.status} from ${url.host}`, { status: res.status, retryAfterMs: retryAfterMs(res.headers.get('retry-after')) })
      }
      const declared = res.headers.get('content-length')
      try {
        const bytes = await readCapped(res.body, options.maxBytes, declared === null ? null : Number(declared))
        return { url: url.toString(), status: res.status, contentType: res.headers.get('content-type') ?? '', bytes, ...validators }
      } catch (err) {
        if (err instanceof FetchError) throw err
        if (controller.signal.aborted) throw new FetchError('timeout', `timed out after ${options.timeoutMs} ms`, { cause: err })
        throw new FetchError('network', `download from ${url.host} broke off: ${(err as Error).message}`, { cause: err })
      }
    }
  } finally {
    clearTimeout(timer)
    await guarded?.close().catch(() => {})
  }
}
