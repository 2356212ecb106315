// bench:chat's retrieval part: the HNSW indexes of public.vectors, rebuilt after a bulk load, and the
// blocks a database has read from outside shared buffers.
import type { Sql } from '../../functions-shared/db/client.ts'

// the HNSW indexes of public.vectors (the index of every chunk, then one per subject): dropped before a
// bulk load, built after it
export async function hnswIndexes(sql: Sql): Promise<{ name: string; def: string }[]> {
  return (await sql`select indexname as name, indexdef as def from pg_indexes
                     where schemaname = 'public' and tablename = 'vectors' and indexdef like '%USING hnsw%'
                     order by indexname <> 'vectors_embedding_hnsw_idx', indexname`) as unknown as { name: string; def: string }[]
}

export async function rebuildIndexes(sql: Sql, defs: { name: string; def: string }[]): Promise<number> {
  const started = performance.now()
  await sql.begin(async (tx) => {
    await tx`set local maintenance_work_mem = '1GB'`
    for (const { name, def } of defs) {
      await tx.unsafe(`drop index if exists public.${name}`)
      await tx.unsafe(def)
    }
  })
  // the statistics autovacuum would gather: the vectors, the chunks' search vectors, the lexeme counts
  await sql`analyze public.vectors, public.document_chunks, private.search_lexemes`
  return (performance.now() - started) / 1000
}

// the blocks this database has read from outside shared buffers so far (the statistics flushed first)
export async function blocksRead(sql: Sql): Promise<number> {
  await sql`select pg_stat_force_next_flush()`
  const [r] = await sql`select blks_read::float8 as n from pg_stat_database where datname = current_database()`
  await sql`select pg_stat_clear_snapshot()`
  return Number(r!.n)
}
