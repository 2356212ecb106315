// Text that PostgreSQL can store. A NUL character (U+0000) is refused by `text` and by `jsonb`
// ("unsupported Unicode escape sequence"), and a JavaScript string holding an unpaired UTF-16 surrogate
// is not Unicode at all (postgres.js would send it as U+FFFD, JSON.stringify as an escape jsonb
// refuses). The API refuses both at the edge, naming the field; what the service writes itself (usage
// details, error messages, model names) goes through `storable` so that no content can make a write fail.

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

/** Why this string cannot be stored as text, or null when it can. */
export function unstorableReason(s: string): string | null {
  if (s.includes('\u0000')) return 'must not contain a NUL character (U+0000)'
  if (LONE_SURROGATE.test(s)) return 'must be Unicode text (it holds an unpaired UTF-16 surrogate)'
  return null
}

export interface UnstorableField {
  field: string
  message: string
}

const isContainer = (v: unknown): v is Record<string, unknown> | unknown[] =>
  typeof v === 'object' && v !== null && (Array.isArray(v) || Object.getPrototypeOf(v) === Object.prototype || Object.getPrototypeOf(v) === null)

/**
 * The first string of a parsed value (a JSON body, a query, a form) that cannot be stored, keys
 * included, with its dotted path; null when every string can. Iterative, so a deeply nested body
 * cannot exhaust the stack. Files and other objects are not looked into.
 */
export function findUnstorable(value: unknown, root = ''): UnstorableField | null {
  const stack: [unknown, string][] = [[value, root]]
  const at = (path: string, key: string) => (path ? `${path}.${key}` : key)
  while (stack.length > 0) {
    const [v, path] = stack.pop()!
    if (typeof v === 'string') {
      const reason = unstorableReason(v)
      if (reason) return { field: path || '(body)', message: reason }
    } else if (isContainer(v)) {
      const entries = Array.isArray(v) ? v.map((x, i) => [String(i), x] as const) : Object.entries(v)
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, child] = entries[i]!
        const reason = unstorableReason(key)
        if (reason) return { field: at(path, key.replace(/[\u0000\ud800-\udfff]/g, '\ufffd')), message: `key ${reason}` }
        stack.push([child, at(path, key)])
      }
    }
  }
  return null
}

/**
 * How deeply a JSON body may nest its arrays and objects where it is stored as sent (user metadata,
 * /rest/v1 values): far beyond any real document, and far below the depth at which JSON.stringify (in
 * the database driver) or PostgreSQL's jsonb parser run out of stack, which a few thousand levels reach.
 */
export const MAX_JSON_DEPTH = 512

/** Whether a parsed JSON value nests arrays and objects deeper than `max` levels. Iterative. */
export function nestedDeeperThan(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 0]]
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!
    if (!isContainer(v)) continue
    if (depth + 1 > max) return true
    for (const child of Array.isArray(v) ? v : Object.values(v)) if (isContainer(child)) stack.push([child, depth + 1])
  }
  return false
}

/** The string with NUL and unpaired surrogates replaced by U+FFFD (for what the service writes itself). */
export function storableText(s: string): string {
  return unstorableReason(s) === null ? s : s.replaceAll('\u0000', '\ufffd').replace(new RegExp(LONE_SURROGATE.source, 'g'), '\ufffd')
}

/** A deep copy of a JSON-like value in which every string and key can be stored. */
export function storable<T>(value: T): T {
  const copy = (v: unknown, depth: number): unknown => {
    if (typeof v === 'string') return storableText(v)
    if (!isContainer(v)) return v
    if (depth > 64) return null // deeper than anything the service writes
    if (Array.isArray(v)) return v.map((x) => copy(x, depth + 1))
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [storableText(k), copy(x, depth + 1)]))
  }
  return copy(value, 0) as T
}
