// The background pipeline of one claimed job (spec §4.8 steps 1-10): download, pages, chunks,
// embeddings staged batch by batch, then the version published, the document and the reference synced
// and the job ready, all in one transaction (public.complete_ingestion). Every transition and every
// write carries the job's attempt number and is refused once the attempt is not the job's current one
// or the job not its reference's newest (cancelled by a forced re-ingestion), so a stale worker can
// change nothing.
import type { Deps } from '../deps.ts'
import { asService, isPgError } from '../db/tx.ts'
import { FetchError, safeFetch } from '../net/safe-fetch.ts'
import { PdfError } from '../pdf/extract.ts'
import { arabicShare } from '../text/canonicalize.ts'
import { cleanPages } from '../pdf/clean-pages.ts'
import { checkQuality } from '../catalogue/quality.ts'
import { type ReadPdf, readPdf, readPdfSettings } from '../pdf/read.ts'
import { allowedHosts, globalAllowlist } from '../catalogue/sources.ts'
import { retry } from '../lib/retry.ts'
import { chunkId, chunkPages, type TextChunk, tokenWindows } from './chunk.ts'
import { defaultTokenizer } from './tokenizer.ts'
import { hasNamespace, namespaceFor } from '../catalogue/namespace.ts'
import type { ReferenceRow } from '../catalogue/listings.ts'
import { countOcr, failureReason } from './metrics.ts'
import { vectorLiteral } from '../lib/vector.ts'
import { type ClaimedJob, deferForOcr, fail, type JobOutcome, PipelineError, transition } from './job.ts'

export { type ClaimedJob, claimNextJob, type JobOutcome, PipelineError } from './job.ts'

/** What is stored of a vector: a value that is not a number (an embedder's fault) as 0. */
const storedVector = (v: readonly number[]) => vectorLiteral(v.map((x) => (Number.isFinite(x) ? x : 0)))

export async function processJob(deps: Deps, job: ClaimedJob, requestId: string): Promise<JobOutcome> {
  const outcome = await runJob(deps, job, requestId)
  const m = deps.metrics.ingestion
  m.outcomes.inc({ outcome: outcome.status })
  if (outcome.status === 'failed') m.failures.inc({ reason: failureReason(outcome.error ?? '') })
  return outcome
}

