// The SQL of a /rest/v1 read: the select tree with its embedded resources (correlated subqueries over
// the foreign keys, so the policies of every table a query touches apply), the filters and logic trees of
// each resource, order, limit and offset. Identifiers are checked against the catalogue and quoted;
// values are parameters, sent as text and cast by PostgreSQL to the column's type.
import { badRequest, RestError } from './errors.ts'
import {
  type Condition,
  type FieldRef,
  OPERATORS,
  type OrderTerm,
  parseField,
  parseList,
  parseLogic,
  parseOperation,
  parseOrder,
  RESERVED,
  type SelectItem,
} from './parse.ts'
import { type Catalog, type Relation, relationshipBetween } from './schema.ts'
import { MAX_JSON_DEPTH } from '../../functions-shared/lib/text.ts'

export const ident = (name: string) => `"${name.replaceAll('"', '""')}"`
export const relationSql = (r: Relation) => `${ident(r.schema)}.${ident(r.name)}`

/** The most values an in. filter may list, and on a json or jsonb column (whole documents compared). */
export const MAX_IN_VALUES = 500
export const MAX_IN_JSON_VALUES = 10

/** What a query string asks of each resource, by its path in the select tree ('' for the top). */
export interface Shape {
  filters: Map<string, Condition[]>
  orders: Map<string, OrderTerm[]>
  pages: Map<string, { limit: number | null; offset: number }>
}

const int = (v: string, what: string) => {
  if (!/^\d{1,9}$/.test(v)) throw badRequest(`${what} must be a whole number: "${v}"`)
  return Number(v)
}

/** Reads the filters, logic trees, orders and embedded limits of a query string; `skip` names parameters that are not filters (a function's arguments). */
export function readShape(query: URLSearchParams, skip: ReadonlySet<string> = new Set()): Shape {
  const shape: Shape = { filters: new Map(), orders: new Map(), pages: new Map() }
  const add = (path: string, c: Condition) => shape.filters.set(path, [...(shape.filters.get(path) ?? []), c])
  for (const [key, value] of query) {
    if (key === 'order') shape.orders.set('', parseOrder(value))
    if (RESERVED.has(key) || skip.has(key)) continue
    const arrow = key.indexOf('->')
    const head = arrow === -1 ? key : key.slice(0, arrow)
    const segments = head.split('.')
    const last = segments[segments.length - 1]!
    if (last === 'or' || last === 'and') {
      const negate = segments[segments.length - 2] === 'not'
      const path = segments.slice(0, negate ? -2 : -1).join('.')
      add(path, parseLogic(last, negate, value))
    } else if (arrow === -1 && segments.length > 1 && (last === 'order' || last === 'limit' || last === 'offset')) {
      const path = segments.slice(0, -1).join('.')
      if (last === 'order') shape.orders.set(path, parseOrder(value))
      else {
        const page = shape.pages.get(path) ?? { limit: null, offset: 0 }
        if (last === 'limit') page.limit = int(value, `${key}`)
        else page.offset = int(value, `${key}`)
        shape.pages.set(path, page)
      }
    } else {
      const path = segments.slice(0, -1).join('.')
      add(path, parseOperation(parseField(last + (arrow === -1 ? '' : key.slice(arrow))), value))
    }
  }
  return shape
}

/** Holds the statement's parameters and names its table aliases. */
export class Builder {
  readonly params: unknown[] = []
  #aliases = 1
  readonly catalog: Catalog
  readonly schema: string
  readonly shape: Shape
  constructor(catalog: Catalog, schema: string, shape: Shape) {
    this.catalog = catalog
    this.schema = schema
    this.shape = shape
  }

  alias(): string {
    return `t${this.#aliases++}`
  }

  param(value: unknown, cast: string): string {
    this.params.push(value)
    const base = cast.endsWith('[]') ? 'text[]' : 'text'
    return cast === base ? `$${this.params.length}::${base}` : `$${this.params.length}::${base}::${cast}`
  }

  /** A column (through its JSON path) of `rel` under `alias`, and the type of what it gives. */
  field(rel: Relation, alias: string, f: FieldRef): { sql: string; type: string } {
    let type = rel.columns.get(f.name)
    let sql = `${alias}.${ident(f.name)}`
    // a computed field: a function of the row, read as a column
    const computed = type === undefined ? rel.computed?.get(f.name) : undefined
    if (computed && !computed.table && !computed.set) {
      type = computed.type
      sql = `${ident(rel.schema)}.${ident(f.name)}(${alias})`
    }
    if (type === undefined && f.name === 'count' && f.path.length === 0) throw new RestError(400, 'PGRST123', 'Use of aggregate functions is not allowed')
    if (type === undefined) throw new RestError(400, '42703', `column ${rel.name}.${f.name} does not exist`)
    let out = type
    for (const step of f.path) {
      const key = /^-?\d+$/.test(step.key) ? step.key : `'${step.key.replaceAll("'", "''")}'`
      sql += `${step.arrow}${key}`
      out = step.arrow === '->>' ? 'text' : type === 'json' ? 'json' : 'jsonb'
    }
    return { sql, type: out }
  }

