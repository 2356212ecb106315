// The chat's cost outside the model, and retrieval at scale. Prints figures; asserts nothing.
//  (a) turn overhead: POST /chat (JSON) over loopback HTTP with the offline provider (its "model" is an
//      extractive pick of sentences, well under a millisecond), p50/p99 at 1, 8 and 32 concurrent
//      students, beside a bare Hono JSON endpoint on the same HTTP server stack in the same run, with the
//      p50 of each stage the turn reports; then the turn stored (its conversation and messages written
//      as it is generated, the default) beside the same turn written nowhere, in the same run, and the
//      database writes per answer, for this instant answer and for an answer streamed over 3 s;
//  (b) retrieval: top-30 with a subject prefilter through the subject's HNSW index, at 10k and
//      100k chunks: the sizes of the index of every chunk and of the subjects' indexes (MiB, a+b), p50/p95/p99, the blocks a search reads from outside shared buffers
//      and recall@10 against exact search (index scans off); then the hybrid search
//      (full text fused with the same dense search, one statement) at the default ef_search: its
//      latency beside the dense search's, the recall@10 of its dense branch (the rows it ranks dense
//      1-10, all rows returned) and how many of the exact dense top 10 are among its 30 rows (what the
//      rerank gets to see). The synthetic questions are ten words of a subject's
//      vocabulary, which nearly every chunk of the subject holds: the text branch's worst case.
// Run: npm run bench:chat   (embedded PGlite, 10k only; BENCH_DATABASE_URL=postgres://... for a server,
// 10k and 100k; BENCH_CHUNKS=10000,100000 to choose)
import { Hono } from 'hono'
import { serve } from '@hono/node-server'
import type { AddressInfo } from 'node:net'
import { loadConfig } from '../functions-shared/config.ts'
import { createDeps } from '../functions-shared/deps.ts'
import { createLogRoot } from '../functions-shared/lib/logger.ts'
import { offlineVector } from '../functions-shared/ai/offline-embedder.ts'
import { denseSearch, hybridSearch } from '../functions-shared/chat/retrieve.ts'
import { startGateway } from '../scripts/lib/gateway.ts'
import { turnStorage } from './lib/turn-storage.ts'
import { createUser } from '../test/helpers/users.ts'
import { scratchDatabase } from './lib/scratch-db.ts'
import { runLoad } from './lib/http-load.ts'
import { machine } from './lib/machine.ts'
import { blocksRead, hnswIndexes, rebuildIndexes } from './lib/search-indexes.ts'
import { documentsFor, GRADES, loadChunks, sentence, SUBJECTS } from './lib/synthetic-curriculum.ts'

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
const fmt = (ms: number) => `${ms.toFixed(2)} ms`
// the machine line, printed once, before any figure, by the part that runs first
let machinePrinted = false
function printMachine(database: string): void {
  if (!machinePrinted) machine(database)
  machinePrinted = true
}

// the stages a turn reports in its `timings`, timed in (a)
const STAGES = ['decide_path', 'check_wallet', 'retrieve_and_rerank', 'retrieve.search', 'generate', 'finalize']

