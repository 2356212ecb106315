// A generated 200-page French PDF through the whole ingestion pipeline with the offline embedder, twice:
// the first job of a new process reading the text in its own thread (as Edge Functions read), then a
// job read as npm run worker reads, by its pool of reader processes (scripts/lib/pdf-isolate.ts), warm
// from a document before, each reading a share of the pages; pages per second end to end and each
// stage's seconds. Then the text layer read alone, in this thread (the baseline) and by the readers;
// and the SimHash of a book of ten million characters (the largest text a PDF may hold), which a sync
// computes in the thread that serves requests, against hashing every token occurrence (the baseline).
// Tokenizer throughput: npm run bench:tokenizer.
// Run: BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:ingest (PGlite without it)
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Sql } from '../functions-shared/db/client.ts'
import { loadConfig } from '../functions-shared/config.ts'
import { createDeps } from '../functions-shared/deps.ts'
import { createLogRoot } from '../functions-shared/lib/logger.ts'
import { claimNextJob, processJob } from '../functions-shared/ingestion/pipeline.ts'
import { scratchDatabase } from './lib/scratch-db.ts'
import { resolveHostNode } from '../scripts/lib/node-adapter.ts'
import { makePdf } from '../scripts/lib/pdf.ts'
import { createIsolatedExtractor } from '../scripts/lib/pdf-isolate.ts'
import { extractPdf } from '../functions-shared/pdf/extract.ts'
import { AR_LESSON, FR_LESSON, PHYSICS_LESSON } from '../test/helpers/portal.ts'
import { md5 } from '@noble/hashes/legacy.js'
import { simhash, tokens, tokenWeight } from '../functions-shared/text/simhash.ts'
import { MAX_TEXT_CHARS } from '../functions-shared/pdf/extract.ts'
import { createAiProvider } from '../functions-shared/ai/select.ts'
import { machine } from './lib/machine.ts'

const PAGES = Number(process.env.BENCH_PAGES ?? 200)
const db = await scratchDatabase('ingest', { max: 2 })
const sql: Sql = db.sql
machine(db.label)

