// What one wallet cycle writes, read from PostgreSQL's own counters of the cycle's transaction
// (pg_stat_xact_user_tables, then rolled back): the rows each table gains or changes, the updates that
// had to write every index again (not HOT), and the index entries that follow. A write the invariants
// do not need shows up here before it shows up in the time.
import type { Sql } from '../../functions-shared/db/client.ts'

interface TableWrites {
  table: string
  inserted: number
  updated: number
  hot: number
  indexes: number
  /** index entries written: an insert or a non-HOT update writes one in every index (partial ones included, as an upper bound) */
  entries: number
}

/** Runs `cycle` in a transaction that is rolled back, and returns what it wrote per table. */
export async function writesOf(sql: Sql, cycle: (tx: Sql) => Promise<void>): Promise<TableWrites[]> {
  // the counters also hold what earlier transactions of the connection wrote and the server has not
  // gathered yet: read before and after the cycle, in its transaction, and subtracted
  const read = (tx: Sql) =>
    tx<TableWrites[]>`
      select s.schemaname || '.' || s.relname as table, s.n_tup_ins::int as inserted, s.n_tup_upd::int as updated, s.n_tup_hot_upd::int as hot,
             (select count(*)::int from pg_index i where i.indrelid = s.relid) as indexes, 0 as entries
        from pg_stat_xact_user_tables s order by 1`
  let rows: TableWrites[] = []
  await sql
    .begin(async (tx) => {
      const before = new Map((await read(tx as unknown as Sql)).map((r) => [r.table, r]))
      await cycle(tx as unknown as Sql)
      rows = (await read(tx as unknown as Sql))
        .map((r) => {
          const b = before.get(r.table)
          return { ...r, inserted: r.inserted - (b?.inserted ?? 0), updated: r.updated - (b?.updated ?? 0), hot: r.hot - (b?.hot ?? 0) }
        })
        .filter((r) => r.inserted + r.updated > 0)
      throw new RolledBack()
    })
    .catch((err) => {
      if (!(err instanceof RolledBack)) throw err
    })
  return rows.map((r) => ({ ...r, entries: (r.inserted + r.updated - r.hot) * r.indexes }))
}

class RolledBack extends Error {}

/** The table of writes, one line per table and a total. */
export function printWrites(title: string, rows: TableWrites[]): void {
  console.log(`\n${title}`)
  console.log('table                              rows inserted   rows updated (HOT)   indexes   index entries')
  for (const r of rows) {
    console.log(
      `${r.table.padEnd(34)} ${String(r.inserted).padStart(13)}   ${`${r.updated} (${r.hot})`.padStart(18)}   ${String(r.indexes).padStart(7)}   ${
        String(r.entries).padStart(13)
      }`,
    )
  }
  const sum = (f: (r: TableWrites) => number) => rows.reduce((s, r) => s + f(r), 0)
  console.log(
    `${'total'.padEnd(34)} ${String(sum((r) => r.inserted)).padStart(13)}   ${`${sum((r) => r.updated)} (${sum((r) => r.hot)})`.padStart(18)}   ${
      ''.padStart(7)
    }   ${String(sum((r) => r.entries)).padStart(13)}`,
  )
}
