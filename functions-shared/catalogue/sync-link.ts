// One link of a sync (sync.ts): its file downloaded, or the page it leads to followed to one PDF, judged,
// and registered, or a known reference's file checked again; what the quality check refuses is audited.
import type { ServiceContext } from '../deps.ts'
import { asService } from '../db/tx.ts'
import { safeFetch, type SafeFetchOptions } from '../net/safe-fetch.ts'
import { type DiscoveredLink, pdfsOfPage } from './discover.ts'
import { allowedHosts } from './sources.ts'
import { knownReferences, recordFetch, refetchKnown } from './refetch.ts'
import type { Source } from '../sources-file.ts'
import { isPdf } from '../pdf/extract.ts'
import { judgeFile } from './judge.ts'
import { hasNamespace } from './namespace.ts'

type Outcome = 'new' | 'needs_metadata' | 'duplicate' | 'quality_failed' | 'error' | 'known' | 'changed'
/** public.register_reference's outcome for a link that passed the checks */
type Registration = Extract<Outcome, 'new' | 'needs_metadata' | 'duplicate' | 'known'>

/** A link whose download or reading failed, or whose file the quality check refused: its URL and why. */
export interface LinkFailure {
  url: string
  message: string
}

async function rejectForQuality(ctx: ServiceContext, source: Source, link: DiscoveredLink, reason: string, rejected: LinkFailure[]) {
  rejected.push({ url: link.url, message: reason })
  await asService(ctx.deps.sql, (tx) =>
    tx`
    insert into public.ingestion_audit (source_url, to_status, error_message, details)
    values (${link.url}, 'rejected', ${reason}, ${tx.json({ source: source.name, stage: 'quality_check', listing: link.listing })})`)
  ctx.deps.logs.forRequest('scraper', ctx.requestId).info({ source: source.name, url: link.url, reason }, 'document rejected by the quality check')
}

const touchIfKnown = async (ctx: ServiceContext, urls: string[]) => (await knownReferences(ctx, urls)).length > 0

/** Marks checked, and says whether there is, a reference of the source at `url` but for its query, of that fingerprint, grade and subject. */
async function touchIfSameFile(
  ctx: ServiceContext,
  source: string,
  url: string,
  fingerprint: string,
  grade: string | null,
  subject: string | null,
): Promise<boolean> {
  const bare = new URL(url)
  bare.search = ''
  const rows = await asService(ctx.deps.sql, (tx) =>
    tx`
    update public.curriculum_references set last_checked_at = now()
     where source = ${source} and content_fingerprint = ${fingerprint}::bigint and split_part(pdf_source, '?', 1) = ${bare.toString()}
       and lower(grade) is not distinct from lower(${grade}::text) and subject is not distinct from ${subject}::text
    returning id`)
  return rows.length > 0
}