// --- (a) turn overhead -------------------------------------------------------------------------------
async function turnOverhead(): Promise<void> {
  const db = await scratchDatabase('chat', { max: 8 })
  printMachine(db.label)
  const sql = db.sql
  const docs = await documentsFor(sql)
  await loadChunks(sql, docs, 0, 3000, true)
  // as the pipeline leaves them: each document knows its chunk count
  await sql`update public.documents d set chunk_count = (select count(*) from public.document_chunks c where c.file_id = d.id)`
  // a steady state: what autovacuum would do after the load (statistics, the GIN index's pending list,
  // the visibility map) is done before the timing, not during it
  await sql`vacuum (analyze) public.vectors, public.document_chunks, private.search_lexemes, public.documents`
  const config = loadConfig({
    LOG_LEVEL: 'silent',
    RATE_LIMIT_CHAT_PER_MINUTE: '100000000',
    EXPIRY_INTERVAL_SECONDS: '0',
    AI_PROVIDER: 'offline',
    RETRIEVAL_MODE: process.env.RETRIEVAL_MODE === 'dense' ? 'dense' : 'hybrid',
  })
  const gw = await startGateway({ config, sql, port: 0, deps: { logs: createLogRoot({ level: 'silent' }), sources: [] } })

  const students: { id: string; token: string }[] = []
  for (let i = 0; i < 32; i++) {
    const { id, token } = await createUser(sql, { email: `bench-${i}@example.mr` })
    await sql`select * from public.top_up(${id}, 10000000, 0, 'MRU', 'cash', null, 'bench')`
    await sql`update public.wallets set subscription_tier = 'premium' where user_id = ${id}` // unlimited turns a day
    students.push({ id, token })
  }
  const questions = Array.from({ length: 200 }, (_, i) => {
    const subject = SUBJECTS[i % SUBJECTS.length]!
    return { message: `${sentence(subject, 8)} ?`, subject, grade: GRADES[i % GRADES.length]! }
  })

  const bare = new Hono().post('/ping', async (c) => c.json({ ok: true, echo: (await c.req.json()) as unknown }))
  const bareServer = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const s = serve({ fetch: bare.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s))
  })
  const bareUrl = `http://127.0.0.1:${(bareServer.address() as AddressInfo).port}/ping`

  const chatUrl = `${gw.url}/functions/v1/chat`
  const headers = students.map((st) => ({ Authorization: `Bearer ${st.token}` }))
  async function load(url: string, concurrency: number, total: number, bodies: object[] = questions) {
    const r = await runLoad({ url, concurrency, total, bodies, headers, collect: STAGES.map((s) => `timings/${s}`) })
    if (r.failures.length > 0) throw new Error(`${r.failures.length} requests failed, e.g. ${r.failures[0]}`)
    const sorted = [...r.latencies].sort((a, b) => a - b)
    // the p50 of each stage the turn reports (its `timings`), in ms
    const stages = r.collected.map((xs) => (xs.length ? quantile([...xs].sort((a, b) => a - b), 0.5).toFixed(2).padStart(5) : '    -')).join(' ')
    return { p50: quantile(sorted, 0.5), p99: quantile(sorted, 0.99), rps: total / r.seconds, stages }
  }

  console.log(
    `(a) turn overhead: POST /chat (JSON, offline provider, premium tier, 3,000 chunks, ${config.RETRIEVAL_MODE} retrieval), ${db.label}`,
  )
  console.log(
    '    students   chat p50 / p99 (turns/s)          bare Hono p50 / p99 (req/s)     p50 ratio   stage p50s (ms): decide wallet retrieve (search) generate finalize',
  )
  await load(chatUrl, 4, 300) // warm-up: JIT, connections, caches
  await load(bareUrl, 4, 500)
  const bareP50 = new Map<number, number>() // the inferred turns' baselines below
  const labelledP50 = new Map<number, number>()
  for (const [c, total] of [[1, 300], [8, 1200], [32, 1600]] as const) {
    const chatRun = await load(chatUrl, c, total)
    const bareRun = await load(bareUrl, c, total * 3)
    bareP50.set(c, bareRun.p50)
    labelledP50.set(c, chatRun.p50)
    console.log(
      `    ${String(c).padStart(8)}   ${fmt(chatRun.p50).padStart(9)} / ${fmt(chatRun.p99).padStart(9)} (${chatRun.rps.toFixed(0).padStart(5)})   ` +
        `${fmt(bareRun.p50).padStart(9)} / ${fmt(bareRun.p99).padStart(9)} (${bareRun.rps.toFixed(0).padStart(6)})   ${
          (chatRun.p50 / bareRun.p50).toFixed(1).padStart(7)
        }x   ${chatRun.stages}`,
    )
  }
  // the same questions without grade and subject: the teacher infers them from the catalogue first
  const unlabelled = questions.map(({ message }) => ({ message }))
  console.log(
    "    without grade and subject: the subject inferred from the catalogue first (the search in decide finds its candidates too); p50 ratio to the bare p50 above, and to the labelled turn's",
  )
  for (const [c, total] of [[1, 300], [8, 1200]] as const) {
    const inferred = await load(chatUrl, c, total, unlabelled)
    console.log(
      `    ${String(c).padStart(8)}   ${fmt(inferred.p50).padStart(9)} / ${fmt(inferred.p99).padStart(9)} (${inferred.rps.toFixed(0).padStart(5)})   ${
        ' '.repeat(33)
      }${(inferred.p50 / bareP50.get(c)!).toFixed(1).padStart(7)}x   ${inferred.stages}   ${(inferred.p50 / labelledP50.get(c)!).toFixed(2)}x labelled`,
    )
  }
  // the turn stored (the default) beside the same turn written nowhere: what keeping conversations costs
  await turnStorage(gw, config, sql, load, students, questions)
  const [usage] = await sql`select count(*)::int as turns, sum(charged)::int as charged from public.usage_log`
  const [ledger] =
    await sql`select (select sum(token_balance) from public.wallets)::bigint as balances, (select sum(delta) from public.token_ledger)::bigint as ledger`
  console.log(
    `    ${usage!.turns} turns billed, ${usage!.charged} tokens charged; Σ balances ${ledger!.balances} = Σ ledger ${ledger!.ledger}: ${
      ledger!.balances === ledger!.ledger ? 'ok' : 'MISMATCH'
    }\n`,
  )
  bareServer.close()
  await gw.close()
  await db.close()
}

