// Near-duplicate lookup among N stored fingerprints (default 1,000,000): the four-block pigeonhole
// lookup (public.find_near_duplicates) against a full scan, in the same run on the same data.
// Prints lookups per second for both and the ratio. Asserts nothing.
// Run: BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:dedup
// (without it: the embedded PGlite, with 100,000 fingerprints unless BENCH_FINGERPRINTS is set).
import type { Sql } from '../functions-shared/db/client.ts'
import { scratchDatabase } from './lib/scratch-db.ts'
import { machine } from './lib/machine.ts'

const serverUrl = process.env.BENCH_DATABASE_URL
const N = Number(process.env.BENCH_FINGERPRINTS ?? (serverUrl ? 1_000_000 : 100_000))
const LOOKUPS = Number(process.env.BENCH_LOOKUPS ?? 2000)
const SCANS = Number(process.env.BENCH_SCANS ?? 10)

const db = await scratchDatabase('dedup')
const sql: Sql = db.sql
machine(db.label)
let t = performance.now()
await sql`insert into public.curriculum_references (source, pdf_source, source_url, content_fingerprint)
          select 'bench', 'http://portal.bench/' || g || '.pdf', 'http://portal.bench/' || g || '.pdf', ('x' || md5(g::text))::bit(64)::bigint
            from generate_series(1, ${N}::int) g`
await sql`analyze public.curriculum_references`
console.log(
  `database: ${db.label}; ${N.toLocaleString('en')} fingerprints loaded in ${((performance.now() - t) / 1000).toFixed(1)} s\n`,
)

// queries: stored fingerprints with 0-3 bits flipped (hits) and fresh random ones (misses), half each
const queries = (await sql`select content_fingerprint as fp from public.curriculum_references order by random() limit ${LOOKUPS / 2}`).map((r) =>
  BigInt(r.fp as string)
)
for (let i = 0; i < LOOKUPS / 2; i++) {
  const q = queries[i]!
  const flips = [0, 1, 2].slice(0, i % 4).map((k) => 1n << BigInt(k * 16 + (i % 16)))
  queries[i] = BigInt.asIntN(64, flips.reduce((x, f) => x ^ f, q))
  queries.push(BigInt.asIntN(64, BigInt(`0x${crypto.randomUUID().replaceAll('-', '').slice(0, 16)}`)))
}

t = performance.now()
let hits = 0
for (const q of queries) hits += (await sql`select id from public.find_near_duplicates(${q.toString()}::bigint)`).length > 0 ? 1 : 0
const indexedPerSecond = queries.length / ((performance.now() - t) / 1000)

t = performance.now()
for (const q of queries.slice(0, SCANS)) {
  await sql`select id from public.curriculum_references where bit_count((content_fingerprint # ${q.toString()}::bigint)::bit(64)) <= 3`
}
const scanPerSecond = SCANS / ((performance.now() - t) / 1000)

console.log(
  `pigeonhole (block indexes)   ${indexedPerSecond.toFixed(0).padStart(9)} lookups/s   ${
    (1000 / indexedPerSecond).toFixed(3)
  } ms each   (${hits} of ${queries.length} found a near-duplicate)`,
)
console.log(`full scan                    ${scanPerSecond.toFixed(2).padStart(9)} lookups/s   ${(1000 / scanPerSecond).toFixed(1)} ms each`)
console.log(`ratio                        ${(indexedPerSecond / scanPerSecond).toFixed(0)}x`)

await db.close()
