// What /rest/v1 knows of the schema, read from the catalogue within the request's transaction (so a
// migration is seen at once, with no cache to reload): a relation's columns and primary key, the foreign
// keys that link two tables (PostgREST's relationships), and the functions of a name.
import type { Tx } from '../db/client.ts'
import { RestError } from './errors.ts'

export interface Relation {
  schema: string
  name: string
  /** column name → its type as format_type writes it */
  columns: Map<string, string>
  primaryKey: string[]
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
        return { schema, name, columns: new Map(rows.map((r) => [r.name as string, r.type as string])), primaryKey: rows.filter((r) => r.pk).map((r) => r.name as string) }
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
        rows.map((r) => ({ constraint: r.constraint as string, table: r.table as string, columns: r.columns as string[], refTable: r.ref_table as string, refColumns: r.ref_columns as string[] })),
      )
      this.#keys.set(key, found)
    }
    return found
  }
}

/** How an embedded resource is joined to its parent: which columns of each meet. */
export interface Relationship {
  fk: ForeignKey
  /** the parent holds the key (many-to-one: one object or null) or the child does (one-to-many: an array) */
  toOne: boolean
  /** pairs of [parent column, child column] */
  pairs: [string, string][]
}

/**
 * The relationship between `parent` and the table `child` an embed names, chosen by its hint (a foreign
 * key's name, or a column of either side) when two keys link them; PGRST200 when none, PGRST201 when
 * several and no hint chooses.
 */
export async function relationshipBetween(catalog: Catalog, schema: string, parent: string, child: string, hint: string | null): Promise<Relationship> {
  const keys = await catalog.foreignKeys(schema, parent)
  const candidates: Relationship[] = []
  for (const fk of keys) {
    // the parent holds a key to the child (many-to-one); a self-reference is many-to-one this way
    if (fk.table === parent && fk.refTable === child) candidates.push({ fk, toOne: true, pairs: fk.columns.map((c, i) => [c, fk.refColumns[i]!]) })
    // the child holds a key to the parent (one-to-many)
    if (fk.table === child && fk.refTable === parent && !(parent === child)) candidates.push({ fk, toOne: false, pairs: fk.refColumns.map((c, i) => [c, fk.columns[i]!]) })
  }
  const chosen = hint === null ? candidates : candidates.filter((r) => r.fk.constraint === hint || r.fk.columns.includes(hint) || r.fk.refColumns.includes(hint))
  if (chosen.length === 1) return chosen[0]!
  if (chosen.length === 0) {
    throw new RestError(400, 'PGRST200', `Could not find a relationship between '${parent}' and '${child}' in the schema cache`,
      `Searched for a foreign key relationship between '${parent}' and '${child}'${hint ? ` using the hint '${hint}'` : ''} in the schema '${schema}', but no matches were found.`)
  }
  throw new RestError(300, 'PGRST201', `Could not embed because more than one relationship was found for '${parent}' and '${child}'`,
    chosen.map((r) => ({ cardinality: r.toOne ? 'many-to-one' : 'one-to-many', embedding: `${parent} with ${child}`, relationship: `${r.fk.constraint} using ${r.fk.table}(${r.fk.columns.join(', ')}) and ${r.fk.refTable}(${r.fk.refColumns.join(', ')})` })),
    `Try changing '${child}' to one of the following: ${chosen.map((r) => `'${child}!${r.fk.constraint}'`).join(', ')}. Find the desired relationship in the 'details' key.`)
}
