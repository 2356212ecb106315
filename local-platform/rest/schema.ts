// What /rest/v1 knows of the schema, read from the catalogue within the request's transaction (so a
// migration is seen at once, with no cache to reload): a relation's columns and primary key, the foreign
// keys that link two tables (PostgREST's relationships), and the functions of a name.
import type { Tx } from '../../functions-shared/db/client.ts'
import { RestError } from './errors.ts'

export interface Relation {
  schema: string
  name: string
  /** column name → its type as format_type writes it */
  columns: Map<string, string>
  primaryKey: string[]
  /** the column sets of its unique indexes (the primary key's among them) */
  uniques?: string[][]
  /** functions of its row (`fn(table)`): computed fields (a scalar) and computed relationships (a table's rows) */
  computed?: Map<string, { set: boolean; type: string; table: { schema: string; name: string } | null }>
}

export interface ForeignKey {
  constraint: string
  /** the table that holds the key */
  table: string
  columns: string[]
  /** the table it references */
  refTable: string
  refColumns: string[]
}

/** Lookups of one request, each made once. */
export class Catalog {
  readonly #tx: Tx
  readonly #relations = new Map<string, Promise<Relation | null>>()
  readonly #keys = new Map<string, Promise<ForeignKey[]>>()
  constructor(tx: Tx) {
    this.#tx = tx
  }

  get tx(): Tx {
    return this.#tx
  }

