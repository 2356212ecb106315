// The /rest/v1 subset's reading of a request: select=, the filters, order, limit and offset (or a Range
// header), Prefer and Accept, turned into SQL whose identifiers are checked against the catalogue and
// quoted, and whose values are parameters cast to their column's type. What the subset does not read
// is refused by name (outsideSubset), never ignored.
import { badRequest, outsideSubset, RestError } from './errors.ts'
import { MAX_JSON_DEPTH } from '../lib/text.ts'

export interface Relation {
  schema: string
  name: string
  /** column name → its type as format_type writes it */
  columns: Map<string, string>
}

export interface Built {
  text: string
  params: unknown[]
}

const IDENT = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/
const RESERVED = new Set(['select', 'order', 'limit', 'offset', 'columns'])
const COMPARISON: Record<string, string> = { eq: '=', neq: '<>', gt: '>', gte: '>=', lt: '<', lte: '<=' }

export const ident = (name: string) => `"${name.replaceAll('"', '""')}"`
export const relationSql = (r: Relation) => `${ident(r.schema)}.${ident(r.name)}`

/** A name as the URL gives it, checked to be a plain identifier. */
export function checkIdent(name: string, what: string): string {
  if (!IDENT.test(name)) throw badRequest(`"${name}" is not a plain ${what} name`)
  return name
}

function column(r: Relation, name: string): string {
  if (name.includes('->')) throw outsideSubset(`The JSON path "${name}"`)
  checkIdent(name, 'column')
  if (!r.columns.has(name)) throw new RestError(400, '42703', `column ${r.name}.${name} does not exist`, null, null)
  return name
}

/**
 * select=: `*` or a list of columns (no embedding, aliases or casts), each named once: a column (or `*`)
 * repeated is sent once per mention, so a query string of 16 KB made every row a thousand times its size
 * (gigabytes built by the database and parsed by the service for one request).
 */
export function selectList(r: Relation, select: string | null): string {
  if (select === null || select.trim() === '' || select.trim() === '*') return '*'
  const names = select.split(',').map((s) => s.trim())
  const seen = new Set<string>()
  for (const name of names) {
    if (name.includes('(')) throw outsideSubset(`Embedding ("${name}")`)
    if (name.includes(':')) throw outsideSubset(`An alias or cast in select ("${name}")`)
    if (seen.has(name)) throw badRequest(`select names "${name}" more than once`)
    seen.add(name)
    if (name === '*') continue
    column(r, name)
  }
  return names.map((n) => (n === '*' ? '*' : ident(n))).join(', ')
}

/** Whether JSON text, read as written (brackets in strings left out), opens more than `max` arrays and objects at once. */
export function jsonTextDeeperThan(text: string, max: number): boolean {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]
    if (inString) {
      if (ch === '\\') i++
      else if (ch === '"') inString = false
    } else if (ch === '"') inString = true
    else if (ch === '[' || ch === '{') {
      if (++depth > max) return true
    } else if (ch === ']' || ch === '}') depth--
  }
  return false
}

/**
 * A value for a json or jsonb column (or an array of them), held to the depth a JSON body may have:
 * PostgreSQL's parser of json recurses once per level, and 7,000 levels, which a request line of 16 KB
 * holds, went past its stack (a 500; on the embedded database an exchange that never answered).
 */
export function checkJsonValue(type: string, column: string, text: string): void {
  if (/^jsonb?(\[\])*$/.test(type) && jsonTextDeeperThan(text, MAX_JSON_DEPTH)) throw badRequest(`A json value nested deeper than ${MAX_JSON_DEPTH} levels (${column})`)
}

/** `(a,b,"c,d")` of an in. filter. */
/** The most values an in. filter may list, and on a json or jsonb column. */
export const MAX_IN_VALUES = 500
export const MAX_IN_JSON_VALUES = 10

function inList(raw: string): string[] {
  if (!raw.startsWith('(') || !raw.endsWith(')')) throw badRequest(`in. takes a list in parentheses, e.g. in.(1,2,3): "${raw}"`)
  const body = raw.slice(1, -1)
  const out: string[] = []
  let i = 0
  while (i <= body.length && body.length > 0) {
    if (body[i] === '"') {
      let value = ''
      i++
      while (i < body.length && body[i] !== '"') {
        if (body[i] === '\\' && i + 1 < body.length) i++
        value += body[i]
        i++
      }
      out.push(value)
      i += 2 // closing quote and comma
    } else {
      const end = body.indexOf(',', i)
      out.push(body.slice(i, end === -1 ? body.length : end))
      if (end === -1) break
      i = end + 1
    }
  }
  return out
}

