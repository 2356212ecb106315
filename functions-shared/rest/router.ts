// /rest/v1 on the local gateway: the subset of PostgREST that supabase-js apps use for tables and
// functions, so `supabase.from('profiles').select()` works against `npm start` as it does against a
// hosted project (which runs PostgREST itself; no PostgREST binary is packaged for this platform).
// Every request runs as PostgREST runs it: in one transaction, `role` set to the JWT's role (anon without
// a token of a user) and `request.jwt.claims` to its claims, so grants and RLS policies decide what is
// seen and changed. Tables, views and functions of the schemas of config.toml's [api] section; rows
// capped at its max_rows.
import { Hono, type Context } from 'hono'
import type { Deps } from '../deps.ts'
import { asRole } from '../db/tx.ts'
import type { Tx } from '../db/client.ts'
import { findUnstorable, MAX_JSON_DEPTH, nestedDeeperThan } from '../lib/text.ts'
import { ApiError, errorBody } from '../http/errors.ts'
import { guards } from '../http/guards.ts'
import { roleFromClaims } from '../http/auth.ts'
import { badRequest, fromDatabase, outsideSubset, RestError } from './errors.ts'
import { bodyValue, checkIdent, ident, orderClause, page, preferences, relationSql, selectList, whereClause, type Relation } from './query.ts'

export interface RestOptions {
  /** config.toml [api] schemas */
  schemas: readonly string[]
  /** config.toml [api] max_rows (null: no cap) */
  maxRows: number | null
}

const ROLES = new Set(['anon', 'authenticated', 'service_role'])
/** The most parameters postgres.js sends with one statement. */
const MAX_PARAMETERS = 65534
const OBJECT = 'application/vnd.pgrst.object+json'

interface Caller {
  role: string
  claims: Record<string, unknown>
  token: string
}

/** The caller from Authorization (or, as Supabase's gateway does, the apikey header when it is absent). */
async function caller(deps: Deps, c: Context): Promise<Caller> {
  const bearer = /^Bearer\s+(\S+)$/i.exec(c.req.header('authorization') ?? '')?.[1]
  const token = bearer ?? c.req.header('apikey')
  if (!token) throw new RestError(401, 'PGRST301', 'No API key found in request', null, 'No `apikey` request header or `Authorization: Bearer` token was found.')
  let claims: Record<string, unknown>
  try {
    claims = (await deps.verifier.claims(token)) as Record<string, unknown>
  } catch (err) {
    throw new RestError(401, 'PGRST301', err instanceof ApiError ? err.message : 'JWT cannot be verified')
  }
  const role = typeof claims.role === 'string' ? claims.role : 'anon'
  if (!ROLES.has(role)) throw new RestError(401, 'PGRST301', `The JWT role "${role}" is not one of anon, authenticated, service_role`)
  return { role, claims, token }
}

function schemaOf(c: Context, options: RestOptions): string {
  const asked = c.req.method === 'GET' || c.req.method === 'HEAD' ? c.req.header('accept-profile') : c.req.header('content-profile')
  const schema = asked ?? options.schemas[0] ?? 'public'
  if (!options.schemas.includes(schema)) throw new RestError(406, 'PGRST106', `The schema must be one of the following: ${options.schemas.join(', ')}`)
  return schema
}

async function relation(tx: Tx, schema: string, name: string): Promise<Relation> {
  checkIdent(name, 'table')
  const rows = await tx`
    select a.attname as name, format_type(a.atttypid, a.atttypmod) as type
      from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
      join pg_catalog.pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
     where n.nspname = ${schema} and c.relname = ${name} and c.relkind in ('r', 'v', 'm', 'p', 'f')
     order by a.attnum`
  if (rows.length === 0) throw new RestError(404, 'PGRST205', `Could not find the table '${schema}.${name}' in the schema cache`)
  return { schema, name, columns: new Map(rows.map((r) => [r.name as string, r.type as string])) }
}

/** A column a write names, known to the relation (PGRST204 otherwise, as PostgREST says). */
function writableColumn(r: Relation, col: string): string {
  if (!r.columns.has(checkIdent(col, 'column'))) throw new RestError(400, 'PGRST204', `Could not find the '${col}' column of '${r.name}' in the schema cache`)
  return col
}