export async function processLink(ctx: ServiceContext, source: Source, runId: string, link: DiscoveredLink, rejected: LinkFailure[]): Promise<Outcome> {
  const { config } = ctx.deps
  const download = (url: string, conditional: Pick<SafeFetchOptions, 'ifNoneMatch' | 'ifModifiedSince'> = {}) =>
    safeFetch(url, {
      allowedHosts: allowedHosts(source),
      allowLoopback: config.FETCH_ALLOW_LOOPBACK,
      maxBytes: config.UPLOAD_MAX_BYTES,
      timeoutMs: config.FETCH_TIMEOUT_MS,
      resolve: ctx.deps.resolveHost,
      ...(ctx.deps.connectGuard ? { guard: ctx.deps.connectGuard } : {}),
      accept: 'application/pdf',
      ...conditional,
    })
  // a link registered before: its file is checked again once REFETCH_AFTER_SECONDS have passed
  const [known] = await knownReferences(ctx, [link.url])
  if (known) {
    if (!known.due) return 'known'
    const outcome = await refetchKnown(ctx, source, link, known, download)
    if (typeof outcome === 'string') return outcome
    await rejectForQuality(ctx, source, link, outcome.rejected, rejected)
    return 'quality_failed'
  }
  let file = await download(link.url)
  // the URL the ingestion downloads the PDF from: the link's, or the one its page leads to
  let pdfSource = link.url
  if (file.url !== link.url && (await touchIfKnown(ctx, [file.url]))) return 'known'
  if (!isPdf(file.bytes)) {
    // the body decides, not the type the server gave it: a portal can serve an error page as application/pdf
    let reason = `not a PDF (served as ${file.contentType || 'no content type'}; the body does not start with %PDF-)`
    // an HTML page where a PDF was linked may lead to it: a viewer's link names it in its query, a download
    // page refreshes to it or holds it in a frame. One such PDF is the link's document; a page that leads
    // to several is a listing, which the run names
    const page = /html|xml/i.test(file.contentType) || /^\s*</.test(new TextDecoder('latin1').decode(file.bytes.subarray(0, 64)))
      ? pdfsOfPage(file.bytes, file.contentType, file.url, link.url, new RegExp(source.pdf_pattern, 'iu'))
      : null
    // what its query names, else what the page shows or goes to (a refresh, a frame), else what it links,
    // and that only when the page is the link's own: a login page a link was redirected to can hold a
    // PDF of the portal's template, which is no lesson's
    const leads = !page ? [] : page.named.length > 0 ? page.named : page.shown.length > 0 ? page.shown : file.url === link.url ? page.linked : []
    if (leads.length === 1) {
      const inner = leads[0]!
      if (await touchIfKnown(ctx, [inner])) return 'known'
      const found = await download(inner).catch((err: Error) => {
        reason += `: the PDF it leads to, ${inner}, could not be downloaded: ${err.message}`
        return null
      })
      if (found && found.url !== inner && (await touchIfKnown(ctx, [found.url]))) return 'known'
      if (found && isPdf(found.bytes)) {
        file = found
        pdfSource = inner
      } else if (found) reason += `: nor is the file it leads to, ${inner}`
    } else if (leads.length > 1) {
      reason += `: the page links ${leads.length} PDFs (${leads.slice(0, 3).join(', ')}${
        leads.length > 3 ? ', ...' : ''
      }); list it as a listing page (index_urls or next_selector) to have each registered`
    }
    if (!isPdf(file.bytes)) {
      await rejectForQuality(ctx, source, link, reason, rejected)
      return 'quality_failed'
    }
  }
  const judged = await judgeFile(ctx, source, link, file)
  if (judged.rejected !== null) {
    await rejectForQuality(ctx, source, link, judged.rejected, rejected)
    return 'quality_failed'
  }
  const { meta, language, fingerprint } = judged
  // the same file at the same address but for its query string, filed under the same grade and subject:
  // the reference already stored. A portal that puts a new query on its links at every page view (a
  // cache buster, a session) had each sync download the file again and register it again, as a duplicate
  // of itself, a reference more each time
  if (fingerprint !== null && new URL(pdfSource).search !== '' && (await touchIfSameFile(ctx, source.name, pdfSource, fingerprint, meta.grade, meta.subject))) {
    return 'known'
  }
  // the registration, its duplicate decision, job and audit: one transaction in public.register_reference
  const details = { source: source.name, trigger: 'scraper sync', ...judged.details }
  const [registered] = await asService(ctx.deps.sql, (tx) =>
    tx<{ outcome: Registration; reference_id: string }[]>`
    select outcome, reference_id from public.register_reference(${source.name}, ${pdfSource}, ${file.url}, ${meta.title}, ${meta.major}, ${meta.weight}, ${meta.category},
      ${meta.grade}, ${meta.subject}, ${language}, ${fingerprint}::bigint, ${runId}, ${config.DUPLICATE_HAMMING_THRESHOLD},
      ${hasNamespace(meta.grade, meta.subject)}, ${judged.needsOcr}, ${tx.json(details)})`)
  const outcome: Outcome = registered!.outcome
  // what this download looked like: the next check of the file sends its validators back
  if (outcome !== 'known') await recordFetch(ctx, registered!.reference_id, file)
  if (outcome === 'needs_metadata') {
    ctx.deps.logs.forRequest('scraper', ctx.requestId).info(
      { source: source.name, url: file.url, grade: meta.grade, subject: meta.subject },
      'reference registered without grade or subject: not queued',
    )
  }
  return outcome
}
