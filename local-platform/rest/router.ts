// /rest/v1 on the local gateway: PostgREST as supabase-js apps use it, so `supabase.from('profiles')`
// works against `npm start` as it does against a hosted project (which runs PostgREST itself; no
// PostgREST binary is packaged for this platform). Every request runs as PostgREST runs it: in one
// transaction (read-only for GET and HEAD), `role` set to the JWT's role (anon without a token of a user)
// and `request.jwt.claims` to its claims, so grants and RLS policies decide what is seen and changed, on
// every table a query touches. Tables, views and functions of the schemas of config.toml's [api]
// section; rows capped at its max_rows. What PostgREST understands is honoured, or refused with
// PostgREST's error; nothing is ignored.
import { type Context, Hono } from 'hono'
import type { Deps } from '../../functions-shared/deps.ts'
import { findUnstorable, MAX_JSON_DEPTH, nestedDeeperThan } from '../../functions-shared/lib/text.ts'
import { ApiError, errorBody } from '../../functions-shared/http/errors.ts'
import { guards } from '../../functions-shared/http/guards.ts'
import { roleFromClaims } from '../../functions-shared/http/auth.ts'
import { fromDatabase, outsideSubset, RestError } from './errors.ts'
import { appliedHeader, type Preferences, preferences } from './prefs.ts'
import { type Media, negotiate, render } from './media.ts'
import { parseSelect } from './parse.ts'
import { Builder, embedNames, readShape, relationSql } from './build.ts'
import { Catalog, type Relation } from './schema.ts'
import { callFunction } from './rpc.ts'
import { countRows, page, type WriteKind, writeRows } from './write.ts'
import { tokenVerifier } from '../../functions-shared/http/guards.ts'

export interface RestOptions {
  /** config.toml [api] schemas */
  schemas: readonly string[]
  /** config.toml [api] max_rows (null: no cap) */
  maxRows: number | null
}

const ROLES = new Set(['anon', 'authenticated', 'service_role'])

interface Caller {
  role: string
  claims: Record<string, unknown>
  token: string
}

/** The caller from Authorization (or, as Supabase's gateway does, the apikey header when it is absent). */
async function caller(deps: Deps, c: Context): Promise<Caller> {
  const bearer = /^Bearer\s+(\S+)$/i.exec(c.req.header('authorization') ?? '')?.[1]
  const token = bearer ?? c.req.header('apikey')
  if (!token) {
    throw new RestError(401, 'PGRST301', 'No API key found in request', null, 'No `apikey` request header or `Authorization: Bearer` token was found.')
  }
  let claims: Record<string, unknown>
  try {
    claims = (await tokenVerifier(deps).claims(token)) as Record<string, unknown>
  } catch (err) {
    throw new RestError(401, 'PGRST301', err instanceof ApiError ? err.message : 'JWT cannot be verified')
  }
  const role = typeof claims.role === 'string' ? claims.role : 'anon'
  if (!ROLES.has(role)) throw new RestError(401, 'PGRST301', `The JWT role "${role}" is not one of anon, authenticated, service_role`)
  return { role, claims, token }
}

