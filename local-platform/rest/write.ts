// The writes of /rest/v1 (insert, upsert, update, delete) as PostgREST makes them, and what reads and
// writes share: the page a request asks for, and how many rows match (exact, planned or estimated).
import { badRequest, outsideSubset, RestError } from './errors.ts'
import { Builder, ident, jsonDepth, relationSql } from './build.ts'
import { parseSelect, type SelectItem, splitTopLevel } from './parse.ts'
import type { Catalog, Relation } from './schema.ts'
import type { Preferences } from './prefs.ts'
import { maxAffected } from './rpc.ts'
import { MAX_JSON_DEPTH } from '../../functions-shared/lib/text.ts'

/** The most parameters postgres.js sends with one statement. */
const MAX_PARAMETERS = 65534

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
      if (to < offset) {
        throw new RestError(
          416,
          'PGRST103',
          'Requested range not satisfiable',
          'The lower boundary must be lower than or equal to the upper boundary in the Range header.',
        )
      }
      limit = limit === null ? to - offset + 1 : Math.min(limit, to - offset + 1)
    }
  }
  if (maxRows !== null) limit = limit === null ? maxRows : Math.min(limit, maxRows)
  return { limit, offset }
}

/**
 * How many rows `select` (a `select 1 from ...`) gives: exact (count), planned (the planner's estimate)
 * or estimated (exact up to max_rows, the planner's estimate past it), as PostgREST counts them.
 */
export async function countRows(
  catalog: Catalog,
  select: string,
  params: unknown[],
  kind: 'exact' | 'planned' | 'estimated',
  maxRows: number | null,
): Promise<number> {
  const exact = async () => Number((await catalog.tx.unsafe(`select count(*) as n from (${select}) _c`, params as never[]))[0]!.n)
  const planned = async () => {
    const [row] = await catalog.tx.unsafe(`explain (format json) ${select}`, params as never[])
    const plan = (row as Record<string, unknown>)['QUERY PLAN'] as [{ Plan: { 'Plan Rows': number } }] | string
    const parsed = typeof plan === 'string' ? (JSON.parse(plan) as [{ Plan: { 'Plan Rows': number } }]) : plan
    return Math.round(parsed[0].Plan['Plan Rows'])
  }
  if (kind === 'exact') return exact()
  if (kind === 'planned') return planned()
  if (maxRows === null) return exact()
  const capped = Number((await catalog.tx.unsafe(`select count(*) as n from (${select} limit ${maxRows + 1}) _c`, params as never[]))[0]!.n)
  return capped <= maxRows ? capped : Math.max(capped, await planned())
}

/** A JSON body value as a parameter for a column of `type`: json keeps its JSON (a string included), arrays stay arrays. */
export function bodyValue(value: unknown, type: string, name: string): unknown {
  if (value === null || value === undefined) return null
  const text = (v: unknown, json: boolean) => {
    const t = json || typeof v === 'object' ? JSON.stringify(v) : String(v)
    if (json && jsonDepth(t) > MAX_JSON_DEPTH) throw badRequest(`A json value nested deeper than ${MAX_JSON_DEPTH} levels (${name})`)
    return t
  }
  if (/^jsonb?$/.test(type)) return text(value, true)
  if (type.endsWith('[]') && Array.isArray(value)) return value.map((v) => (v === null ? null : text(v, /^jsonb?\[\]$/.test(type))))
  return text(value, false)
}

export type WriteKind = 'insert' | 'update' | 'delete'

interface WriteInput {
  items: SelectItem[]
  columns: string | null
  onConflict: string | null
  prefs: Preferences
}

const unquoted = (name: string) => name.trim().replace(/^"(.*)"$/, '$1')

function writable(r: Relation, col: string): string {
  if (!r.columns.has(col)) throw new RestError(400, 'PGRST204', `Could not find the '${col}' column of '${r.name}' in the schema cache`)
  return col
}