/** The filters of the query string, ANDed, as a WHERE clause (params appended to `params`). */
export function whereClause(r: Relation, query: URLSearchParams, params: unknown[]): string {
  const parts: string[] = []
  for (const [key, raw] of query) {
    if (RESERVED.has(key)) continue
    if (key === 'or' || key === 'and' || key === 'not.or' || key === 'not.and') throw outsideSubset(`The logical filter "${key}"`)
    const name = column(r, key)
    const dot = raw.indexOf('.')
    const op = dot === -1 ? raw : raw.slice(0, dot)
    const value = dot === -1 ? '' : raw.slice(dot + 1)
    const type = r.columns.get(name)!
    // sent as text and cast by PostgreSQL: the driver would turn a value for a typed parameter into its
    // own idea of it first ("yesterday" for a timestamptz failed in JavaScript, "1" became 2001-01-01)
    const param = (v: unknown, cast: string) => {
      for (const text of Array.isArray(v) ? v : [v]) if (typeof text === 'string') checkJsonValue(cast, name, text)
      params.push(v)
      const text = cast.endsWith('[]') ? 'text[]' : 'text'
      return cast === text ? `$${params.length}::${text}` : `$${params.length}::${text}::${cast}`
    }
    if (op in COMPARISON) parts.push(`${ident(name)} ${COMPARISON[op]} ${param(value, type)}`)
    // the column as it is, as PostgREST sends it: PostgreSQL matches text columns and refuses the rest
    // (42883). Read as text, a jsonb column (usage_log.details: a question of 2,000 characters in each
    // free turn) was matched against the pattern at each of its positions: 2.5 s of the one database
    // connection for 300 rows and a 7 kB query string
    else if (op === 'like' || op === 'ilike') parts.push(`${ident(name)} ${op} ${param(value.replaceAll('*', '%'), 'text')}`)
    else if (op === 'in') {
      // a list's cost is its length times the rows: bounded, and tighter for a jsonb column, whose values
      // are whole documents (300 usage rows against a long list of them held the connection 174 ms)
      const list = inList(value)
      const most = type === 'jsonb' || type === 'json' ? MAX_IN_JSON_VALUES : MAX_IN_VALUES
      if (list.length > most) throw badRequest(`in. takes at most ${most} values${most === MAX_IN_JSON_VALUES ? ` on a ${type} column` : ''}; "${name}" was given ${list.length}`)
      parts.push(`${ident(name)} = any(${param(list, `${type}[]`)})`)
    }
    else if (op === 'is') {
      const keyword = { null: 'null', true: 'true', false: 'false', unknown: 'unknown', not_null: 'not null' }[value.toLowerCase()]
      if (!keyword) throw badRequest(`is. takes null, not_null, true, false or unknown: "${value}"`)
      parts.push(`${ident(name)} is ${keyword}`)
    } else if (op === 'not') throw outsideSubset(`The negated filter "${key}=${raw}"`)
    else throw outsideSubset(`The operator "${op}" (in "${key}=${raw}"; the subset has eq, neq, gt, gte, lt, lte, in, is, like, ilike)`)
  }
  return parts.length === 0 ? '' : ` where ${parts.join(' and ')}`
}

/** order=col.desc.nullslast,col2 */
export function orderClause(r: Relation, order: string | null): string {
  if (!order) return ''
  const terms = order.split(',').map((term) => {
    const [name, ...mods] = term.trim().split('.')
    const parts = [ident(column(r, name!))]
    for (const m of mods) {
      if (m === 'asc' || m === 'desc') parts.push(m)
      else if (m === 'nullsfirst' || m === 'nullslast') parts.push(m === 'nullsfirst' ? 'nulls first' : 'nulls last')
      else throw badRequest(`order takes column.asc|desc.nullsfirst|nullslast: "${term}"`)
    }
    return parts.join(' ')
  })
  return ` order by ${terms.join(', ')}`
}

export interface Page {
  limit: number | null
  offset: number
}

/** limit and offset, or a Range header (`0-9`), capped at max_rows. */
export function page(query: URLSearchParams, range: string | undefined, maxRows: number | null): Page {
  const int = (v: string | null, what: string) => {
    if (v === null) return null
    if (!/^\d{1,9}$/.test(v)) throw badRequest(`${what} must be a whole number: "${v}"`)
    return Number(v)
  }
  let limit = int(query.get('limit'), 'limit')
  let offset = int(query.get('offset'), 'offset') ?? 0
  if (range) {
    const m = /^(?:items=)?(\d{1,9})-(\d{0,9})$/.exec(range.trim())
    if (!m) throw new RestError(416, 'PGRST103', `Requested range not satisfiable: "${range}"`)
    offset = Number(m[1])
    if (m[2] !== '') {
      const to = Number(m[2])
      if (to < offset) throw new RestError(416, 'PGRST103', `Requested range not satisfiable: "${range}"`)
      limit = limit === null ? to - offset + 1 : Math.min(limit, to - offset + 1)
    }
  }
  if (maxRows !== null) limit = limit === null ? maxRows : Math.min(limit, maxRows)
  return { limit, offset }
}

export interface Preferences {
  returnRepresentation: boolean
  count: boolean
}

/** Prefer: return=representation|minimal|headers-only, count=exact; other preferences are left (as PostgREST does without handling=strict). */
export function preferences(header: string | undefined): Preferences {
  const prefs = (header ?? '').split(',').map((p) => p.trim().toLowerCase())
  if (prefs.some((p) => p.startsWith('resolution='))) throw outsideSubset('An upsert (Prefer: resolution=...)')
  const count = prefs.find((p) => p.startsWith('count='))
  if (count && count !== 'count=exact') throw outsideSubset(`"Prefer: ${count}" (the subset counts exactly: count=exact)`)
  return { returnRepresentation: prefs.includes('return=representation'), count: count === 'count=exact' }
}

/** A JSON body value as a parameter for a column (or argument) `name` of `type`. */
export function bodyValue(value: unknown, type: string, name = 'value'): unknown {
  if (value === null || value === undefined) return null
  const text = (v: unknown) => {
    const t = typeof v === 'object' ? JSON.stringify(v) : String(v)
    // a string holding json text is parsed by PostgreSQL as deep as it nests
    checkJsonValue(type, name, t)
    return t
  }
  if (type.endsWith('[]') && Array.isArray(value)) return value.map((v) => (v === null ? null : text(v)))
  return text(value)
}
