// Where the local auth server may send a browser (recovery links, /verify), as GoTrue decides it
// (internal/utilities IsRedirectURLValid): back to the site (same scheme, host and port; any port on
// localhost), to a loopback address, or to a URL matching one of ADDITIONAL_REDIRECT_URLS (globs with
// "." and "/" as separators, as gobwas/glob compiles them for GoTrue); anything else goes to SITE_URL.

const REGULAR_HOSTNAME = /^[a-zA-Z0-9]([a-zA-Z0-9.-]*[a-zA-Z0-9])?$/

/** A GoTrue redirect pattern as a RegExp: `*` and `?` stop at "." and "/", `**` does not. */
export function redirectGlob(pattern: string): RegExp {
  let out = ''
  let depth = 0 // inside {a,b}
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i]!
    if (ch === '\\' && i + 1 < pattern.length) {
      out += escape(pattern[++i]!)
    } else if (ch === '*') {
      if (pattern[i + 1] === '*') {
        out += '.*'
        i++
      } else {
        out += '[^./]*'
      }
    } else if (ch === '?') {
      out += '[^./]'
    } else if (ch === '[') {
      const end = pattern.indexOf(']', i + 2)
      if (end < 0) {
        out += '\\['
        continue
      }
      const body = pattern.slice(i + 1, end)
      const negated = body.startsWith('!')
      const set = (negated ? body.slice(1) : body).replace(/[\\\]^]/g, (c) => `\\${c}`)
      out += negated ? `[^./${set}]` : `[${set}]`
      i = end
    } else if (ch === '{') {
      out += '(?:'
      depth++
    } else if (ch === '}' && depth > 0) {
      out += ')'
      depth--
    } else if (ch === ',' && depth > 0) {
      out += '|'
    } else {
      out += escape(ch)
    }
  }
  return new RegExp(`^${out}${')'.repeat(depth)}$`)
}

function escape(ch: string): string {
  return /[.*+?^${}()|[\]\\/]/.test(ch) ? `\\${ch}` : ch
}

/** A loopback IP literal (GoTrue: net.IP.IsLoopback). */
export function isLoopback(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, '')
  return /^127(\.\d{1,3}){3}$/.test(h) || h === '::1'
}

/** Where the site's port need not match (GoTrue's isLocalhost: a native app picks its port, RFC 8252). */
function isLocalhost(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, '')
  return isLoopback(h) || h === 'localhost' || h.endsWith('.localhost') || h === '0.0.0.0' || h === '::'
}

function isIpLiteral(hostname: string): boolean {
  return /^\d{1,3}(\.\d{1,3}){3}$/.test(hostname) || hostname.startsWith('[')
}

export interface RedirectPolicy {
  siteUrl: string
  /** ADDITIONAL_REDIRECT_URLS, each compiled once */
  allowList: RegExp[]
}

export function redirectPolicy(siteUrl: string, additional: readonly string[]): RedirectPolicy {
  return { siteUrl, allowList: additional.map(redirectGlob) }
}

/** Whether the browser may be sent to `target`. */
export function isRedirectAllowed(policy: RedirectPolicy, target: string): boolean {
  if (target === '' || /[\u0000-\u0020\u007f]/.test(target)) return false
  let site: URL
  try {
    site = new URL(policy.siteUrl)
  } catch {
    return false
  }
  let url: URL | null = null
  try {
    url = new URL(target)
  } catch {
    // an http(s) URL that does not parse is refused; another scheme (an app's deep link) may still match a pattern
    if (/^https?:\/\//i.test(target)) return false
  }
  if (url) {
    if (url.hostname === site.hostname && url.protocol === site.protocol && (url.port === site.port || isLocalhost(url.hostname))) return true
    const isHttp = url.protocol === 'http:' || url.protocol === 'https:'
    if (/^\d+$/.test(url.hostname)) return false
    if (isIpLiteral(url.hostname)) return isLoopback(url.hostname)
    if (isHttp && !REGULAR_HOSTNAME.test(url.hostname)) return false
  }
  const withoutFragment = target.split('#')[0]!
  return policy.allowList.some((re) => re.test(withoutFragment))
}

/** The requested redirect when it is allowed, else SITE_URL (as GoTrue falls back). */
export function redirectTarget(policy: RedirectPolicy, requested: string | undefined): string {
  return requested !== undefined && isRedirectAllowed(policy, requested) ? requested : policy.siteUrl
}
