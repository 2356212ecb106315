// /rest/v1/rpc/<fn>: a function called as PostgREST calls it. Its overload is chosen by the argument
// names given (PGRST202 when none fits, PGRST203 when several do); POST arguments are read from the JSON
// body by json_to_record into the parameters' own types (a jsonb or composite argument arrives typed, an
// array as an array), GET and HEAD arguments from the query string as text cast to each type, in a
// read-only transaction. A function that returns rows is a resource like a table: select= (with
// embedding when its rows are a table's), filters, order, limit and offset apply to its result.
import { Builder, embedNames, ident, readShape } from './build.ts'
import { badRequest, RestError } from './errors.ts'
import { parseSelect } from './parse.ts'
import type { Catalog, Relation } from './schema.ts'

interface Candidate {
  names: string[]
  types: string[]
  modes: string[]
  required: number
  set: boolean
  void: boolean
  /** the row's columns when the function returns rows (a table's, a composite type's, OUT or TABLE parameters) */
  columns: Map<string, string> | null
  /** the table whose rows it returns, for embedding */
  table: { schema: string; name: string } | null
}

async function candidates(catalog: Catalog, schema: string, name: string): Promise<Candidate[]> {
  const rows = await catalog.tx`
    select p.proretset as set, p.prorettype = 'pg_catalog.void'::regtype as void, p.pronargs as nargs, p.pronargdefaults as ndefaults,
           array(select format_type(x, null) from unnest(p.proargtypes) x) as types,
           coalesce(p.proargnames, '{}') as names, coalesce(p.proargmodes::text[], '{}') as modes,
           array(select format_type(x, null) from unnest(coalesce(p.proallargtypes, p.proargtypes::oid[])) x) as all_types,
           case when tc.relkind in ('r', 'v', 'm', 'p', 'f') then tn.nspname end as table_schema,
           case when tc.relkind in ('r', 'v', 'm', 'p', 'f') then tc.relname end as table_name,
           array(select a.attname::text from pg_catalog.pg_attribute a where a.attrelid = t.typrelid and a.attnum > 0 and not a.attisdropped order by a.attnum) as row_names,
           array(select format_type(a.atttypid, a.atttypmod) from pg_catalog.pg_attribute a where a.attrelid = t.typrelid and a.attnum > 0 and not a.attisdropped order by a.attnum) as row_types
      from pg_catalog.pg_proc p join pg_catalog.pg_namespace n on n.oid = p.pronamespace
      join pg_catalog.pg_type t on t.oid = p.prorettype
      left join pg_catalog.pg_class tc on tc.oid = t.typrelid left join pg_catalog.pg_namespace tn on tn.oid = tc.relnamespace
     where n.nspname = ${schema} and p.proname = ${name} and p.prokind = 'f'`
  return rows.map((r) => {
    const modes = r.modes as string[]
    const allNames = r.names as string[]
    // an unnamed parameter is named '' (PostgREST takes it from a body `{"": value}`)
    const named = (i: number) => allNames[i] ?? ''
    const inputs = modes.length === 0
      ? Array.from({ length: r.nargs as number }, (_, i) => named(i))
      : modes.flatMap((m, i) => (['i', 'b', 'v'].includes(m) ? [named(i)] : []))
    const outputs = modes.flatMap((m, i) => (m === 'o' || m === 't' || m === 'b' ? [[allNames[i]!, (r.all_types as string[])[i]!] as [string, string]] : []))
    const rowNames = r.row_names as string[]
    const columns = outputs.length > 0 ? new Map(outputs) : rowNames.length > 0 ? new Map(rowNames.map((n, i) => [n, (r.row_types as string[])[i]!])) : null
    return {
      names: inputs,
      types: r.types as string[],
      modes: modes.filter((m) => ['i', 'b', 'v'].includes(m)),
      required: (r.nargs as number) - (r.ndefaults as number),
      set: r.set as boolean,
      void: r.void as boolean,
      columns,
      table: r.table_name ? { schema: r.table_schema as string, name: r.table_name as string } : null,
    }
  })
}

export interface RpcResult {
  /** rows for a function that returns rows, else its one value */
  rows: unknown[] | null
  value?: unknown
  void: boolean
  total: number | null
  offset: number
}

