// PostgREST's query grammar, read as PostgREST reads it: select= (columns, aliases, casts, JSON paths,
// embedded resources with hints and !inner), the filters of every resource (`col=op.value`,
// `child.col=...`, negation, any/all modifiers, full-text configurations), the logic trees `or`/`and`
// (nested, negated) and order=. The result is a tree that build.ts turns into SQL; a name is checked
// against the catalogue there, not here.
import { badRequest, outsideSubset, RestError } from './errors.ts'

export interface JsonStep {
  arrow: '->' | '->>'
  key: string
}

/** A column as a query names it: `name`, `name->a->>b`. */
export interface FieldRef {
  name: string
  path: JsonStep[]
}

export type SelectItem =
  | { kind: 'star' }
  | { kind: 'field'; field: FieldRef; alias: string | null; cast: string | null }
  | { kind: 'embed'; name: string; alias: string | null; hint: string | null; inner: boolean; items: SelectItem[] }

export type Condition =
  | { kind: 'op'; field: FieldRef; negate: boolean; op: string; modifier: 'any' | 'all' | null; config: string | null; value: string }
  | { kind: 'logic'; op: 'and' | 'or'; negate: boolean; children: Condition[] }

export interface OrderTerm {
  field: FieldRef
  direction: 'asc' | 'desc' | null
  nulls: 'first' | 'last' | null
}

export const OPERATORS = new Set([
  'eq',
  'neq',
  'gt',
  'gte',
  'lt',
  'lte',
  'like',
  'ilike',
  'match',
  'imatch',
  'in',
  'is',
  'isdistinct',
  'fts',
  'plfts',
  'phfts',
  'wfts',
  'cs',
  'cd',
  'ov',
  'sl',
  'sr',
  'nxr',
  'nxl',
  'adj',
])
const MODIFIABLE = new Set(['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'like', 'ilike', 'match', 'imatch'])
const FTS = new Set(['fts', 'plfts', 'phfts', 'wfts'])
const IDENT = /^[\p{L}_][\p{L}\p{N}_$]{0,62}$/u
const TYPE = /^[A-Za-z_][A-Za-z0-9_ ]*(\([0-9, ]+\))?(\[\])*$/

/** A query string parameter PostgREST reads itself rather than as a filter. */
export const RESERVED = new Set(['select', 'order', 'limit', 'offset', 'columns', 'on_conflict'])

export const parseError = (message: string, details: string) => new RestError(400, 'PGRST100', message, details)

/** Splits at top-level commas: parentheses, braces, brackets and double-quoted strings kept whole. */
export function splitTopLevel(text: string): string[] {
  const parts: string[] = []
  let depth = 0
  let quoted = false
  let start = 0
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]
    if (quoted) {
      if (ch === '\\') i++
      else if (ch === '"') quoted = false
    } else if (ch === '"') quoted = true
    else if (ch === '(' || ch === '{' || ch === '[') depth++
    else if (ch === ')' || ch === '}' || ch === ']') depth--
    else if (ch === ',' && depth === 0) {
      parts.push(text.slice(start, i))
      start = i + 1
    }
  }
  if (depth !== 0 || quoted) throw parseError(`"failed to parse" ${text}`, 'unbalanced parentheses or quotes')
  parts.push(text.slice(start))
  return parts
}

function unquote(name: string): string {
  const t = name.trim()
  return t.length >= 2 && t.startsWith('"') && t.endsWith('"') ? t.slice(1, -1).replaceAll('\\"', '"') : t
}

/** A name written bare must be a plain identifier; one written in double quotes may hold anything printable (it is quoted again in SQL). */
const QUOTED = /^[^\p{C}]{1,63}$/u

export function checkName(name: string, what: string, quoted = false): string {
  if (!(quoted ? QUOTED : IDENT).test(name)) throw badRequest(`"${name}" is not a plain ${what} name`)
  return name
}

const isQuoted = (raw: string) => {
  const t = raw.trim()
  return t.length >= 2 && t.startsWith('"') && t.endsWith('"')
}

/** `name`, `name->a->>b` (a key may be quoted, or a number for an array's element). */
export function parseField(text: string): FieldRef {
  const m = /^("(?:[^"\\]|\\.)*"|[^-]+?)((?:->>?(?:"(?:[^"\\]|\\.)*"|[^-]+))*)$/u.exec(text.trim())
  if (!m) throw parseError(`"failed to parse" ${text}`, `"${text}" is not a column or a JSON path`)
  const name = checkName(unquote(m[1]!), 'column', isQuoted(m[1]!))
  const path: JsonStep[] = []
  for (const step of m[2]!.matchAll(/(->>?)("(?:[^"\\]|\\.)*"|[^-]+)/gu)) path.push({ arrow: step[1] as '->' | '->>', key: unquote(step[2]!) })
  return { name, path }
}