/** The statement of an insert (or upsert) of `payload` into `rel`. */
function insertSql(b: Builder, rel: Relation, payload: unknown, input: WriteInput): string {
  const rows = Array.isArray(payload) ? payload : [payload]
  if (rows.length === 0 && input.columns === null) return `insert into ${relationSql(rel)} as t0 select * from ${relationSql(rel)} where false`
  if (rows.some((i) => i === null || typeof i !== 'object' || Array.isArray(i))) {
    throw new RestError(400, 'PGRST102', 'An insert takes a JSON object or an array of objects')
  }
  let columns: string[]
  if (input.columns !== null) columns = splitTopLevel(input.columns).map(unquoted)
  else {
    // as PostgREST: every object of a bulk insert names the same keys (or the request lists them in columns=)
    columns = Object.keys(rows[0] as object)
    const same = new Set(columns)
    if (rows.some((r) => Object.keys(r as object).length !== same.size || Object.keys(r as object).some((k) => !same.has(k)))) {
      throw new RestError(400, 'PGRST102', 'All object keys must match')
    }
  }
  for (const col of columns) writable(rel, col)
  // a key a row leaves out is null, or the column's default with Prefer: missing=default
  const missing = input.prefs.missing === 'default' ? 'default' : 'null'
  const values = rows.map((row) =>
    `(${
      columns.map((col) => (Object.hasOwn(row as object, col)
        ? b.param(bodyValue((row as Record<string, unknown>)[col], rel.columns.get(col)!, col), rel.columns.get(col)!)
        : missing)
      ).join(', ')
    })`
  )
  if (b.params.length > MAX_PARAMETERS) throw outsideSubset(`An insert of more than ${MAX_PARAMETERS} values (${b.params.length}; send the rows in parts)`)
  const head = columns.length === 0
    ? `insert into ${relationSql(rel)} as t0 default values`
    : `insert into ${relationSql(rel)} as t0 (${columns.map(ident).join(', ')}) values ${values.join(', ')}`
  if (input.prefs.resolution === null) return head
  const target = input.onConflict !== null ? splitTopLevel(input.onConflict).map((c) => writable(rel, unquoted(c))) : rel.primaryKey
  if (target.length === 0) throw badRequest(`An upsert into ${rel.name} needs on_conflict: the table has no primary key`)
  if (input.prefs.resolution === 'ignore-duplicates') return `${head} on conflict (${target.map(ident).join(', ')}) do nothing`
  const sets = columns.filter((c) => !target.includes(c))
  return `${head} on conflict (${target.map(ident).join(', ')}) do update set ${
    (sets.length > 0 ? sets : target).map((c) => `${ident(c)} = excluded.${ident(c)}`).join(', ')
  }`
}

/** Runs a write; its rows (as select= shapes them, embeds included) when Prefer asks for them, and how many it changed. */
export async function writeRows(
  b: Builder,
  rel: Relation,
  kind: WriteKind,
  payload: unknown,
  input: WriteInput,
): Promise<{ rows: unknown[]; count: number; inserted?: number }> {
  const nested = [...b.shape.filters.keys(), ...b.shape.orders.keys(), ...b.shape.pages.keys()].find((k) => k !== '')
  if (nested !== undefined && input.prefs.representation !== 'full') {
    const own = nested.split('.')[0]!
    throw new RestError(
      400,
      'PGRST108',
      `'${own}' is not an embedded resource in this request`,
      null,
      `Verify that '${own}' is included in the 'select' query parameter.`,
    )
  }
  let statement: string
  if (kind === 'insert') statement = insertSql(b, rel, payload, input)
  else {
    if (kind === 'update' && (payload === null || typeof payload !== 'object' || Array.isArray(payload))) {
      throw new RestError(400, 'PGRST102', 'An update takes a JSON object of the columns to change')
    }
    const sets = kind === 'update'
      ? Object.entries(payload as object).map(([col, v]) =>
        `${ident(writable(rel, col))} = ${b.param(bodyValue(v, rel.columns.get(col)!, col), rel.columns.get(col)!)}`
      )
      : []
    if (kind === 'update' && sets.length === 0) throw new RestError(400, 'PGRST102', 'An update takes a JSON object of the columns to change')
    const where = b.where(rel, 't0', '', [], new Set())
    statement = kind === 'update' ? `update ${relationSql(rel)} as t0 set ${sets.join(', ')}${where}` : `delete from ${relationSql(rel)} as t0${where}`
  }
  const check = (n: number) => {
    if (kind !== 'insert' && input.prefs.maxAffected !== null && n > input.prefs.maxAffected) throw maxAffected(n)
  }
  if (input.prefs.representation !== 'full') {
    // no RETURNING: a role may write rows it cannot read
    const result = await b.catalog.tx.unsafe(statement, b.params as never[])
    check(result.count)
    return { rows: [], count: result.count }
  }
  const items = input.items.length === 0 ? parseSelect(null) : input.items
  const list = await b.list(rel, 't0', items, '')
  // each row as the table's row, and whether the statement inserted it (xmax 0) or an upsert updated it
  const [row] = await b.catalog.tx.unsafe(
    `with _w as (${statement} returning t0 as _row, (t0.xmax = 0) as _inserted)
     select coalesce((select json_agg(_r) from (select ${list.sql} from (select (_w._row).* from _w) t0${
      list.conditions.length ? ` where ${list.conditions.join(' and ')}` : ''
    }) _r), '[]') as rows,
            (select count(*) from _w) as n, (select count(*) from _w where _inserted) as inserted`,
    b.params as never[],
  )
  check(Number(row!.n))
  return { rows: row!.rows as unknown[], count: Number(row!.n), inserted: Number(row!.inserted) }
}