/** Calls `schema.name` with `args` (POST: the JSON body's object; GET: the query string's text values). */
export async function callFunction(
  catalog: Catalog,
  schema: string,
  name: string,
  args: { body: Record<string, unknown> } | { query: URLSearchParams },
  query: URLSearchParams,
  page: { limit: number | null; offset: number },
  options: { count: boolean; maxAffected: number | null },
): Promise<RpcResult> {
  const found = await candidates(catalog, schema, name)
  const known = new Set(found.flatMap((f) => f.names))
  const keys = 'body' in args ? Object.keys(args.body) : [...new Set([...query.keys()].filter((k) => known.has(k)))]
  // a function of one unnamed json or jsonb parameter takes the whole body
  const single = 'body' in args
    ? found.filter((f) => f.types.length === 1 && f.names.length <= 1 && (f.names[0] ?? '') === '' && /^jsonb?$/.test(f.types[0]!))
    : []
  const fits = found.filter((f) => keys.every((k) => f.names.includes(k)) && f.names.slice(0, f.required).every((n) => keys.includes(n)))
  // of several that fit, the one that takes exactly the arguments given (no default filled in)
  const exact = fits.filter((f) => f.names.length === keys.length)
  const chosen = fits.length > 1 && exact.length === 1 ? exact : fits.length > 0 ? fits : single
  if (chosen.length === 0) {
    throw new RestError(
      404,
      'PGRST202',
      `Could not find the function ${schema}.${name}${keys.length === 0 ? ' without parameters' : `(${keys.join(', ')})`} in the schema cache`,
      `Searched for the function ${schema}.${name}${
        keys.length === 0 ? ' without parameters' : ` with parameter${keys.length > 1 ? 's' : ''} ${keys.join(', ')}`
      }, but no matches were found in the schema cache.`,
    )
  }
  if (chosen.length > 1) {
    throw new RestError(
      300,
      'PGRST203',
      `Could not choose the best candidate function between: ${
        chosen.map((f) => `${schema}.${name}(${f.names.map((n, i) => `${n} => ${f.types[i]}`).join(', ')})`).join(', ')
      }`,
      null,
      'Try renaming the parameters or the function itself in the database so function overloading can be resolved',
    )
  }
  const fn = chosen[0]!
  const skip = new Set(keys)
  const shape = readShape(query, skip)
  const items = parseSelect(query.get('select'))
  const b = new Builder(catalog, schema, shape)
  // the call, and the FROM item that gives it its arguments when they come from a JSON body
  let call: string
  let args1 = ''
  if (fn === single[0] && fits.length === 0) {
    call = `${ident(schema)}.${ident(name)}(${b.param(JSON.stringify((args as { body: unknown }).body), fn.types[0]!)})`
  } else if ('body' in args) {
    // an unnamed parameter is passed by position; json_to_record names its column _1
    const column = (k: string) => (k === '' ? '_1' : k)
    const named = keys.map((k) => `${fn.modes[fn.names.indexOf(k)] === 'v' ? 'variadic ' : ''}${k === '' ? '' : `${ident(k)} => `}_a.${ident(column(k))}`)
    call = `${ident(schema)}.${ident(name)}(${named.join(', ')})`
    const body = Object.fromEntries(Object.entries(args.body).map(([k, v]) => [column(k), v]))
    if (keys.length > 0) {
      args1 = `json_to_record(${b.param(JSON.stringify(body), 'json')}) as _a(${
        keys.map((k) => `${ident(column(k))} ${fn.types[fn.names.indexOf(k)]}`).join(', ')
      })`
    }
  } else {
    const named = keys.map((k) =>
      `${fn.modes[fn.names.indexOf(k)] === 'v' ? 'variadic ' : ''}${k === '' ? '' : `${ident(k)} => `}${
        b.param(query.getAll(k).length > 1 ? `{${query.getAll(k).join(',')}}` : query.get(k), fn.types[fn.names.indexOf(k)]!)
      }`
    )
    call = `${ident(schema)}.${ident(name)}(${named.join(', ')})`
  }
  const source = (alias: string) => (args1 ? `${args1} cross join lateral ${call} ${alias}` : `${call} ${alias}`)
  const run = (text: string) => catalog.tx.unsafe(text, b.params as never[])
  if (fn.void) {
    await run(`select ${call}${args1 ? ` from ${args1}` : ''}`)
    return { rows: null, void: true, total: null, offset: 0 }
  }
  const setOnly = () => new RestError(400, 'PGRST128', 'Function must return SETOF or TABLE when max-affected preference is used with handling=strict')
  if (options.maxAffected !== null && !fn.set) throw setOnly()
  if (!fn.columns) {
    // a scalar (or a set of scalars): filters and select= have no columns to apply to
    if (query.has('select') || shape.filters.size > 0 || shape.orders.size > 0) {
      throw badRequest(`${schema}.${name} returns ${fn.set ? 'a set of values' : 'a value'}, not rows: select=, filters and order apply to rows`)
    }
    if (!fn.set) {
      const [row] = await run(`select to_json(${call}) as v${args1 ? ` from ${args1}` : ''}`)
      return { rows: null, value: row!.v, void: false, total: options.count ? 1 : null, offset: 0 }
    }
    const [row] = await run(`select coalesce(json_agg(_f.v), '[]') as v from ${source('_f(v)')}`)
    const values = row!.v as unknown[]
    if (options.maxAffected !== null && values.length > options.maxAffected) throw maxAffected(values.length)
    return { rows: values, void: false, total: options.count ? values.length : null, offset: 0 }
  }
  const rel: Relation = fn.table ? await catalog.relation(fn.table.schema, fn.table.name) : { schema, name, columns: fn.columns, primaryKey: [] }
  const fromSql = `(select _f.* from ${source('_f')}) t0`
  const list = await b.list(rel, 't0', items, '')
  const where = b.where(rel, 't0', '', list.conditions, embedNames(items))
  const order = b.order(rel, 't0', shape.orders.get(''))
  const limits = `${page.limit === null ? '' : ` limit ${page.limit}`}${page.offset ? ` offset ${page.offset}` : ''}`
  const [row] = await run(`select coalesce(json_agg(_r), '[]') as rows from (select ${list.sql} from ${fromSql}${where}${order}${limits}) _r`)
  const rows = row!.rows as unknown[]
  if (options.maxAffected !== null && rows.length > options.maxAffected) throw maxAffected(rows.length)
  const total = options.count ? Number((await run(`select count(*) as n from ${fromSql}${where}`))[0]!.n) : null
  // a function that returns one row (not a set) answers with it, or null
  if (!fn.set) return { rows: null, value: rows[0] ?? null, void: false, total: options.count ? rows.length : null, offset: 0 }
  return { rows, void: false, total, offset: page.offset }
}

export const maxAffected = (n: number) =>
  new RestError(400, 'PGRST124', 'Query result exceeds max-affected preference constraint', `The query affects ${n} rows`)