// pages of lesson text, each different (the page number and a rotation of the sentences)
const sentences = `${FR_LESSON} ${PHYSICS_LESSON}`.split(/(?<=\.) /)
const pages = Array.from(
  { length: PAGES },
  (_, i) => `Page ${i + 1}. ${sentences.slice(i % sentences.length).concat(sentences.slice(0, i % sentences.length)).join(' ')}`,
)
const pdf = await makePdf(pages)
const server = createServer((_, res) => res.writeHead(200, { 'content-type': 'application/pdf' }).end(Buffer.from(pdf)))
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
const pdfUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/manuel.pdf`

// the reference's source is not configured: its download may reach only FETCH_ALLOWED_HOSTS
const benchConfig = loadConfig({ LOG_LEVEL: 'silent', FETCH_ALLOW_LOOPBACK: 'true', FETCH_ALLOWED_HOSTS: new URL(pdfUrl).host })
const readers = createIsolatedExtractor({ size: benchConfig.PDF_READERS })
const base = { sql, ai: createAiProvider(benchConfig), logs: createLogRoot({ level: 'silent' }), resolveHost: resolveHostNode }
const inThread = createDeps(benchConfig, base)
// as npm run worker reads text layers: its pool of reader processes (metrics shared, to read one set)
const inReaders = createDeps(benchConfig, { ...base, metrics: inThread.metrics, extractPdf: readers })

/** One job of a new reference to the PDF: its seconds, outcome and the seconds of each stage. */
async function ingest(deps: typeof inThread, title: string) {
  const stageSums = async () => {
    const histogram = await deps.metrics.ingestion.stageSeconds.get()
    return new Map(histogram.values.filter((v) => v.metricName === 'ingestion_stage_seconds_sum').map((v) => [String(v.labels.stage), v.value]))
  }
  const url = `${pdfUrl}?${encodeURIComponent(title)}`
  const [ref] = await sql`insert into public.curriculum_references (source, pdf_source, source_url, title, grade, subject, language)
    values ('bench', ${url}, ${url}, ${title}, '4AS', 'mathematiques', 'fr') returning id`
  await sql`select id from public.request_ingestion(${ref!.id})`
  const job = (await claimNextJob(deps))!
  const before = await stageSums()
  const started = performance.now()
  const outcome = await processJob(deps, job, 'bench')
  const seconds = (performance.now() - started) / 1000
  const after = await stageSums()
  console.log(`\n${title}`)
  if (outcome.status !== 'ready') console.log(`the job did not finish: ${outcome.error ?? outcome.status}`)
  console.log(
    `outcome ${outcome.status}: ${outcome.pages} pages, ${outcome.chunks} chunks in ${seconds.toFixed(2)} s = ${
      (PAGES / seconds).toFixed(1)
    } pages/s end to end`,
  )
  for (const [name, sum] of after) {
    const s = sum - (before.get(name) ?? 0)
    console.log(`  ${name.padEnd(9)} ${s.toFixed(3).padStart(8)} s  ${((s / seconds) * 100).toFixed(1).padStart(5)} %`)
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!
const time = async (read: () => Promise<unknown>) => {
  const t = performance.now()
  await read()
  return performance.now() - t
}
console.log(`database: ${db.label}; ${PAGES}-page French PDF (${(pdf.byteLength / 1024).toFixed(0)} KB); offline embedder`)
// the first job of this process, pdf.js loaded in this thread at its first page (as an Edge Function reads)
await ingest(inThread, 'job 1: the text layer read in this thread, the first job of a new process (pdf.js loaded by it)')
// the readers' first reading starts their processes and loads pdf.js; a running worker's readers have
const first = await time(() => readers(pdf, { deadlineMs: 60_000 }))
await ingest(
  inReaders,
  `job 2: as npm run worker reads, by its ${benchConfig.PDF_READERS} reader processes (pdf.js loaded by a document before), each a share of the pages`,
)

// the text layer alone: in this thread, then by the reader processes
const inThreadMs: number[] = []
const inReadersMs: number[] = []
for (let i = 0; i < 5; i++) {
  inThreadMs.push(await time(() => extractPdf(pdf, { deadlineMs: 60_000 })))
  inReadersMs.push(await time(() => readers(pdf, { deadlineMs: 60_000 })))
}
await readers.close()
console.log(
  `\ntext layer of the ${PAGES} pages, median of 5: in this thread ${
    median(inThreadMs).toFixed(0)
  } ms (baseline); by the ${benchConfig.PDF_READERS} reader processes ${median(inReadersMs).toFixed(0)} ms (${
    (median(inReadersMs) / median(inThreadMs)).toFixed(2)
  }×); their first reading, the processes' start and pdf.js's loading included, ${first.toFixed(0)} ms`,
)

// the SimHash: every occurrence hashed (the baseline) against each distinct token hashed once
function simhashEveryOccurrence(text: string): bigint {
  const encoder = new TextEncoder()
  const seen = new Map<string, { digest: Uint8Array; count: number }>()
  for (const token of tokens(text)) {
    const digest = md5(encoder.encode(token))
    const entry = seen.get(token)
    if (entry) entry.count++
    else seen.set(token, { digest, count: 1 })
  }
  const votes = new Float64Array(64)
  for (const { digest, count } of seen.values()) {
    const w = tokenWeight(count)
    for (let i = 0; i < 64; i++) votes[i]! += (digest[7 - (i >> 3)]! >> (i & 7)) & 1 ? w : -w
  }
  let fp = 0n
  for (let i = 0; i < 64; i++) if (votes[i]! > 0) fp |= 1n << BigInt(i)
  return fp
}
const lessons = `${FR_LESSON} ${PHYSICS_LESSON} ${AR_LESSON} `
const book = lessons.repeat(Math.ceil(MAX_TEXT_CHARS / lessons.length)).slice(0, MAX_TEXT_CHARS)
let t0 = performance.now()
const counted = simhash(book)
const countedMs = performance.now() - t0
t0 = performance.now()
const everyOccurrence = simhashEveryOccurrence(book)
const everyMs = performance.now() - t0
if (counted !== everyOccurrence) console.log('the two SimHash ways disagree')
console.log(
  `SimHash of ${(MAX_TEXT_CHARS / 1e6).toFixed(0)} million characters (${tokens(book).length.toLocaleString('en')} tokens): every occurrence hashed ${
    everyMs.toFixed(0)
  } ms (baseline); each distinct token once ${countedMs.toFixed(0)} ms (${(countedMs / everyMs).toFixed(2)}×)`,
)

server.close()
await db.close()
