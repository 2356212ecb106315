// A known reference's file, checked again at its address: a sync that meets a link it has registered
// downloads the file once REFETCH_AFTER_SECONDS have passed since the last download, as a conditional
// request with the validators the server gave (ETag, Last-Modified). A 304, the same bytes or the same
// text change nothing but the record of the check; a file whose text changed becomes a new ingestion of
// the same reference (public.refresh_reference), the version served staying until the new one is ready.
// A file that is no longer a PDF, or no longer one the quality check accepts, is refused as a new link's
// would be, and the stored version stays.
import type { ServiceContext } from '../deps.ts'
import { asService } from '../db/tx.ts'
import type { SafeFetchOptions, SafeResponse } from '../net/safe-fetch.ts'
import type { Source } from '../sources-file.ts'
import type { DiscoveredLink } from './discover.ts'
import { isPdf } from '../pdf/extract.ts'
import { judgeFile } from './judge.ts'
import { hasNamespace } from './namespace.ts'
import { sha256BytesHex } from '../lib/hash.ts'

export interface KnownReference {
  id: string
  pdf_source: string
  grade: string | null
  subject: string | null
  content_fingerprint: string | null
  content_sha256: string | null
  etag: string | null
  last_modified: string | null
  /** its last download is older than REFETCH_AFTER_SECONDS (or was never recorded) */
  due: boolean
}

/** Marks checked, and returns, the references registered at any of `urls` (as their link or their file). */
export async function knownReferences(ctx: ServiceContext, urls: string[]): Promise<KnownReference[]> {
  const after = ctx.deps.config.REFETCH_AFTER_SECONDS
  return asService(ctx.deps.sql, (tx) =>
    tx<KnownReference[]>`
    update public.curriculum_references set last_checked_at = now()
     where pdf_source = any(${urls}) or source_url = any(${urls})
    returning id, pdf_source, grade, subject, content_fingerprint::text, content_sha256, etag, last_modified,
              (fetched_at is null or fetched_at <= now() - make_interval(secs => ${after})) as due`)
}

/** Records what a download of a reference's file looked like (after its registration, or a check that found it unchanged). */
export async function recordFetch(
  ctx: ServiceContext,
  referenceId: string,
  file: Pick<SafeResponse, 'etag' | 'lastModified' | 'bytes' | 'status'>,
  sha256: string | null = file.status === 304 ? null : sha256BytesHex(file.bytes),
): Promise<void> {
  await asService(ctx.deps.sql, (tx) => tx`select public.record_reference_fetch(${referenceId}, ${sha256}, ${file.etag}, ${file.lastModified})`)
}

export type RefetchOutcome = 'known' | 'changed' | { rejected: string }

/** Checks a known reference's file again; `download` is the sync's (its hosts, limits and guard). */
export async function refetchKnown(
  ctx: ServiceContext,
  source: Source,
  link: DiscoveredLink,
  ref: KnownReference,
  download: (url: string, conditional: Pick<SafeFetchOptions, 'ifNoneMatch' | 'ifModifiedSince'>) => Promise<SafeResponse>,
): Promise<RefetchOutcome> {
  const file = await download(ref.pdf_source, { ifNoneMatch: ref.etag, ifModifiedSince: ref.last_modified })
  if (file.status === 304) {
    await recordFetch(ctx, ref.id, file, null)
    return 'known'
  }
  const sha256 = sha256BytesHex(file.bytes)
  if (sha256 === ref.content_sha256) {
    await recordFetch(ctx, ref.id, file, sha256)
    return 'known'
  }
  if (!isPdf(file.bytes)) {
    return { rejected: `the file at this registered address is no longer a PDF (served as ${file.contentType || 'no content type'}): the version stored stays` }
  }
  const judged = await judgeFile(ctx, source, link, file)
  if (judged.rejected !== null) return { rejected: `the file at this registered address changed, and is refused: ${judged.rejected}; the version stored stays` }
  // new bytes, the same text (a file saved again, its metadata changed): nothing to ingest
  if (judged.fingerprint !== null && judged.fingerprint === ref.content_fingerprint) {
    await recordFetch(ctx, ref.id, file, sha256)
    return 'known'
  }
  const { config } = ctx.deps
  const details = { source: source.name, warnings: judged.details.warnings, previous_sha256: ref.content_sha256, sha256 }
  await asService(ctx.deps.sql, (tx) =>
    tx`
    select outcome from public.refresh_reference(${ref.id}, ${judged.fingerprint}::bigint, ${sha256}, ${file.etag}, ${file.lastModified},
      ${config.DUPLICATE_HAMMING_THRESHOLD}, ${hasNamespace(ref.grade, ref.subject)}, ${judged.needsOcr}, ${tx.json(details)})`)
  ctx.deps.logs.forRequest('scraper', ctx.requestId).info(
    { source: source.name, reference_id: ref.id, url: ref.pdf_source },
    'file changed at its address: ingested again',
  )
  return 'changed'
}