  condition(rel: Relation, alias: string, c: Condition): string {
    if (c.kind === 'logic') {
      const inner = c.children.map((child) => this.condition(rel, alias, child)).join(` ${c.op} `)
      return c.negate ? `not (${inner})` : `(${inner})`
    }
    const { sql: col, type } = this.field(rel, alias, c.field)
    const sql = this.#operation(col, type, c)
    return c.negate ? `not (${sql})` : sql
  }

  #operation(col: string, type: string, c: Extract<Condition, { kind: 'op' }>): string {
    const v = c.value
    const jsonValue = (text: string) => {
      if (/^jsonb?(\[\])*$/.test(type) && jsonDepth(text) > MAX_JSON_DEPTH) {
        throw badRequest(`A json value nested deeper than ${MAX_JSON_DEPTH} levels (${c.field.name})`)
      }
      return text
    }
    const compare: Record<string, string> = {
      eq: '=',
      neq: '<>',
      gt: '>',
      gte: '>=',
      lt: '<',
      lte: '<=',
      like: 'like',
      ilike: 'ilike',
      match: '~',
      imatch: '~*',
    }
    if (c.op in compare) {
      const op = compare[c.op]!
      const textual = c.op === 'like' || c.op === 'ilike' || c.op === 'match' || c.op === 'imatch'
      const value = c.op === 'like' || c.op === 'ilike' ? v.replaceAll('*', '%') : v
      if (c.modifier) return `${col} ${op} ${c.modifier}(${this.param(jsonValue(value), textual ? 'text[]' : `${type}[]`)})`
      return `${col} ${op} ${this.param(jsonValue(value), textual ? 'text' : type)}`
    }
    switch (c.op) {
      case 'in': {
        const list = parseList(v)
        const most = type === 'jsonb' || type === 'json' ? MAX_IN_JSON_VALUES : MAX_IN_VALUES
        if (list.length > most) {
          throw badRequest(
            `in. takes at most ${most} values${most === MAX_IN_JSON_VALUES ? ` on a ${type} column` : ''}; "${c.field.name}" was given ${list.length}`,
          )
        }
        for (const item of list) jsonValue(item)
        return `${col} = any(${this.param(list, `${type}[]`)})`
      }
      case 'is': {
        const keyword = { null: 'null', not_null: 'not null', true: 'true', false: 'false', unknown: 'unknown' }[v.toLowerCase()]
        if (!keyword) throw new RestError(400, 'PGRST100', `"failed to parse filter (is.${v})"`, 'is. takes null, not_null, true, false or unknown')
        return `${col} is ${keyword}`
      }
      case 'isdistinct':
        return `${col} is distinct from ${this.param(jsonValue(v), type)}`
      case 'fts':
      case 'plfts':
      case 'phfts':
      case 'wfts': {
        const fn = { fts: 'to_tsquery', plfts: 'plainto_tsquery', phfts: 'phraseto_tsquery', wfts: 'websearch_to_tsquery' }[c.op]
        const config = c.config === null ? '' : `${this.param(c.config, 'regconfig')}, `
        const vector = type === 'tsvector' ? col : `to_tsvector(${config}${col})`
        return `${vector} @@ ${fn}(${config}${this.param(v, 'text')})`
      }
      default: {
        const op = { cs: '@>', cd: '<@', ov: '&&', sl: '<<', sr: '>>', nxr: '&<', nxl: '&>', adj: '-|-' }[c.op]
        if (!op || !OPERATORS.has(c.op)) throw new RestError(400, 'PGRST100', `"failed to parse filter (${c.op}.${v})"`, `unknown operator "${c.op}"`)
        return `${col} ${op} ${this.param(jsonValue(v), type)}`
      }
    }
  }

  /** The WHERE of a resource: `extra` (joins, embeds' conditions) and its own filters, but for the presence tests of its embeds (`embeds`: their names), which list() makes. */
  where(rel: Relation, alias: string, path: string, extra: string[], embeds: ReadonlySet<string>): string {
    const own = (this.shape.filters.get(path) ?? []).filter((c) => !isPresence(c, embeds, rel)).map((c) => this.condition(rel, alias, c))
    const parts = [...extra, ...own]
    return parts.length === 0 ? '' : ` where ${parts.join(' and ')}`
  }

  order(rel: Relation, alias: string, terms: OrderTerm[] | undefined): string {
    if (!terms || terms.length === 0) return ''
    return ` order by ${
      terms.map((t) => [this.field(rel, alias, t.field).sql, t.direction, t.nulls && `nulls ${t.nulls}`].filter(Boolean).join(' ')).join(', ')
    }`
  }

  /** The select list of `items` read from `rel` under `alias`, and conditions its !inner embeds put on the rows. */
  async list(rel: Relation, alias: string, items: SelectItem[], path: string): Promise<{ sql: string; conditions: string[] }> {
    const out: string[] = []
    const conditions: string[] = []
    const names = new Set<string>()
    const embeds = new Set<string>()
    for (const item of items) {
      // a name given twice is read once: the row has one key of that name either way (and a query string
      // of repeats cannot make each row its length times as large)
      if (item.kind === 'star') {
        if (names.has('*')) continue
        names.add('*')
        out.push(`${alias}.*`)
        continue
      }
      if (item.kind === 'field') {
        const { sql } = this.field(rel, alias, item.field)
        const name = item.alias ?? (item.field.path.length > 0 ? item.field.path[item.field.path.length - 1]!.key : item.field.name)
        if (names.has(name) || (names.has('*') && rel.columns.has(name) && item.field.path.length === 0 && !item.cast && !item.alias)) continue
        names.add(name)
        out.push(`${item.cast ? `(${sql})::${item.cast}` : sql} as ${ident(name)}`)
        continue
      }
      const name = item.alias ?? item.name
      if (names.has(name)) throw badRequest(`select names "${name}" more than once`)
      names.add(name)
      embeds.add(name)
      const childPath = path === '' ? name : `${path}.${name}`
      const rs = await relationshipBetween(this.catalog, this.schema, rel, item.name, item.hint)
      const child = rs.child
      const a = this.alias()
      const join = rs.kind === 'fk' ? rs.pairs.map(([p, c]) => `${a}.${ident(c)} = ${alias}.${ident(p)}`) : []
      // a computed relationship's rows come from its function of the parent's row
      const source = rs.kind === 'fk' ? `${relationSql(child)} ${a}` : `${ident(this.schema)}.${ident(rs.fn)}(${alias}) ${a}`
      const inner = await this.list(child, a, item.items.length === 0 ? [{ kind: 'star' }] : item.items, childPath)
      // an embed with an empty select (`users()`) filters its parent and is not in the rows
      if (item.items.length > 0) {
        const where = this.where(child, a, childPath, [...join, ...inner.conditions], embedNames(item.items))
        const page = this.shape.pages.get(childPath)
        const order = this.order(child, a, this.shape.orders.get(childPath))
        const limits = `${page?.limit != null ? ` limit ${page.limit}` : ''}${page?.offset ? ` offset ${page.offset}` : ''}`
        const from = `from ${source}${where}`
        out.push(
          rs.toOne
            ? `(select row_to_json(_s) from (select ${inner.sql} ${from} limit 1) _s) as ${ident(name)}`
            : `coalesce((select json_agg(_s) from (select ${inner.sql} ${from}${order}${limits}) _s), '[]'::json) as ${ident(name)}`,
        )
      }
      // !inner: only rows whose embed is not empty; a filter `name=not.is.null` (or `is.null`) on the parent does the same (or the opposite)
      const again = () => `exists (select 1 from ${source}${this.where(child, a, childPath, [...join, ...inner.conditions], embedNames(item.items))})`
      if (item.inner) conditions.push(again())
      for (const c of this.shape.filters.get(path) ?? []) {
        if (c.kind !== 'op' || c.field.name !== name || c.field.path.length > 0 || rel.columns.has(name)) continue
        if (c.op !== 'is' || c.value.toLowerCase() !== 'null') {
          throw new RestError(
            400,
            'PGRST120',
            `Bad operator on the '${name}' embedded resource`,
            'Only is null or not is null filters are allowed on embedded resources',
          )
        }
        conditions.push(c.negate ? again() : `not ${again()}`)
      }
    }
    // filters of this resource on embeds it does not select: PostgREST's PGRST108
    for (const key of [...this.shape.filters.keys(), ...this.shape.orders.keys(), ...this.shape.pages.keys()]) {
      const parent = key.includes('.') ? key.slice(0, key.lastIndexOf('.')) : ''
      const own = key.includes('.') ? key.slice(key.lastIndexOf('.') + 1) : key
      if (key !== '' && parent === path && !embeds.has(own)) {
        throw new RestError(
          400,
          'PGRST108',
          `'${own}' is not an embedded resource in this request`,
          null,
          `Verify that '${own}' is included in the 'select' query parameter.`,
        )
      }
    }
    return { sql: out.join(', '), conditions }
  }
}

/** The names (aliases where given) of the embeds of a select list. */
export function embedNames(items: SelectItem[]): Set<string> {
  return new Set(items.flatMap((i) => (i.kind === 'embed' ? [i.alias ?? i.name] : [])))
}

/** A filter on an embed's name rather than a column (`child=not.is.null`): list() makes it a condition. */
function isPresence(c: Condition, embeds: ReadonlySet<string>, rel: Relation): boolean {
  return c.kind === 'op' && c.field.path.length === 0 && embeds.has(c.field.name) && !rel.columns.has(c.field.name)
}

/** How deeply JSON text nests (brackets in strings left out). */
export function jsonDepth(text: string): number {
  let depth = 0
  let most = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]
    if (inString) {
      if (ch === '\\') i++
      else if (ch === '"') inString = false
    } else if (ch === '"') inString = true
    else if (ch === '[' || ch === '{') most = Math.max(most, ++depth)
    else if (ch === ']' || ch === '}') depth--
  }
  return most
}
