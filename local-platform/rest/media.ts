// What a response may be, from Accept, as PostgREST offers it: a JSON array (the default), one JSON
// object (application/vnd.pgrst.object+json, `.single()`), either with nulls stripped, or CSV. Anything
// else (GeoJSON, an execution plan, XML) is refused with PGRST107 and the types that were asked.
import { RestError } from './errors.ts'

export type Media = { kind: 'array' | 'object'; stripNulls: boolean } | { kind: 'csv' }

export const OBJECT_TYPE = 'application/vnd.pgrst.object+json'

/** The first acceptable type of Accept, in the order the client listed them (q values aside). */
export function negotiate(accept: string | undefined): Media {
  if (!accept || accept.trim() === '') return { kind: 'array', stripNulls: false }
  const asked = accept.split(',').map((t) => t.trim()).filter(Boolean)
  for (const entry of asked) {
    const [type = '', ...params] = entry.split(';').map((s) => s.trim().toLowerCase())
    const stripNulls = params.includes('nulls=stripped')
    if (type === 'application/json' || type === '*/*' || type === 'application/*') return { kind: 'array', stripNulls: false }
    if (type === 'application/vnd.pgrst.array+json' || type === 'application/vnd.pgrst.array') return { kind: 'array', stripNulls }
    if (type === OBJECT_TYPE || type === 'application/vnd.pgrst.object') return { kind: 'object', stripNulls }
    if (type === 'text/csv') return { kind: 'csv' }
  }
  throw new RestError(406, 'PGRST107', `None of these media types are available: ${asked.map((t) => t.split(';')[0]!.trim()).join(', ')}`)
}

/** One CSV field: quoted when it holds a comma, a quote or a line break; null is empty. */
function csvField(value: unknown): string {
  if (value === null || value === undefined) return ''
  const text = typeof value === 'object' ? JSON.stringify(value) : String(value)
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text
}

/** Rows as CSV: a header of the first row's keys, then a line per row. */
export function toCsv(rows: Record<string, unknown>[]): string {
  if (rows.length === 0) return ''
  const keys = Object.keys(rows[0]!)
  return [keys.map(csvField).join(','), ...rows.map((r) => keys.map((k) => csvField(r[k])).join(','))].join('\n')
}

/** The body and its type for rows (or, for a function, a value that is not a set). */
export function render(media: Media, rows: unknown[] | { value: unknown }): { body: string; type: string } {
  if (media.kind === 'csv') {
    const list = Array.isArray(rows) ? rows : [rows.value]
    return { body: toCsv(list.filter((r): r is Record<string, unknown> => r !== null && typeof r === 'object')), type: 'text/csv; charset=utf-8' }
  }
  const strip = (
    v: unknown,
  ): unknown => (media.stripNulls && v !== null && typeof v === 'object' && !Array.isArray(v)
    ? Object.fromEntries(Object.entries(v).filter(([, x]) => x !== null))
    : v)
  if (!Array.isArray(rows)) return { body: JSON.stringify(strip(rows.value)), type: 'application/json; charset=utf-8' }
  if (media.kind === 'object') {
    if (rows.length !== 1) throw new RestError(406, 'PGRST116', 'Cannot coerce the result to a single JSON object', `The result contains ${rows.length} rows`)
    return { body: JSON.stringify(strip(rows[0])), type: `${OBJECT_TYPE}; charset=utf-8` }
  }
  return { body: JSON.stringify(rows.map(strip)), type: 'application/json; charset=utf-8' }
}