/**
 * How deep a select may nest embedded resources, how many it may name in all, how deep a logic tree may
 * nest and how many conditions it may hold. Each level is parsed from its own text again and becomes a
 * subquery: a self-referencing table let one query string nest a thousand levels, a query PostgreSQL
 * plans for seconds (and the parsing alone was quadratic in the length). An app's queries stay far below.
 */
export const MAX_EMBED_DEPTH = 10
export const MAX_EMBEDS = 40
export const MAX_LOGIC_DEPTH = 10
export const MAX_LOGIC_CONDITIONS = 200

/** select=: the tree of what a request reads. */
export function parseSelect(text: string | null, depth = 0, count = { embeds: 0 }): SelectItem[] {
  if (text === null || text.trim() === '') return [{ kind: 'star' }]
  if (depth > MAX_EMBED_DEPTH) throw parseError(`"failed to parse select parameter"`, `embedded resources nest at most ${MAX_EMBED_DEPTH} levels deep`)
  return splitTopLevel(text).map((raw) => parseItem(raw.trim(), text, depth, count))
}

function parseItem(raw: string, whole: string, depth: number, count: { embeds: number }): SelectItem {
  if (raw === '*') return { kind: 'star' }
  if (raw === '') throw parseError(`"failed to parse select parameter (${whole})"`, 'an empty item')
  if (raw.startsWith('...')) throw outsideSubset(`A spread embedding ("${raw}")`)
  // aggregates (`count()`, `id.sum()`, a bare `count` column of an embed): hosted projects keep
  // db-aggregates-enabled off, and PostgREST then refuses them (a bare `count` that is no column: build.ts)
  const aggregate = () => new RestError(400, 'PGRST123', 'Use of aggregate functions is not allowed')
  if (/^(?:[^:(]+:)?(?:[^(]+\.)?(count|sum|avg|min|max)\(\)(::\w+)?$/i.test(raw)) throw aggregate()
  const open = raw.indexOf('(')
  if (open !== -1) {
    if (!raw.endsWith(')')) throw parseError(`"failed to parse select parameter (${whole})"`, `"${raw}"`)
    const head = raw.slice(0, open)
    const body = raw.slice(open + 1, -1)
    const [aliasPart, target] = head.includes(':') ? [head.slice(0, head.indexOf(':')), head.slice(head.indexOf(':') + 1)] : [null, head]
    const [name, ...marks] = target!.split('!')
    let hint: string | null = null
    let inner = false
    for (const mark of marks) {
      if (mark === 'inner') inner = true
      else if (mark === 'left') inner = false
      else if (hint === null) hint = checkName(unquote(mark), 'relationship hint')
      else throw parseError(`"failed to parse select parameter (${whole})"`, `"${raw}" has more than one hint`)
    }
    // an empty select (`users()`) is kept empty: the embed filters its parent and is left out of the rows
    if (++count.embeds > MAX_EMBEDS) throw parseError(`"failed to parse select parameter"`, `a select names at most ${MAX_EMBEDS} embedded resources`)
    return {
      kind: 'embed',
      name: checkName(unquote(name!), 'table'),
      alias: aliasPart === null ? null : checkName(unquote(aliasPart), 'alias'),
      hint,
      inner,
      items: body.trim() === '' ? [] : parseSelect(body, depth + 1, count),
    }
  }
  let rest = raw
  let alias: string | null = null
  const colon = /^("(?:[^"\\]|\\.)*"|[^:"]+):(?!:)/u.exec(rest)
  if (colon) {
    alias = checkName(unquote(colon[1]!), 'alias')
    rest = rest.slice(colon[0].length)
  }
  let cast: string | null = null
  const castAt = rest.lastIndexOf('::')
  if (castAt !== -1) {
    cast = rest.slice(castAt + 2).trim()
    if (!TYPE.test(cast)) throw parseError(`"failed to parse select parameter (${whole})"`, `"${cast}" is not a type`)
    rest = rest.slice(0, castAt)
  }
  return { kind: 'field', field: parseField(rest), alias, cast }
}