function schemaOf(c: Context, options: RestOptions): string {
  const read = c.req.method === 'GET' || c.req.method === 'HEAD'
  const schema = (read ? c.req.header('accept-profile') : c.req.header('content-profile')) ?? options.schemas[0] ?? 'public'
  if (!options.schemas.includes(schema)) {
    throw new RestError(406, 'PGRST106', `Invalid schema: ${schema}`, null, `Only the following schemas are exposed: ${options.schemas.join(', ')}`)
  }
  return schema
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

/** A request's transaction ends here: its result kept, everything it wrote undone (Prefer: tx=rollback). */
class Rollback<T> {
  readonly value: T
  constructor(value: T) {
    this.value = value
  }
}

interface Asked {
  who: Caller
  schema: string
  query: URLSearchParams
  prefs: Preferences
  media: Media
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
      c.set('principal', {
        kind: 'user',
        userId: sub,
        role: roleFromClaims(who.claims),
        email: typeof who.claims.email === 'string' ? who.claims.email : null,
        claims: who.claims,
        token: who.token,
      })
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

  /** Who asks, in which schema, with which query, preferences and wanted media: the start of every request. */
  const request = async (c: Context): Promise<Asked> => {
    const who = await caller(deps, c)
    await counted(c, who)
    return {
      who,
      schema: schemaOf(c, options),
      query: new URL(c.req.url).searchParams,
      prefs: preferences(c.req.header('prefer')),
      media: negotiate(c.req.header('accept')),
    }
  }

  /** Runs `fn` as PostgREST runs a request: one transaction as the caller's role, its end as Prefer asks. */
  const transact = async <T>(asked: Asked, readOnly: boolean, fn: (catalog: Catalog) => Promise<T>): Promise<{ value: T; timezone: boolean }> => {
    const { who, prefs } = asked
    try {
      return (await deps.sql.begin(readOnly ? 'read only' : 'read write', async (tx) => {
        await tx`select set_config('role', ${who.role}, true), set_config('request.jwt.claims', ${JSON.stringify({ ...who.claims, role: who.role })}, true)`
        let timezone = false
        if (prefs.timezone !== null) {
          timezone = (await tx`select set_config('timezone', name, true) from pg_catalog.pg_timezone_names where name = ${prefs.timezone} limit 1`).length > 0
          if (!timezone && prefs.handling === 'strict') {
            throw new RestError(400, 'PGRST122', 'Invalid preferences given with handling=strict', `Invalid preferences: timezone=${prefs.timezone}`)
          }
        }
        const value = await fn(new Catalog(tx))
        if (prefs.tx === 'rollback') throw new Rollback({ value, timezone })
        return { value, timezone }
      })) as { value: T; timezone: boolean }
    } catch (err) {
      if (err instanceof Rollback) return err.value as { value: T; timezone: boolean }
      if (err instanceof RestError) throw err
      throw fromDatabase(err, who.role)
    }
  }

  const respond = (
    c: Context,
    asked: Asked,
    timezone: boolean,
    status: number,
    payload: { body: string; type: string } | null,
    headers: Record<string, string>,
  ) => {
    const applied = appliedHeader(asked.prefs, timezone)
    if (applied) c.header('Preference-Applied', applied)
    for (const [k, v] of Object.entries(headers)) c.header(k, v)
    if (payload === null || c.req.method === 'HEAD') {
      if (payload) c.header('Content-Type', payload.type)
      return c.body(null, status as 200)
    }
    c.header('Content-Type', payload.type)
    return c.body(payload.body, status as 200)
  }

  /** Content-Range and the status PostgREST gives a read: 206 when a count shows rows left out, 416 past the end. */
  const ranged = (rows: number, offset: number, total: number | null) => {
    if (total !== null && offset > total) {
      throw new RestError(416, 'PGRST103', 'Requested range not satisfiable', `An offset of ${offset} was requested, but there are only ${total} rows.`)
    }
    const range = rows === 0 ? `*/${total ?? '*'}` : `${offset}-${offset + rows - 1}/${total ?? '*'}`
    return { status: total !== null && rows < total ? 206 : 200, range }
  }

  const rpc = async (c: Context) => {
    const asked = await request(c)
    const name = c.req.param('fn')!
    const read = c.req.method !== 'POST'
    let args: { body: Record<string, unknown> } | { query: URLSearchParams }
    if (read) args = { query: asked.query }
    else {
      const payload = (await body(c)) ?? {}
      if (typeof payload !== 'object' || Array.isArray(payload)) throw new RestError(400, 'PGRST102', 'A function takes a JSON object of named arguments')
      args = { body: payload as Record<string, unknown> }
    }
    const pg = page(asked.query, c.req.header('range'), options.maxRows)
    const { value: result, timezone } = await transact(
      asked,
      read,
      (catalog) =>
        callFunction(catalog, asked.schema, name, args, asked.query, pg, { count: asked.prefs.count !== null, maxAffected: asked.prefs.maxAffected }),
    )
    if (result.void) return respond(c, asked, timezone, 204, null, {})
    if (result.rows === null) {
      return respond(
        c,
        asked,
        timezone,
        200,
        render(asked.media, { value: result.value }),
        result.total === null ? {} : { 'Content-Range': result.total === 0 ? '*/0' : `0-${result.total - 1}/${result.total}` },
      )
    }
    const { status, range } = ranged(result.rows.length, result.offset, result.total)
    return respond(c, asked, timezone, status, render(asked.media, result.rows), { 'Content-Range': range })
  }
  app.post('/rpc/:fn', rpc)
  app.get('/rpc/:fn', rpc)
  app.on('HEAD', '/rpc/:fn', rpc)
  app.all('/rpc/:fn', (c) => {
    throw new RestError(405, 'PGRST101', `Cannot use the ${c.req.method} method on RPC`)
  })

  const read = async (c: Context) => {
    const asked = await request(c)
    const items = parseSelect(asked.query.get('select'))
    const shape = readShape(asked.query)
    const pg = page(asked.query, c.req.header('range'), options.maxRows)
    const head = c.req.method === 'HEAD'
    const { value, timezone } = await transact(asked, true, async (catalog) => {
      const rel = await catalog.relation(asked.schema, c.req.param('table')!)
      const b = new Builder(catalog, asked.schema, shape)
      const list = await b.list(rel, 't0', items, '')
      const where = b.where(rel, 't0', '', list.conditions, embedNames(items))
      const from = `${relationSql(rel)} t0${where}`
      const limits = `${pg.limit === null ? '' : ` limit ${pg.limit}`}${pg.offset ? ` offset ${pg.offset}` : ''}`
      const rows = head && asked.media.kind !== 'object' ? null : ((await catalog.tx.unsafe(
        `select coalesce(json_agg(_r), '[]') as rows from (select ${list.sql} from ${from}${b.order(rel, 't0', shape.orders.get(''))}${limits}) _r`,
        b.params as never[],
      ))[0]!.rows as unknown[])
      const total = asked.prefs.count ? await countRows(catalog, `select 1 from ${from}`, b.params, asked.prefs.count, options.maxRows) : null
      return { rows, total }
    })
    const rows = value.rows ?? []
    // a HEAD reads no rows: its range is the one a GET would have given, from the count
    const n = value.rows !== null
      ? rows.length
      : value.total === null
      ? 0
      : Math.max(0, Math.min(pg.limit ?? Number.POSITIVE_INFINITY, value.total - pg.offset))
    const { status, range } = ranged(n, pg.offset, value.total)
    return respond(c, asked, timezone, status, render(asked.media, rows), { 'Content-Range': range })
  }
  app.get('/:table', read)
  app.on('HEAD', '/:table', read)

  const mutate = (kind: WriteKind) => async (c: Context) => {
    const asked = await request(c)
    if (kind !== 'insert' && (asked.query.has('limit') || asked.query.has('order'))) throw outsideSubset(`A limited or ordered ${kind}`)
    if (asked.prefs.representation === 'headers-only') throw outsideSubset('"Prefer: return=headers-only" (its Location header)')
    const payload = kind === 'delete' ? null : await body(c)
    const items = parseSelect(asked.query.get('select'))
    const shape = readShape(asked.query)
    const { value: result, timezone } = await transact(asked, false, async (catalog) => {
      const rel: Relation = await catalog.relation(asked.schema, c.req.param('table')!)
      const b = new Builder(catalog, asked.schema, shape)
      return writeRows(b, rel, kind, payload, { items, columns: asked.query.get('columns'), onConflict: asked.query.get('on_conflict'), prefs: asked.prefs })
    })
    const full = asked.prefs.representation === 'full'
    // an upsert that only updated rows is 200, as PostgREST answers it (known where the rows came back)
    const created = kind === 'insert' && !(asked.prefs.resolution !== null && result.inserted === 0 && result.count > 0)
    const range = { 'Content-Range': `*/${asked.prefs.count ? result.count : '*'}` }
    if (!full) return respond(c, asked, timezone, created ? 201 : 204, null, range)
    return respond(c, asked, timezone, created ? 201 : 200, render(asked.media, result.rows), range)
  }
  app.post('/:table', mutate('insert'))
  app.patch('/:table', mutate('update'))
  app.delete('/:table', mutate('delete'))

  app.all('/:table', (c) => {
    throw outsideSubset(`The method ${c.req.method}`)
  })
  app.all('*', () => {
    throw new RestError(404, 'PGRST125', 'Invalid path specified in request URL')
  })
  return app
}
