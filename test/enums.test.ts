// Each set of allowed values is defined once in TypeScript (functions-shared/domain/enums.ts) and equals
// the check constraint of its column in the migrated schema.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { CHECKED_COLUMNS } from '../functions-shared/domain/enums.ts'

let db: TestDatabase
beforeAll(async () => {
  db = await createTestDatabase()
})
afterAll(async () => db?.close())

describe('enums against the schema', () => {
  it('defines every checked set of the schema once, equal to its constraint', async () => {
    const rows = await db.sql`
      select c.conrelid::regclass::text as tbl, pg_get_constraintdef(c.oid) as def
        from pg_constraint c
       where c.contype = 'c' and c.connamespace = 'public'::regnamespace and pg_get_constraintdef(c.oid) like '%= ANY (ARRAY[%'`
    const inSchema: Record<string, string[]> = {}
    for (const r of rows) {
      const m = /^CHECK \(\((\w+) = ANY \(ARRAY\[(.*)\]\)\)\)$/.exec(r.def as string)
      if (!m) continue
      inSchema[`${(r.tbl as string).replace(/^public\./, '')}.${m[1]}`] = [...m[2]!.matchAll(/'([^']*)'::text/g)].map((v) => v[1]!)
    }
    expect(Object.keys(inSchema).sort()).toEqual(Object.keys(CHECKED_COLUMNS).sort())
    for (const [column, values] of Object.entries(CHECKED_COLUMNS)) expect(inSchema[column], column).toEqual([...values])
  })
})
