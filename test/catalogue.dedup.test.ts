// The pigeonhole near-duplicate lookup finds exactly what a full scan finds, and uses the block indexes.
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { toSigned } from '../functions-shared/text/simhash.ts'

let db: TestDatabase
beforeAll(async () => {
  db = await createTestDatabase()
})
afterAll(async () => db?.close())

const u64 = fc.bigInt({ min: 0n, max: 2n ** 64n - 1n })
/** fp with `k` distinct bits flipped */
const flip = (fp: bigint, bits: number[]) => bits.reduce((x, b) => x ^ (1n << BigInt(b)), fp)

async function store(fps: bigint[]) {
  await db.sql`delete from public.curriculum_references`
  const rows = fps.map((fp, i) => ({
    source: 'test',
    pdf_source: `http://portal.test/${i}.pdf`,
    source_url: `http://portal.test/${i}.pdf`,
    content_fingerprint: toSigned(fp).toString(),
  }))
  for (let i = 0; i < rows.length; i += 500) await db.sql`insert into public.curriculum_references ${db.sql(rows.slice(i, i + 500))}`
}

const indexed = async (fp: bigint) =>
  (await db.sql`select content_fingerprint::text as fp from public.find_near_duplicates(${
    toSigned(fp).toString()
  }::bigint) d join public.curriculum_references r using (id)`).map((r) => r.fp as string).sort()
const fullScan = async (fp: bigint) =>
  (await db.sql`select content_fingerprint::text as fp from public.curriculum_references
                 where bit_count((content_fingerprint # ${toSigned(fp).toString()}::bigint)::bit(64)) <= 3`).map((r) => r.fp as string).sort()

describe('find_near_duplicates', () => {
  it('finds exactly what a full scan finds, for random stores and queries near and far', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(u64, { minLength: 1, maxLength: 40 }),
        fc.nat(),
        // one flipped bit in each of some blocks: the cases where a single block is left intact are the
        // ones the pigeonhole lookup must not miss
        fc.tuple(fc.subarray([0, 1, 2, 3]), fc.array(fc.integer({ min: 0, max: 15 }), { minLength: 4, maxLength: 4 })).map(([blocks, offsets]) =>
          blocks.map((b) => b * 16 + offsets[b]!)
        ),
        async (fps, pick, bits) => {
          // store some fingerprints and some near variants of them, then ask about another variant
          const base = fps[pick % fps.length]!
          const stored = [...fps, flip(base, bits.slice(0, 2)), flip(base, bits.slice(0, 4))]
          await store(stored)
          const query = flip(base, bits)
          expect(await indexed(query)).toEqual(await fullScan(query))
        },
      ),
      { numRuns: 60 },
    )
  }, 120_000)

  it('reports distance 0..3 and stops at 3, nearest first, with the canonical reference of a duplicate', async () => {
    const base = 0x0123456789abcdefn
    await store([base, flip(base, [1]), flip(base, [1, 20, 40]), flip(base, [1, 20, 40, 60])])
    const rows = await db.sql`select distance from public.find_near_duplicates(${toSigned(base).toString()}::bigint)`
    expect(rows.map((r) => r.distance)).toEqual([0, 1, 3])
    const far = await db.sql`select count(*)::int as n from public.find_near_duplicates(${toSigned(base).toString()}::bigint, 10)`
    expect(far[0]!.n).toBe(3) // never beyond 3: the pigeonhole argument holds only up to 3
    const [canonical] = await db.sql`select id from public.curriculum_references where content_fingerprint = ${toSigned(base).toString()}::bigint`
    await db.sql`update public.curriculum_references set status = 'duplicate', canonical_id = ${canonical!.id} where content_fingerprint <> ${
      toSigned(base).toString()
    }::bigint`
    const [hit] = await db.sql`select canonical_of from public.find_near_duplicates(${toSigned(flip(base, [1, 20, 40])).toString()}::bigint) where distance = 0`
    expect(hit!.canonical_of).toBe(canonical!.id)
  })

  it('uses the block indexes, not a scan of every fingerprint', async () => {
    await db.sql`delete from public.curriculum_references`
    await db.sql`insert into public.curriculum_references (source, pdf_source, source_url, content_fingerprint)
                 select 'bulk', 'http://portal.test/b' || g || '.pdf', 'http://portal.test/b' || g || '.pdf', ('x' || md5(g::text))::bit(64)::bigint
                   from generate_series(1, 20000) g`
    await db.sql`analyze public.curriculum_references`
    const plan = (await db.sql`explain select * from public.curriculum_references r
      where (r.fp_block0 = 1 or r.fp_block1 = 2 or r.fp_block2 = 3 or r.fp_block3 = 4)
        and bit_count((r.content_fingerprint # 42::bigint)::bit(64)) <= 3`).map((r) => r['QUERY PLAN']).join('\n')
    expect(plan).toMatch(/BitmapOr/)
    for (let k = 0; k < 4; k++) expect(plan).toContain(`curriculum_references_block${k}_idx`)
    expect(plan).not.toMatch(/Seq Scan/)
  })
})