async function body(c: Context): Promise<unknown> {
  const text = await c.req.text()
  if (text.trim() === '') return null
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw new RestError(400, 'PGRST102', 'Empty or invalid json')
  }
  if (nestedDeeperThan(value, MAX_JSON_DEPTH)) throw new RestError(400, 'PGRST102', `The body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`)
  // one rule for text on every write path (the service's routes refuse the same, lib/text.ts): a string that
  // is not Unicode or holds NUL is refused as PostgreSQL refuses it in PostgREST's JSON, never stored as U+FFFD
  const bad = findUnstorable(value)
  if (bad) {
    const hint = `${bad.field} ${bad.message}`
    if (bad.message.includes('NUL')) throw new RestError(400, '22P05', 'unsupported Unicode escape sequence', '\\u0000 cannot be converted to text.', hint)
    throw new RestError(400, '22P02', 'invalid input syntax for type json', 'Unicode low surrogate must follow a high surrogate.', hint)
  }
  return value
}

function respond(c: Context, status: number, payload: string | null, headers: Record<string, string> = {}) {
  for (const [k, v] of Object.entries(headers)) c.header(k, v)
  if (payload === null) return c.body(null, status as 204)
  c.header('Content-Type', 'application/json; charset=utf-8')
  return c.body(payload, status as 200)
}

/** Rows as the client asked: an array, or one object (Accept: application/vnd.pgrst.object+json). */
function shaped(c: Context, rows: unknown[]): string {
  if (!(c.req.header('accept') ?? '').includes(OBJECT)) return JSON.stringify(rows)
  if (rows.length !== 1) throw new RestError(406, 'PGRST116', 'JSON object requested, multiple (or no) rows returned', `The result contains ${rows.length} rows`)
  return JSON.stringify(rows[0])
}

async function run<T>(deps: Deps, who: Caller, fn: (tx: Tx) => Promise<T>): Promise<T> {
  try {
    return await asRole(deps.sql, who.role, who.claims, fn)
  } catch (err) {
    if (err instanceof RestError) throw err
    throw fromDatabase(err, who.role)
  }
}

/**
 * A write, its rows as JSON when Prefer asks for them (RETURNING, so SELECT policies apply as they do in
 * PostgREST), else only how many (no RETURNING: a role may write rows it cannot read).
 */
async function write(tx: Tx, statement: string, returning: string | null, params: unknown[]): Promise<{ rows: unknown[]; count: number }> {
  if (returning === null) {
    const result = await tx.unsafe(statement, params as never[])
    return { rows: [], count: result.count }
  }
  const [row] = await tx.unsafe(`with w as (${statement} returning ${returning}) select coalesce(json_agg(w), '[]') as rows from w`, params as never[])
  const rows = row!.rows as unknown[]
  return { rows, count: rows.length }
}