// --- (b) retrieval at scale --------------------------------------------------------------------------
async function retrieval(sizes: number[]): Promise<void> {
  const db = await scratchDatabase('retrieval', { max: 2 })
  printMachine(db.label)
  const sql = db.sql
  const efs = (process.env.BENCH_EF ?? '60,100,200').split(',').map(Number)
  const depsFor = (ef: number) => createDeps(loadConfig({ LOG_LEVEL: 'silent', HNSW_EF_SEARCH: String(ef) }), { sql, logs: createLogRoot({ level: 'silent' }) })
  const docs = await documentsFor(sql) // each subject gets its index (with no chunk yet)
  const indexes = await hnswIndexes(sql)
  const indexdef = indexes[0]!.def
  // the expression the index orders by: the embedding, or its halfvec copy
  const half = indexdef.match(/halfvec\((\d+)\)/)
  const orderBy = half ? `(v.embedding::extensions.halfvec(${half[1]})) operator(extensions.<=>)` : 'v.embedding operator(extensions.<=>)'
  const queryCast = half ? `::extensions.halfvec(${half[1]})` : ''
  const queries = Array.from({ length: 100 }, (_, i) => {
    const subject = SUBJECTS[i % SUBJECTS.length]!
    const text = `${sentence(subject, 10)} ?`
    return { subject, text, vector: offlineVector(text, 1536) }
  })
  const [{ shared_buffers }] = (await sql`show shared_buffers`) as unknown as [{ shared_buffers: string }]
  console.log(`(b) retrieval: top-30 with a subject prefilter (1/6 of the chunks), HNSW cosine, iterative scan; ${db.label}, shared_buffers ${shared_buffers}`)
  console.log(
    '        chunks   load s   index s   index MiB     ef    p50 ms    p95 ms    p99 ms   recall@10 vs exact   exact p50 ms   p50/exact   blocks read   plan',
  )
  let loaded = 0
  for (const size of sizes) {
    for (const { name } of indexes) await sql.unsafe(`drop index if exists public.${name}`) // bulk load first, then build
    const t0 = performance.now()
    await loadChunks(sql, docs, loaded, size - loaded, true) // with text: the hybrid search's text branch reads it
    loaded = size
    const loadSeconds = (performance.now() - t0) / 1000
    const indexSeconds = await rebuildIndexes(sql, indexes)
    // the index of every chunk, and the subjects' indexes together
    const [{ bytes, subjectBytes }] = (await sql`select pg_relation_size('public.vectors_embedding_hnsw_idx')::float8 as bytes,
        coalesce(sum(pg_relation_size(format('public.%I', indexname))), 0)::float8 as "subjectBytes"
        from pg_indexes where tablename = 'vectors' and indexname like 'vectors_subject_%'`) as unknown as [{ bytes: number; subjectBytes: number }]
    // exact answers once (index scans off), then each ef_search
    const exact: { ids: Set<string>; ms: number }[] = []
    for (const q of queries) {
      const t2 = performance.now()
      const rows = await sql.begin(async (tx) => {
        await tx`set local enable_indexscan = off`
        await tx`set local enable_bitmapscan = off`
        return tx`select id from public.vectors where index_name = 'curriculum-1536' and metadata ->> 'subject' = ${q.subject}
                   order by embedding operator(extensions.<=>) ${`[${q.vector.join(',')}]`}::extensions.vector limit 10`
      })
      exact.push({ ids: new Set(rows.map((r) => r.id as string)), ms: performance.now() - t2 })
    }
    const exactMs = exact.map((e) => e.ms).sort((a, b) => a - b)
    // the plan match_chunks gets without a namespace or a document (its settings, repeated here)
    const plan = await sql.begin(async (tx) => {
      await tx`set local hnsw.iterative_scan = relaxed_order`
      await tx`set local enable_seqscan = off`
      await tx`set local enable_sort = off`
      return (await tx`explain select id from public.vectors v where v.index_name = 'curriculum-1536' and v.metadata ->> 'subject' = 'physique'
                        order by ${sql.unsafe(orderBy)} ${`[${queries[0]!.vector.join(',')}]`}::extensions.vector${sql.unsafe(queryCast)} limit 30`).map((r) =>
        r['QUERY PLAN'] as string
      )
    })
    for (const ef of efs) {
      const deps = depsFor(ef)
      for (const q of queries.slice(0, 10)) await denseSearch(deps, q.vector, 30, { subject: q.subject }) // warm-up
      const latencies: number[] = []
      let recall = 0
      const read0 = await blocksRead(sql)
      for (const [i, q] of queries.entries()) {
        const t1 = performance.now()
        const hits = await denseSearch(deps, q.vector, 30, { subject: q.subject })
        latencies.push(performance.now() - t1)
        const top = new Set(hits.slice(0, 10).map((h) => h.chunk_id))
        recall += [...exact[i]!.ids].filter((id) => top.has(id)).length / Math.max(1, exact[i]!.ids.size)
      }
      const read = (await blocksRead(sql)) - read0
      latencies.sort((a, b) => a - b)
      console.log(
        `    ${size.toLocaleString('en').padStart(10)}   ${loadSeconds.toFixed(1).padStart(6)}   ${indexSeconds.toFixed(1).padStart(7)}   ${
          `${(bytes / 2 ** 20).toFixed(0)}+${(subjectBytes / 2 ** 20).toFixed(0)}`.padStart(9)
        }   ${String(ef).padStart(4)}   ${quantile(latencies, 0.5).toFixed(2).padStart(7)}   ${quantile(latencies, 0.95).toFixed(2).padStart(7)}   ${
          quantile(latencies, 0.99).toFixed(2).padStart(7)
        }` +
          `   ${(recall / queries.length).toFixed(3).padStart(18)}   ${quantile(exactMs, 0.5).toFixed(2).padStart(12)}   ${
            (quantile(latencies, 0.5) / quantile(exactMs, 0.5)).toFixed(3).padStart(8)
          }x   ${(read / queries.length).toFixed(0).padStart(11)}   ${
            plan.some((l) => l.includes('vectors_subject_'))
              ? "the subject's HNSW index"
              : plan.some((l) => l.includes('_hnsw_idx'))
              ? 'HNSW index scan'
              : 'no index!'
          }`,
      )
    }
    // hybrid at the default ef_search, against dense at the same ef_search, in the same run
    const config = loadConfig({ LOG_LEVEL: 'silent' })
    const deps = createDeps(config, { sql, logs: createLogRoot({ level: 'silent' }) })
    for (const q of queries.slice(0, 10)) await hybridSearch(deps, q.vector, q.text, 30, { subject: q.subject }, { coverage: false }) // warm-up
    const modes = { dense: [] as number[], hybrid: [] as number[] }
    let branchRecall = 0
    let denseBranchRecall = 0
    let textHits = 0
    for (const [i, q] of queries.entries()) {
      // the dense branch alone: every row the fusion gets (k = both depths), those it ranks dense 1-10
      const all = await sql`select id, dense_rank from public.hybrid_search(${config.VECTOR_INDEX_NAME}, ${`[${
        q.vector.join(',')
      }]`}::extensions.vector, ${q.text}, 120,
                              null, null, ${q.subject}, null, null, 60, 60, ${config.RETRIEVAL_RRF_K}, 1, 1, p_ef_search => ${config.HNSW_EF_SEARCH})`
      const branch = new Set(all.filter((r) => r.dense_rank !== null && Number(r.dense_rank) <= 10).map((r) => r.id as string))
      denseBranchRecall += [...exact[i]!.ids].filter((id) => branch.has(id)).length / Math.max(1, exact[i]!.ids.size)
      const t1 = performance.now()
      await denseSearch(deps, q.vector, 30, { subject: q.subject })
      modes.dense.push(performance.now() - t1)
      const t2 = performance.now()
      const hits = await hybridSearch(deps, q.vector, q.text, 30, { subject: q.subject }, { coverage: false }) // as an answer's retrieval calls it
      modes.hybrid.push(performance.now() - t2)
      const rows = new Set(hits.map((h) => h.chunk_id))
      branchRecall += [...exact[i]!.ids].filter((id) => rows.has(id)).length / Math.max(1, exact[i]!.ids.size)
      textHits += hits.filter((h) => h.text_rank !== null).length
    }
    for (const l of Object.values(modes)) l.sort((a, b) => a - b)
    console.log(
      `    ${size.toLocaleString('en').padStart(10)}   hybrid at ef ${config.HNSW_EF_SEARCH}: p50 ${quantile(modes.hybrid, 0.5).toFixed(2)} ms, p95 ${
        quantile(modes.hybrid, 0.95).toFixed(2)
      } ms, p99 ${quantile(modes.hybrid, 0.99).toFixed(2)} ms` +
        ` (dense alone p50 / p95 / p99 ${quantile(modes.dense, 0.5).toFixed(2)} / ${quantile(modes.dense, 0.95).toFixed(2)} / ${
          quantile(modes.dense, 0.99).toFixed(2)
        } ms, ratio ${(quantile(modes.hybrid, 0.5) / quantile(modes.dense, 0.5)).toFixed(2)});` +
        ` recall@10 of its dense branch ${(denseBranchRecall / queries.length).toFixed(3)}; exact dense top-10 among its 30 rows ${
          (branchRecall / queries.length).toFixed(3)
        }; ${(textHits / queries.length).toFixed(1)} of 30 rows found by the text branch`,
    )
  }
  await db.close()
}

const sizes = (process.env.BENCH_CHUNKS ?? (process.env.BENCH_DATABASE_URL ? '10000,100000' : '10000')).split(',').map(Number).sort((a, b) => a - b)
if (process.env.BENCH_PART !== 'retrieval') await turnOverhead()
if (process.env.BENCH_PART !== 'turns') await retrieval(sizes)