  find(schema: string, name: string): Promise<Relation | null> {
    const key = `${schema}.${name}`
    let found = this.#relations.get(key)
    if (!found) {
      found = (async () => {
        const rows = await this.#tx`
          select a.attname as name, format_type(a.atttypid, a.atttypmod) as type,
                 coalesce(a.attnum = any(i.indkey), false) as pk
            from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
            join pg_catalog.pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
            left join pg_catalog.pg_index i on i.indrelid = c.oid and i.indisprimary
           where n.nspname = ${schema} and c.relname = ${name} and c.relkind in ('r', 'v', 'm', 'p', 'f')
           order by a.attnum`
        if (rows.length === 0) return null
        const [uniques, computed] = await Promise.all([
          this.#tx`
            select array(select a.attname::text from unnest(i.indkey) k(n) join pg_catalog.pg_attribute a on a.attrelid = i.indrelid and a.attnum = k.n) as cols
              from pg_catalog.pg_index i join pg_catalog.pg_class c on c.oid = i.indrelid join pg_catalog.pg_namespace n on n.oid = c.relnamespace
             where n.nspname = ${schema} and c.relname = ${name} and i.indisunique and i.indpred is null`,
          this.#tx`
            select p.proname as name, p.proretset as set, format_type(p.prorettype, null) as type,
                   case when tc.relkind in ('r', 'v', 'm', 'p', 'f') then tn.nspname end as table_schema,
                   case when tc.relkind in ('r', 'v', 'm', 'p', 'f') then tc.relname end as table_name
              from pg_catalog.pg_proc p join pg_catalog.pg_namespace n on n.oid = p.pronamespace
              join pg_catalog.pg_type at on at.oid = p.proargtypes[0] join pg_catalog.pg_class ac on ac.oid = at.typrelid
              join pg_catalog.pg_namespace an on an.oid = ac.relnamespace
              join pg_catalog.pg_type rt on rt.oid = p.prorettype
              left join pg_catalog.pg_class tc on tc.oid = rt.typrelid left join pg_catalog.pg_namespace tn on tn.oid = tc.relnamespace
             where n.nspname = ${schema} and p.prokind = 'f' and p.pronargs = 1 and an.nspname = ${schema} and ac.relname = ${name}`,
        ])
        return {
          schema,
          name,
          columns: new Map(rows.map((r) => [r.name as string, r.type as string])),
          primaryKey: rows.filter((r) => r.pk).map((r) => r.name as string),
          uniques: uniques.map((u) => u.cols as string[]),
          computed: new Map(
            computed.map((
              f,
            ) => [f.name as string, {
              set: f.set as boolean,
              type: f.type as string,
              table: f.table_name ? { schema: f.table_schema as string, name: f.table_name as string } : null,
            }]),
          ),
        }
      })()
      this.#relations.set(key, found)
    }
    return found
  }

  async relation(schema: string, name: string): Promise<Relation> {
    const r = await this.find(schema, name)
    if (!r) throw new RestError(404, 'PGRST205', `Could not find the table '${schema}.${name}' in the schema cache`)
    return r
  }

  /** The foreign keys of the schema that `table` holds or that reference it. */
  foreignKeys(schema: string, table: string): Promise<ForeignKey[]> {
    const key = `${schema}.${table}`
    let found = this.#keys.get(key)
    if (!found) {
      found = this.#tx`
        select con.conname as constraint, src.relname as table, dst.relname as ref_table,
               array(select a.attname::text from unnest(con.conkey) with ordinality k(n, i) join pg_catalog.pg_attribute a on a.attrelid = con.conrelid and a.attnum = k.n order by k.i) as columns,
               array(select a.attname::text from unnest(con.confkey) with ordinality k(n, i) join pg_catalog.pg_attribute a on a.attrelid = con.confrelid and a.attnum = k.n order by k.i) as ref_columns
          from pg_catalog.pg_constraint con
          join pg_catalog.pg_class src on src.oid = con.conrelid join pg_catalog.pg_namespace sn on sn.oid = src.relnamespace
          join pg_catalog.pg_class dst on dst.oid = con.confrelid join pg_catalog.pg_namespace dn on dn.oid = dst.relnamespace
         where con.contype = 'f' and sn.nspname = ${schema} and dn.nspname = ${schema} and (src.relname = ${table} or dst.relname = ${table})
         order by con.conname`.then((rows) =>
        rows.map((r) => ({
          constraint: r.constraint as string,
          table: r.table as string,
          columns: r.columns as string[],
          refTable: r.ref_table as string,
          refColumns: r.ref_columns as string[],
        }))
      )
      this.#keys.set(key, found)
    }
    return found
  }
}

/** How an embedded resource is joined to its parent. */
export type Relationship =
  /** over a foreign key: pairs of [parent column, child column]; to-one for many-to-one and one-to-one */
  | { kind: 'fk'; child: Relation; fk: ForeignKey; toOne: boolean; pairs: [string, string][] }
  /** a function of the parent's row that returns rows of a table (a computed relationship) */
  | { kind: 'function'; child: Relation; fn: string; toOne: boolean }

const noRelationship = (schema: string, parent: string, child: string, hint: string | null) =>
  new RestError(
    400,
    'PGRST200',
    `Could not find a relationship between '${parent}' and '${child}' in the schema cache`,
    `Searched for a foreign key relationship between '${parent}' and '${child}'${
      hint ? ` using the hint '${hint}'` : ''
    } in the schema '${schema}', but no matches were found.`,
  )

/** Whether `columns` are a unique key of `rel` (a one-to-one relationship's child side). */
const unique = (rel: Relation, columns: string[]) => (rel.uniques ?? []).some((u) => u.length === columns.length && u.every((c) => columns.includes(c)))

/**
 * What an embed named `target` (with `hint`) of `parent` reaches, as PostgREST resolves it: a table
 * linked by one foreign key (the hint, a key's name or a column of either side, chooses among several),
 * a function of the parent's row, a foreign key column of the parent (its row), or a foreign key's name.
 * PGRST200 when nothing is found, PGRST201 when several keys and no hint.
 */
export async function relationshipBetween(catalog: Catalog, schema: string, parent: Relation, target: string, hint: string | null): Promise<Relationship> {
  const keys = await catalog.foreignKeys(schema, parent.name)
  const table = await catalog.find(schema, target)
  const fkEmbed = async (fk: ForeignKey, manyToOne: boolean): Promise<Relationship> => {
    const child = await catalog.relation(schema, manyToOne ? fk.refTable : fk.table)
    if (manyToOne) return { kind: 'fk', child, fk, toOne: true, pairs: fk.columns.map((c, i) => [c, fk.refColumns[i]!]) }
    return { kind: 'fk', child, fk, toOne: unique(child, fk.columns), pairs: fk.refColumns.map((c, i) => [c, fk.columns[i]!]) }
  }
  if (table) {
    const candidates: { fk: ForeignKey; manyToOne: boolean }[] = []
    for (const fk of keys) {
      if (target === parent.name) {
        // a table embedding itself: its children (the rows whose key points to it), as PostgREST reads it
        if (fk.table === parent.name && fk.refTable === parent.name) candidates.push({ fk, manyToOne: false })
        continue
      }
      if (fk.table === parent.name && fk.refTable === target) candidates.push({ fk, manyToOne: true })
      if (fk.table === target && fk.refTable === parent.name) candidates.push({ fk, manyToOne: false })
    }
    const chosen = hint === null
      ? candidates
      : candidates.filter(({ fk }) => (target !== parent.name && fk.constraint === hint) || fk.columns.includes(hint) || fk.refColumns.includes(hint))
    if (chosen.length === 1) return fkEmbed(chosen[0]!.fk, chosen[0]!.manyToOne)
    if (chosen.length === 0) throw noRelationship(schema, parent.name, target, hint)
    throw new RestError(
      300,
      'PGRST201',
      `Could not embed because more than one relationship was found for '${parent.name}' and '${target}'`,
      chosen.map(({ fk, manyToOne }) => ({
        cardinality: manyToOne ? 'many-to-one' : 'one-to-many',
        embedding: `${parent.name} with ${target}`,
        relationship: manyToOne
          ? `${fk.constraint} using ${fk.table}(${fk.columns.join(', ')}) and ${fk.refTable}(${fk.refColumns.join(', ')})`
          : `${fk.constraint} using ${fk.refTable}(${fk.refColumns.join(', ')}) and ${fk.table}(${fk.columns.join(', ')})`,
      })),
      `Try changing '${target}' to one of the following: ${
        chosen.map(({ fk }) => `'${target}!${fk.constraint}'`).join(', ')
      }. Find the desired relationship in the 'details' key.`,
    )
  }
  const computed = parent.computed?.get(target)
  if (computed?.table) return { kind: 'function', child: await catalog.relation(computed.table.schema, computed.table.name), fn: target, toOne: !computed.set }
  // a foreign key column of the parent (its referenced row), or a foreign key's name
  const byColumn = keys.find((fk) => fk.table === parent.name && fk.columns.length === 1 && fk.columns[0] === target)
  if (byColumn) return fkEmbed(byColumn, true)
  const byName = keys.find((fk) => fk.constraint === target)
  if (byName) return fkEmbed(byName, byName.table === parent.name && !(byName.refTable === parent.name))
  throw noRelationship(schema, parent.name, target, hint)
}