export function restRouter(deps: Deps, options: RestOptions): Hono {
  const app = new Hono()
  const { limit } = guards(deps)
  const perUser = limit('rest', 'principal')
  const perClient = limit('rest', 'ip')
  /**
   * Counts the request against RATE_LIMIT_REST_PER_MINUTE once its token is verified and before any of it
   * reaches the database: a user's token by the user, the anon key (or none) by the client IP; the service
   * role (the backend's own key) is not limited. Unlimited, one client with 32 connections held another
   * user's request at 43 ms (p50) with reads that cost 1.5 ms each, and at 220 ms with reads of 7.5 ms.
   */
  const counted = async (c: Context, who: Caller) => {
    if (who.role === 'service_role') return
    const sub = who.claims.sub
    if (who.role === 'authenticated' && typeof sub === 'string' && sub !== '') {
      c.set('principal', { kind: 'user', userId: sub, role: roleFromClaims(who.claims), email: typeof who.claims.email === 'string' ? who.claims.email : null, claims: who.claims, token: who.token })
      await perUser(c, async () => {})
    } else await perClient(c, async () => {})
  }

  app.onError((err, c) => {
    // a rate limit's 429: the body of spec §7.1 with PostgREST's keys, so supabase-js reads its message
    if (err instanceof ApiError) {
      for (const [k, v] of Object.entries(err.headers)) c.header(k, v)
      return c.json({ code: err.code, details: null, hint: null, ...errorBody(c, err.code, err.message, err.details) }, err.status as 429)
    }
    const e = err instanceof RestError ? err : new RestError(500, 'PGRST000', 'The request could not be served')
    if (!(err instanceof RestError)) c.get('log')?.error({ err: { message: err.message } }, 'rest request failed')
    return c.json({ code: e.code, message: e.message, details: e.details, hint: e.hint }, e.status as 400)
  })

  /** Who asks, in which schema, with which query and preferences: the start of every table request. */
  const request = async (c: Context) => {
    const who = await caller(deps, c)
    await counted(c, who)
    return {
      who,
      schema: schemaOf(c, options),
      query: new URL(c.req.url).searchParams,
      prefs: preferences(c.req.header('prefer')),
    }
  }

  app.post('/rpc/:fn', async (c) => {
    const who = await caller(deps, c)
    await counted(c, who)
    const schema = schemaOf(c, options)
    const name = checkIdent(c.req.param('fn'), 'function')
    const args = (await body(c)) ?? {}
    if (typeof args !== 'object' || Array.isArray(args)) throw badRequest('A function takes a JSON object of named arguments')
    const result = await run(deps, who, async (tx) => {
      const candidates = await tx`
        select p.proretset as set, t.typtype as kind, p.prorettype = 'pg_catalog.void'::regtype as void, p.pronargs as nargs, p.pronargdefaults as ndefaults,
               array(select format_type(x, null) from unnest(p.proargtypes) x) as types,
               coalesce(p.proargnames, '{}') as names, coalesce(p.proargmodes::text[], '{}') as modes
          from pg_catalog.pg_proc p join pg_catalog.pg_namespace n on n.oid = p.pronamespace join pg_catalog.pg_type t on t.oid = p.prorettype
         where n.nspname = ${schema} and p.proname = ${name} and p.prokind = 'f'`
      const keys = Object.keys(args as object)
      const fit = candidates
        .map((f) => {
          const modes = f.modes as string[]
          const names = (f.names as string[]).filter((_, i) => modes.length === 0 || ['i', 'b', 'v'].includes(modes[i]!))
          return { f, names, types: f.types as string[] }
        })
        .find(({ f, names }) => keys.every((k) => names.includes(k)) && names.slice(0, (f.nargs as number) - (f.ndefaults as number)).every((n) => keys.includes(n)))
      if (!fit) {
        throw new RestError(404, 'PGRST202', `Could not find the function ${schema}.${name}(${keys.join(', ')}) in the schema cache`)
      }
      const params: unknown[] = []
      const named = keys.map((k) => {
        params.push(bodyValue((args as Record<string, unknown>)[k], fit.types[fit.names.indexOf(k)]!, k))
        return `${ident(k)} => $${params.length}::${fit.types[fit.names.indexOf(k)]}`
      })
      const call = `${ident(schema)}.${ident(name)}(${named.join(', ')})`
      if (fit.f.void) {
        await tx.unsafe(`select ${call}`, params as never[])
        return { void: true as const }
      }
      // rows (objects) for a composite type, a table or OUT parameters; values for a scalar type
      const composite = fit.f.kind === 'c' || (fit.f.modes as string[]).some((m) => m === 'o' || m === 't' || m === 'b')
      const text = composite || fit.f.set ? `select coalesce(json_agg(r), '[]') as v from (select * from ${call}) r` : `select to_json(${call}) as v`
      const [row] = await tx.unsafe(text, params as never[])
      let value = row!.v as unknown
      // a set of scalars is an array of values; a composite that is not a set is one object
      if (fit.f.set && !composite) value = (value as Record<string, unknown>[]).map((r) => Object.values(r)[0])
      else if (composite && !fit.f.set) value = (value as unknown[])[0] ?? null
      return { void: false as const, value }
    })
    if (result.void) return respond(c, 204, null)
    return respond(c, 200, Array.isArray(result.value) ? shaped(c, result.value) : JSON.stringify(result.value))
  })

  app.all('/rpc/:fn', () => {
    throw outsideSubset('Calling a function with a method other than POST')
  })

  app.get('/:table', async (c) => {
    const { who, schema, query, prefs } = await request(c)
    const { rows, total, offset } = await run(deps, who, async (tx) => {
      const r = await relation(tx, schema, c.req.param('table'))
      const params: unknown[] = []
      const where = whereClause(r, query, params)
      const { limit, offset } = page(query, c.req.header('range'), options.maxRows)
      const text = `select coalesce(json_agg(t), '[]') as rows from (select ${selectList(r, query.get('select'))} from ${relationSql(r)}${where}${orderClause(r, query.get('order'))}${limit === null ? '' : ` limit ${limit}`}${offset ? ` offset ${offset}` : ''}) t`
      const [row] = await tx.unsafe(text, params as never[])
      const total = prefs.count ? Number((await tx.unsafe(`select count(*) as n from ${relationSql(r)}${where}`, params as never[]))[0]!.n) : null
      return { rows: row!.rows as unknown[], total, offset }
    })
    const range = rows.length === 0 ? `*/${total ?? '*'}` : `${offset}-${offset + rows.length - 1}/${total ?? '*'}`
    return respond(c, 200, shaped(c, rows), { 'Content-Range': range })
  })

  /** The rows a write returned, as Prefer asks: the representation (select= applies) or nothing. */
  const written = (c: Context, result: { rows: unknown[]; count: number }, created: boolean, prefs: { returnRepresentation: boolean }) =>
    prefs.returnRepresentation
      ? respond(c, created ? 201 : 200, shaped(c, result.rows), { 'Content-Range': `*/${result.count}` })
      : respond(c, created ? 201 : 204, null, { 'Content-Range': `*/${result.count}` })

  app.post('/:table', async (c) => {
    const { who, schema, query, prefs } = await request(c)
    if (query.has('on_conflict')) throw outsideSubset('An upsert (on_conflict)')
    const payload = await body(c)
    const items = Array.isArray(payload) ? payload : [payload]
    if (items.length === 0 || items.some((i) => i === null || typeof i !== 'object' || Array.isArray(i))) throw new RestError(400, 'PGRST102', 'An insert takes a JSON object or an array of objects')
    const rows = await run(deps, who, async (tx) => {
      const r = await relation(tx, schema, c.req.param('table'))
      // supabase-js sends an array's columns quoted (columns="a","b"), as PostgREST reads them
      const chosen = query.get('columns')?.split(',').map((s) => s.trim().replace(/^"(.*)"$/, '$1')) ?? [...new Set(items.flatMap((i) => Object.keys(i as object)))]
      for (const col of chosen) writableColumn(r, col)
      if (chosen.length === 0) throw new RestError(400, 'PGRST102', 'An insert needs at least one column')
      const params: unknown[] = []
      // a key an object leaves out takes the column's default
      const values = items.map((item) => `(${chosen.map((col) => (Object.hasOwn(item as object, col) ? `$${params.push(bodyValue((item as Record<string, unknown>)[col], r.columns.get(col)!, col))}::${r.columns.get(col)}` : 'default')).join(', ')})`)
      // one statement carries at most 65535 parameters (the protocol counts them in 16 bits)
      if (params.length > MAX_PARAMETERS) throw outsideSubset(`An insert of more than ${MAX_PARAMETERS} values (${params.length}; send the rows in parts)`)
      const returning = prefs.returnRepresentation ? selectList(r, query.get('select')) : null
      return write(tx, `insert into ${relationSql(r)} (${chosen.map(ident).join(', ')}) values ${values.join(', ')}`, returning, params)
    })
    return written(c, rows, true, prefs)
  })

  app.patch('/:table', async (c) => {
    const { who, schema, query, prefs } = await request(c)
    if (query.has('limit') || query.has('order')) throw outsideSubset('A limited or ordered update')
    const payload = await body(c)
    if (payload === null || typeof payload !== 'object' || Array.isArray(payload) || Object.keys(payload).length === 0) throw new RestError(400, 'PGRST102', 'An update takes a JSON object of the columns to change')
    const rows = await run(deps, who, async (tx) => {
      const r = await relation(tx, schema, c.req.param('table'))
      const params: unknown[] = []
      const sets = Object.entries(payload).map(([col, v]) => {
        writableColumn(r, col)
        params.push(bodyValue(v, r.columns.get(col)!, col))
        return `${ident(col)} = $${params.length}::${r.columns.get(col)}`
      })
      const where = whereClause(r, query, params)
      const returning = prefs.returnRepresentation ? selectList(r, query.get('select')) : null
      return write(tx, `update ${relationSql(r)} set ${sets.join(', ')}${where}`, returning, params)
    })
    return written(c, rows, false, prefs)
  })

  app.delete('/:table', async (c) => {
    const { who, schema, query, prefs } = await request(c)
    if (query.has('limit') || query.has('order')) throw outsideSubset('A limited or ordered delete')
    const rows = await run(deps, who, async (tx) => {
      const r = await relation(tx, schema, c.req.param('table'))
      const params: unknown[] = []
      const where = whereClause(r, query, params)
      const returning = prefs.returnRepresentation ? selectList(r, query.get('select')) : null
      return write(tx, `delete from ${relationSql(r)}${where}`, returning, params)
    })
    return written(c, rows, false, prefs)
  })

  app.all('/:table', (c) => {
    throw outsideSubset(`The method ${c.req.method}`)
  })
  app.all('*', () => {
    throw new RestError(404, 'PGRST125', 'Invalid path specified in request URL')
  })
  return app
}