async function runJob(deps: Deps, job: ClaimedJob, requestId: string): Promise<JobOutcome> {
  const log = deps.logs.forRequest('ingestion', requestId)
  const { config } = deps
  const m = deps.metrics.ingestion
  const started = performance.now()
  let stageStarted = started
  const stage = {
    name: 'download',
    next(name: string) {
      const now = performance.now()
      m.stageSeconds.observe({ stage: this.name }, (now - stageStarted) / 1000)
      stageStarted = now
      this.name = name
    },
  }
  try {
    await deps.onJobTransition?.({ job_id: job.id, attempt: job.attempt, status: 'parsing' }) // claimed
    // 1. the job, its reference, its document (created now, by public.begin_ingestion, for jobs the scraper queued)
    const { reference, fileId } = await asService(deps.sql, async (tx) => {
      const [ref] = await tx<ReferenceRow[]>`select * from public.curriculum_references where id = ${job.reference_id}`
      if (!ref) throw new PipelineError(`reference ${job.reference_id} no longer exists`)
      const [begun] = await tx<[{ file_id: string }]>`select file_id from public.begin_ingestion(${job.id}, ${job.attempt})`
      return { reference: ref, fileId: begun.file_id }
    })
    // the ingest request and the scraper refuse such a reference first; this guards what they cannot see
    // (a row edited in the database, a job queued before they checked)
    const { grade, subject } = reference
    if (grade === null || subject === null || !hasNamespace(grade, subject)) {
      throw new PipelineError('the reference has no grade or subject, so it has no namespace')
    }
    const source = deps.sources.find((s) => s.name === reference.source)
    const namespace = namespaceFor(grade, subject)
    // a scan registered where it could not be read has no language yet: its pages tell
    const registeredLanguage = reference.language
    // a source's own allowlist; for a reference whose source is not configured, only FETCH_ALLOWED_HOSTS
    // (never the URL's own host, which would let any stored URL reach anywhere)
    const allowlist = source ? allowedHosts(source) : globalAllowlist(config.FETCH_ALLOWED_HOSTS)
    if (allowlist.length === 0) {
      throw new PipelineError(`download refused: the source "${reference.source}" of this reference is not configured, and FETCH_ALLOWED_HOSTS allows no host`)
    }

    // 2-3. download and pages (transient download failures retried with backoff)
    const file = await retry(
      () =>
        safeFetch(reference.pdf_source, {
          allowedHosts: allowlist,
          allowLoopback: config.FETCH_ALLOW_LOOPBACK,
          maxBytes: config.UPLOAD_MAX_BYTES,
          timeoutMs: config.FETCH_TIMEOUT_MS,
          resolve: deps.resolveHost,
          ...(deps.connectGuard ? { guard: deps.connectGuard } : {}),
          accept: 'application/pdf',
        }),
      {
        attempts: config.JOB_MAX_ATTEMPTS,
        baseMs: config.JOB_BACKOFF_BASE_MS,
        maxMs: config.JOB_BACKOFF_MAX_MS,
        isTransient: (e) => e instanceof FetchError && e.transient,
        retryAfterMs: (e) => (e instanceof FetchError ? e.retryAfterMs : undefined),
        sleep: deps.sleep,
        onRetry: ({ attempt, delayMs }) => {
          m.retries.inc({ stage: 'download' })
          log.warn({ job_id: job.id, stage: 'download', attempt, delay_ms: delayMs }, 'retrying')
        },
      },
    )
    stage.next('extract')
    // the pages: text layers, and the recognizer's reading where a layer is missing or unreadable; the
    // job row shows pages done / total meanwhile (and the reports keep the job from looking stale)
    const extracted = await readPdf(file.bytes, {
      ...readPdfSettings(config),
      engine: deps.ocr,
      extract: deps.extractPdf,
      language: registeredLanguage,
      onProgress: async ({ done, total }) => {
        await asService(deps.sql, (tx) => tx`select public.report_job_progress(${job.id}, ${job.attempt}, ${done}, ${total}, ${null})`)
        await deps.onJobProgress?.({ job_id: job.id, attempt: job.attempt, done, total })
      },
    })
    countOcr(m, extracted.ocr)
    if (extracted.needsOcr.length > 0) return await deferForOcr(deps, job, extracted)
    // the text as written (chunks are quoted to students) but for its running heads and feet and the
    // hyphens of words the layout broke at a line's end; the folded form only measures content
    const options = source ? { boilerplate: source.boilerplate, taaMarbutaToHa: source.taa_marbuta_to_ha, hamzaCarriers: source.hamza_carriers } : {}
    const pages = cleanPages(extracted.pages, config.QUALITY_MIN_PAGE_CHARS, options)
    if (pages.length === 0) {
      throw new PipelineError(
        extracted.ocr.attempted > 0 || config.OCR_MODE === 'never' ? `no page with text (${ocrSummary(extracted, config.OCR_MODE)})` : 'no page with text',
      )
    }
    const language = registeredLanguage ?? (arabicShare(pages.map((p) => p.text).join('\n')) > 0.5 ? 'ar' : 'fr')
    // recognized text is judged by the recognizer's confidence, as the scraper's quality gate does
    const ocrText = pages.filter((p) => p.source === 'ocr').map((p) => p.text)
    if (ocrText.length > 0) {
      const quality = checkQuality(
        {
          sizeBytes: file.bytes.byteLength,
          text: pages.map((p) => p.text).join('\n'),
          // a blank page has no text missing
          pageCount: extracted.pageCount - extracted.emptyPages.length,
          textPages: pages.length,
          language: language === 'fr' ? 'fr' : 'ar',
          ocr: { chars: ocrText.join('\n').length, confidence: extracted.ocr.confidence },
        },
        {
          minTextChars: 0,
          maxFileBytes: Number.MAX_SAFE_INTEGER,
          minConfidenceAr: config.OCR_MIN_CONFIDENCE_AR,
          minConfidenceFr: config.OCR_MIN_CONFIDENCE_FR,
        },
      )
      if (!quality.passed) throw new PipelineError(quality.reason!)
    }
    const pageInfo = new Map(pages.map((p) => [p.number, p]))
    await asService(
      deps.sql,
      (tx) => tx`select public.report_job_progress(${job.id}, ${job.attempt}, ${extracted.pageCount}, ${extracted.pageCount}, ${extracted.ocr.pages})`,
    )
    await transition(deps, job, 'tokenizing', {
      pages: pages.length,
      page_count: extracted.pageCount,
      ...(extracted.ocr.attempted > 0
        ? {
          ocr_pages: extracted.ocr.pages,
          ocr_attempted: extracted.ocr.attempted,
          ocr_failed: extracted.ocr.failed,
          ocr_skipped: extracted.ocr.skipped,
          ocr_seconds: Math.round(extracted.ocr.seconds * 10) / 10,
          ocr_confidence: roundConfidence(extracted.ocr.confidence),
          ocr_layers_repaired: extracted.ocr.repaired,
        }
        : {}),
    })

    // 4. chunks: cl100k windows, 512/64 for French, 384/48 for Arabic and Hassaniya
    stage.next('chunk')
    const [size, overlap] = language === 'fr'
      ? [config.CHUNK_TOKENS_FR, config.CHUNK_TOKEN_OVERLAP_FR]
      : [config.CHUNK_TOKENS_AR, config.CHUNK_TOKEN_OVERLAP_AR]
    const chunks = chunkPages(pages, (text) => tokenWindows(text, defaultTokenizer, size, overlap))
    await transition(deps, job, 'embedding_request_sent', { chunks: chunks.length })

    // 5-7. embeddings batch by batch, each batch staged as soon as it is embedded (chunk text and vector),
    // so memory holds one batch of vectors, not the whole book. Every staged write first checks that this
    // attempt is still the job's and the job still the reference's current one: a cancelled, reclaimed or
    // superseded run stops at its next write and cannot touch what is served. Each staged batch is the
    // job's progress too (its lock refreshed, as each page read refreshes it): a book whose embedding
    // takes longer than JOB_STALE_SECONDS in all is not reclaimed as a dead worker's while it advances.
    stage.next('embed')
    const ids = await Promise.all(chunks.map((c) => chunkId(fileId, c.page_number, c.chunk_index)))
    const ingestionTs = new Date(deps.clock.now()).toISOString()
    // a batch is staged while the next one is embedded (the database works as this thread does); a
    // failure first waits for the staging under way, so nothing is written once the job has failed
    let staging: Promise<void> = Promise.resolve()
    try {
      for (let i = 0; i < chunks.length; i += config.EMBED_BATCH_SIZE) {
        const batch = chunks.slice(i, i + config.EMBED_BATCH_SIZE)
        const vectors = await retry(() => deps.embedder.embed(batch.map((c) => c.text)), {
          attempts: config.JOB_MAX_ATTEMPTS,
          baseMs: config.JOB_BACKOFF_BASE_MS,
          maxMs: config.JOB_BACKOFF_MAX_MS,
          isTransient: (e) => !(e instanceof PipelineError) && (e as { transient?: boolean }).transient !== false,
          retryAfterMs: (e) => (e as { retryAfterMs?: number }).retryAfterMs,
          sleep: deps.sleep,
          onRetry: ({ attempt, delayMs, error }) => {
            m.retries.inc({ stage: 'embed' })
            log.warn({ job_id: job.id, stage: 'embed', attempt, delay_ms: delayMs, err: { message: (error as Error).message } }, 'retrying')
          },
        })
        if (vectors.length !== batch.length || vectors.some((v) => v.length !== config.VECTOR_DIMENSION)) {
          throw new PipelineError(
            `the embedder returned ${vectors.length} vectors for ${batch.length} chunks, or vectors not of dimension ${config.VECTOR_DIMENSION}`,
          )
        }
        await staging
        staging = asService(deps.sql, async (tx) => {
          await tx`select public.report_job_progress(${job.id}, ${job.attempt}, ${extracted.pageCount}, ${extracted.pageCount}, ${null})`
          const rows = batch.map((c: TextChunk, k) => ({
            job_id: job.id,
            id: ids[i + k]!,
            file_id: fileId,
            page_number: c.page_number,
            chunk_index: c.chunk_index,
            content: c.text,
            token_count: c.token_count ?? null,
            embedding: storedVector(vectors[k]!),
            // only the light fields of spec §1.4; the text stays in document_chunks
            metadata: {
              chunk_id: ids[i + k],
              file_id: fileId,
              language,
              grade: reference.grade,
              subject: reference.subject,
              source_url: reference.source_url,
              page_number: c.page_number,
              ingestion_ts: ingestionTs,
              // where the page's text came from: its text layer, or the recognizer (with its confidence)
              text_source: pageInfo.get(c.page_number)?.source ?? 'pdf',
              ...(pageInfo.get(c.page_number)?.source === 'ocr' ? { ocr_confidence: roundConfidence(pageInfo.get(c.page_number)!.confidence) } : {}),
            },
          }))
          await tx`insert into public.ingestion_staging ${tx(rows as never[])}
                   on conflict (job_id, id) do update set content = excluded.content, token_count = excluded.token_count, embedding = excluded.embedding, metadata = excluded.metadata`
        })
        staging.catch(() => {}) // awaited below: not unhandled while the next batch is embedded
      }
    } finally {
      await staging.catch(() => {})
    }
    await staging

    // 8-9. in one transaction: embedding_upserted, the staged version published in place of the previous
    // one, the document and the reference synced, the job ready (public.complete_ingestion)
    stage.next('store')
    // a reference registered without a language takes the one read from its pages
    await asService(deps.sql, (tx) =>
      tx`
      select id from public.complete_ingestion(${job.id}, ${job.attempt}, ${config.VECTOR_INDEX_NAME}, ${namespace}, ${extracted.pageCount},
                                               ${
        tx.json({
          pages: pages.length,
          chunks: chunks.length,
          vectors: chunks.length,
          embedder: deps.embedder.name,
          ms: Math.round(performance.now() - started),
        })
      },
                                               ${language})`)
    await deps.onJobTransition?.({ job_id: job.id, attempt: job.attempt, status: 'ready' })
    stage.next('done')
    m.pages.inc(pages.length)
    m.chunks.inc(chunks.length)
    log.info({ job_id: job.id, pages: pages.length, chunks: chunks.length, ms: Math.round(performance.now() - started) }, 'ingestion job ready')
    return { job_id: job.id, status: 'ready', pages: pages.length, chunks: chunks.length, vectors: chunks.length }
  } catch (err) {
    if (isPgError(err, 'PT409')) {
      log.warn({ job_id: job.id, attempt: job.attempt }, 'job was claimed again by another worker; this run stops')
      return { job_id: job.id, status: 'superseded' }
    }
    const message = err instanceof FetchError
      ? `download failed: ${err.message}`
      : err instanceof PdfError || err instanceof PipelineError
      ? err.message
      : `${stage.name} failed: ${(err as Error).message}`
    log.error({ job_id: job.id, stage: stage.name, err: { message: (err as Error).message } }, 'ingestion job failed')
    return fail(deps, job, message, { stage: stage.name })
  }
}

const roundConfidence = (c: number | null) => (c === null ? null : Math.round(c * 1000) / 1000)

/** Why a scan gave no text: the mode, or what the recognizer did. */
function ocrSummary(read: ReadPdf, mode: string): string {
  if (mode === 'never') return 'scanned PDF; OCR_MODE is never'
  return `the recognizer read ${read.ocr.pages} of ${read.ocr.attempted} pages, ${read.ocr.failed} failed`
}
