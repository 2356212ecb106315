// A manual upload (POST /admin/upload-curriculum): processed in the request to a ready document with
// character chunking (1000/150), the chunk text also kept in the vector metadata, as the spec says for
// manual uploads. No job: the document row exists only once everything is stored.
import type { ServiceContext } from '../deps.ts'
import { asService } from '../db/tx.ts'
import { DomainError } from '../domain/errors.ts'
import { vectorLiteral } from '../lib/vector.ts'
import { isPdf, PdfError } from '../pdf/extract.ts'
import { PdfReadersBusy } from '../pdf/types.ts'
import { readPdf, readPdfSettings } from '../pdf/read.ts'
import { countOcr } from './metrics.ts'
import { cleanPages } from '../pdf/clean-pages.ts'
import { charWindows, chunkId, chunkPages } from './chunk.ts'
import { filterForms, MAX_GRADE_CHARS, namespaceFor } from '../catalogue/namespace.ts'

export interface UploadInput {
  bytes: Uint8Array
  grade: string
  subject: string
  language: 'fr' | 'ar' | 'hassaniya'
  namespace?: string | undefined
  pdf_source?: string | undefined
}

const refused = (field: string, message: string) => new DomainError('validation_failed', `Invalid form: ${field}: ${message}`, { fields: [{ field, message }] })

/**
 * The grade, subject and namespace an upload is stored under: the grade and subject in the form a
 * question filters on, and the namespace theirs (spec §2.2). A document stored otherwise would be listed
 * in the catalogue and never found by a question naming its grade and subject, nor by its own textbook
 * pick; such a form is refused rather than stored.
 */
export function uploadPlacement(input: Pick<UploadInput, 'grade' | 'subject' | 'namespace'>): { grade: string; subject: string; namespace: string } {
  const { grade, subject } = filterForms(input.grade, input.subject)
  if (!grade) throw refused('grade', `letters A-Z and digits, words joined by dashes (e.g. 4AS), ${MAX_GRADE_CHARS} characters at most`)
  if (!subject) throw refused('subject', 'a subject in Latin letters and digits (e.g. mathematiques, sciences-naturelles)')
  const namespace = namespaceFor(grade, subject)
  if (input.namespace !== undefined && input.namespace.toLowerCase() !== namespace) {
    throw refused('namespace', `must be ${namespace} (grade-{grade}-{subject}), the namespace questions on this grade and subject search`)
  }
  return { grade, subject, namespace }
}

export async function uploadCurriculum({ ctx, input }: { ctx: ServiceContext; input: UploadInput }) {
  const { config } = ctx.deps
  const placement = uploadPlacement(input)
  if (!isPdf(input.bytes)) throw new DomainError('unsupported_media_type', 'The file is not a PDF (it does not start with %PDF-)')
  let extracted
  try {
    // scanned pages are recognized in the request where this process can (Node); OCR_MAX_PAGES bounds it
    extracted = await readPdf(input.bytes, { ...readPdfSettings(config), engine: ctx.deps.ocr, extract: ctx.deps.extractPdf, language: input.language })
  } catch (err) {
    if (err instanceof PdfError) {
      throw new DomainError('validation_failed', err.message, { fields: [{ field: 'file', message: err.message }] })
    }
    if (err instanceof PdfReadersBusy) {
      throw new DomainError('service_unavailable', 'Every PDF reader is busy with other uploads; retry shortly', {}, { retryAfter: err.retryAfterSeconds })
    }
    throw err
  }
  countOcr(ctx.deps.metrics.ingestion, extracted.ocr)
  const pages = cleanPages(extracted.pages, config.QUALITY_MIN_PAGE_CHARS)
  if (pages.length === 0) {
    const why = extracted.needsOcr.length > 0
      ? 'The PDF has no text layer, and this server cannot recognize scanned pages (OCR runs in Node processes: npm start, npm run worker); register it as a reference and ingest it instead'
      : config.OCR_MODE === 'never'
      ? 'The PDF has no page with text (a scan without a text layer? OCR_MODE is never)'
      : 'The PDF has no page with text (nothing was recognized either)'
    throw new DomainError('validation_failed', why, { fields: [{ field: 'file', message: 'no text' }] })
  }
  const sourceOf = new Map(pages.map((p) => [p.number, p]))
  const chunks = chunkPages(pages, (text) => charWindows(text, config.CHUNK_CHARS, config.CHUNK_CHAR_OVERLAP).map((t) => ({ text: t })))
  const vectors: number[][] = []
  for (let i = 0; i < chunks.length; i += config.EMBED_BATCH_SIZE) {
    vectors.push(...(await ctx.deps.embedder.embed(chunks.slice(i, i + config.EMBED_BATCH_SIZE).map((c) => c.text))))
  }
  const { grade, subject, namespace } = placement
  const documentId = crypto.randomUUID()
  const ids = await Promise.all(chunks.map((c) => chunkId(documentId, c.page_number, c.chunk_index)))
  const ingestionTs = new Date(ctx.deps.clock.now()).toISOString()
  // one transaction: the document is processing (no student sees it) until every chunk and its vector
  // are stored, then ready (public.begin_upload, stage_upload_chunks, publish_upload)
  await asService(ctx.deps.sql, async (tx) => {
    await tx`select public.begin_upload(${documentId}, ${grade}, ${subject}, ${input.language}, ${config.VECTOR_INDEX_NAME}, ${namespace}, ${extracted.pageCount})`
    for (let i = 0; i < chunks.length; i += config.VECTOR_UPSERT_BATCH_SIZE) {
      const slice = chunks.slice(i, i + config.VECTOR_UPSERT_BATCH_SIZE).map((c, k) => {
        const page = sourceOf.get(c.page_number)
        return {
          id: ids[i + k]!,
          page_number: c.page_number,
          chunk_index: c.chunk_index,
          content: c.text,
          embedding: vectorLiteral(vectors[i + k]!),
          metadata: {
            chunk_id: ids[i + k],
            file_id: documentId,
            language: input.language,
            grade,
            subject,
            source_url: input.pdf_source ?? null,
            page_number: c.page_number,
            ingestion_ts: ingestionTs,
            text: c.text,
            text_source: page?.source ?? 'pdf',
            ...(page?.source === 'ocr' ? { ocr_confidence: Math.round(page.confidence! * 1000) / 1000 } : {}),
          },
        }
      })
      await tx`select public.stage_upload_chunks(${documentId}, ${tx.json(slice as never)})`
    }
    await tx`select public.publish_upload(${documentId})`
  })
  return {
    status: 'ready' as const,
    document_id: documentId,
    namespace,
    pages: extracted.pageCount,
    content_pages: pages.length,
    chunks: chunks.length,
    vectors: chunks.length,
    ocr_pages: extracted.ocr.pages,
  }
}
