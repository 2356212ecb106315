// `npm run worker`: claims queued ingestion jobs and runs them, one at a time, in a loop. Any number of
// workers may run (claims use FOR UPDATE SKIP LOCKED). With --once it stops when the queue is empty.
// It connects to DATABASE_URL, or to the embedded database of a running `npm start` (DB_PORT).
import { existsSync } from 'node:fs'
import { loadConfigOrExit } from './lib/load-config.ts'
import { createDb } from '../functions-shared/db/client.ts'
import { createDeps } from '../functions-shared/deps.ts'
import { runNextJob } from './lib/job-loop.ts'
import { connectGuardNode, readSourcesNode, resolveHostNode } from './lib/node-adapter.ts'
import { exitWithStartupError, unreachableDatabase } from './lib/startup-error.ts'
import { ocrFromConfig } from './lib/ocr.ts'
import { embeddedDatabaseUrl } from './lib/embedded-db.ts'
import { createIsolatedExtractor } from './lib/pdf-isolate.ts'
import { createAiProvider } from '../functions-shared/ai/select.ts'

const config = loadConfigOrExit('curriculum-tutor worker')
const once = process.argv.includes('--once')
const url = config.DATABASE_URL ?? embeddedDatabaseUrl(config)
const sql = createDb(url, {
  max: 2,
  prepare: config.DB_PREPARE,
  statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS,
  applicationName: 'curriculum-tutor/worker',
})
const pdfReader = createIsolatedExtractor({ size: config.PDF_READERS, maxQueue: config.PDF_READER_QUEUE })
const deps = createDeps(config, {
  sql,
  ai: createAiProvider(config),
  resolveHost: resolveHostNode,
  connectGuard: connectGuardNode,
  sources: existsSync(config.SCRAPER_SOURCES_FILE) ? await readSourcesNode(config.SCRAPER_SOURCES_FILE) : [],
  // the recognizer: this worker claims jobs whose scans wait for OCR (those an Edge Function left queued)
  ocr: ocrFromConfig(config),
  // pdf.js reads text layers in a worker thread: a PDF that would hold or end this process fails instead
  extractPdf: pdfReader,
})
const log = deps.logs.get('worker')

let stopping = false
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    log.info({ signal }, 'stopping after the current job')
    stopping = true
  })
}

// the database first: without one there is nothing to do, and the operator gets one sentence
try {
  await sql`select 1`
} catch (err) {
  const fix = config.DATABASE_URL ? 'check DATABASE_URL' : `start the stack first (npm start), or set DATABASE_URL (or DB_PORT, now ${config.DB_PORT})`
  await sql.end({ timeout: 1 }).catch(() => {})
  exitWithStartupError('curriculum-tutor worker', unreachableDatabase(err, url, fix) ?? err)
}

let processed = 0
log.info({ once }, 'worker started')
while (!stopping) {
  const outcome = await runNextJob(deps)
  if (!outcome) {
    if (once) break
    await new Promise((r) => setTimeout(r, 2000))
    continue
  }
  processed++
  log.info({ ...outcome }, 'job finished')
}
log.info({ processed }, once ? 'queue empty' : 'worker stopped')
await deps.ocr?.close()
await pdfReader.close()
await sql.end({ timeout: 5 })
