// Store shared by several instances. One statement per check: the upsert's row lock serializes
// concurrent checks of one key, and SET sees the locked, latest hits, so no read-then-write race.
import type { Sql } from '../../db/client.ts'
import { decide, type RateLimitDecision, type RateLimitStore } from './store.ts'

export class PostgresRateLimitStore implements RateLimitStore {
  readonly #sql: Sql
  #checks = 0

  constructor(sql: Sql) {
    this.#sql = sql
  }

  async hit(key: string, limit: number, windowMs: number, nowMs: number): Promise<RateLimitDecision> {
    const since = nowMs - windowMs
    // hits is a bigint[]: postgres.js reads its elements as strings
    const [row] = await this.#sql<{ allowed: boolean; hits: string[] }[]>`
      insert into private.rate_limits as r (key, hits, allowed, updated_at)
      values (${key}, array[${nowMs}::bigint], true, now())
      on conflict (key) do update set
        hits = case
          when cardinality(array(select h from unnest(r.hits) h where h > ${since}::bigint)) < ${limit}::int
            then array(select h from unnest(r.hits) h where h > ${since}::bigint order by h) || ${nowMs}::bigint
          else array(select h from unnest(r.hits) h where h > ${since}::bigint order by h)
        end,
        allowed = cardinality(array(select h from unnest(r.hits) h where h > ${since}::bigint)) < ${limit}::int,
        updated_at = now()
      returning allowed, hits`
    if (++this.#checks % 1000 === 0) void this.#sweep(windowMs)
    const hits = row!.hits.map(Number)
    return decide(hits, row!.allowed, limit, windowMs, nowMs)
  }

  async #sweep(windowMs: number): Promise<void> {
    await this.#sql`delete from private.rate_limits where updated_at < now() - make_interval(secs => ${(windowMs / 1000) * 2})`.catch(() => {})
  }
}
