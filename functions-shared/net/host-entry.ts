// One entry of a download allowlist: "host" or "host:port", "*.domain" for the subdomains of a domain,
// "[2001:db8::1]:8443" for an IPv6 literal. Shared by the sources file, the settings and the guard.

export interface HostEntry {
  /** lower case; an IPv6 literal without its brackets */
  host: string
  subdomains: boolean
  /** null: the URL scheme's default port */
  port: string | null
}

export function parseHostEntry(entry: string): HostEntry | null {
  const m = /^(\*\.)?(\[[0-9a-f:.]+\]|[^\s:/[\]@]+)(?::(\d{1,5}))?$/i.exec(entry.trim())
  if (!m || (m[3] !== undefined && Number(m[3]) > 65535)) return null
  return { host: m[2]!.toLowerCase().replace(/^\[|\]$/g, ''), subdomains: m[1] !== undefined, port: m[3] === undefined ? null : String(Number(m[3])) }
}

/** A comma-separated list of entries (a setting); empty entries are skipped. */
export function parseHostList(list: string): string[] {
  return list.split(',').map((e) => e.trim()).filter((e) => e !== '')
}