/** `[not.]op[(any|all)|(config)].value` of a filter. */
export function parseOperation(field: FieldRef, raw: string): Condition {
  let rest = raw
  let negate = false
  if (rest.startsWith('not.')) {
    negate = true
    rest = rest.slice(4)
  }
  const m = /^([a-z]+)(?:\(([^)]*)\))?\.([\s\S]*)$/.exec(rest)
  if (!m || !OPERATORS.has(m[1]!)) {
    const op = /^([a-z]+)/.exec(rest)?.[1] ?? rest
    throw parseError(`"failed to parse filter (${raw})"`, `unknown operator "${op}"`)
  }
  const op = m[1]!
  let modifier: 'any' | 'all' | null = null
  let config: string | null = null
  if (m[2] !== undefined) {
    if (FTS.has(op)) config = checkName(m[2], 'text search configuration')
    else if (MODIFIABLE.has(op) && (m[2] === 'any' || m[2] === 'all')) modifier = m[2]
    else throw parseError(`"failed to parse filter (${raw})"`, `"${op}" takes no "(${m[2]})"`)
  }
  return { kind: 'op', field, negate, op, modifier, config, value: m[3]! }
}

/** `or=(a.eq.1,and(b.gt.2,c.is.null))`: the tree, as PostgREST reads a logic parameter. */
export function parseLogic(op: 'and' | 'or', negate: boolean, raw: string, depth = 0, count = { conditions: 0 }): Condition {
  const text = raw.trim()
  if (depth >= MAX_LOGIC_DEPTH) throw parseError(`"failed to parse logic tree"`, `a logic tree nests at most ${MAX_LOGIC_DEPTH} levels deep`)
  if (!text.startsWith('(') || !text.endsWith(')')) {
    throw parseError(`"failed to parse logic tree (${raw})"`, 'a logic tree is a list in parentheses: or=(a.eq.1,b.eq.2)')
  }
  const children = splitTopLevel(text.slice(1, -1)).map((part) => {
    const p = part.trim()
    const nested = /^(not\.)?(and|or)(\([\s\S]*\))$/.exec(p)
    if (nested) return parseLogic(nested[2] as 'and' | 'or', nested[1] !== undefined, nested[3]!, depth + 1, count)
    if (++count.conditions > MAX_LOGIC_CONDITIONS) {
      throw parseError(`"failed to parse logic tree"`, `a logic tree holds at most ${MAX_LOGIC_CONDITIONS} conditions`)
    }
    // field.[not.]op.value: the field ends at the dot before the operator
    const m = /^("(?:[^"\\]|\\.)*"|[^.]+?)\.((?:not\.)?[a-z]+(?:\([^)]*\))?\.[\s\S]*)$/.exec(p)
    if (!m) throw parseError(`"failed to parse logic tree (${raw})"`, `"${p}" is not field.operator.value`)
    const c = parseOperation(parseField(m[1]!), m[2]!)
    // a value in a tree may be quoted to hold a comma or parentheses (an in. list unquotes its own)
    if (c.kind === 'op' && c.op !== 'in') c.value = unquoteValue(c.value)
    return c
  })
  if (children.length === 0 || (children.length === 1 && children[0] === undefined)) throw parseError(`"failed to parse logic tree (${raw})"`, 'an empty tree')
  return { kind: 'logic', op, negate, children }
}

/** order=col.desc.nullslast,data->a.asc */
export function parseOrder(text: string): OrderTerm[] {
  return splitTopLevel(text).map((term) => {
    const t = term.trim()
    if (/\(/.test(t)) throw outsideSubset(`Ordering by an embedded resource's column ("${t}")`)
    const parts = t.split('.')
    const mods: string[] = []
    while (parts.length > 1 && ['asc', 'desc', 'nullsfirst', 'nullslast'].includes(parts[parts.length - 1]!)) mods.unshift(parts.pop()!)
    const term2: OrderTerm = { field: parseField(parts.join('.')), direction: null, nulls: null }
    for (const mod of mods) {
      if (mod === 'asc' || mod === 'desc') term2.direction = mod
      else term2.nulls = mod === 'nullsfirst' ? 'first' : 'last'
    }
    return term2
  })
}

/** `(a,b,"c,d")` of an in. filter. */
export function parseList(raw: string): string[] {
  if (!raw.startsWith('(') || !raw.endsWith(')')) throw parseError(`"failed to parse filter (in.${raw})"`, 'in. takes a list in parentheses, e.g. in.(1,2,3)')
  const body = raw.slice(1, -1)
  if (body.trim() === '') return []
  return splitTopLevel(body).map((v) => {
    const t = v.trim()
    return t.length >= 2 && t.startsWith('"') && t.endsWith('"') ? t.slice(1, -1).replace(/\\(.)/g, '$1') : t
  })
}

/** A value as a logic tree may quote it: `"a,b"` → `a,b`. */
export function unquoteValue(value: string): string {
  return value.length >= 2 && value.startsWith('"') && value.endsWith('"') ? value.slice(1, -1).replace(/\\(.)/g, '$1') : value
}
