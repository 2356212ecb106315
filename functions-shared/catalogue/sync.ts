// The sync of one source (spec §1, scraper pipeline): discover, then for each PDF download, extract,
// canonicalize, check quality, fingerprint, compare, insert. Per-document failures are counted and
// logged; they never abort the run.
import type { ServiceContext } from '../deps.ts'
import { asService } from '../db/tx.ts'
import { DomainError } from '../domain/errors.ts'
import { FetchError } from '../net/safe-fetch.ts'
import { type DiscoveredLink, discoverLinks, type ListingFailure, MAX_PAGE_BYTES } from './discover.ts'
import type { Source } from '../sources-file.ts'
import { closeAbandonedRuns } from './listings.ts'
import { type LinkFailure, processLink } from './sync-link.ts'

export interface SyncResult {
  run_id: string
  source: string
  status: 'completed' | 'failed' | 'interrupted'
  found_count: number
  new_count: number
  duplicates: number
  quality_failed: number
  errors: number
  known: number
  /** known references whose file changed at its address: ingested again */
  changed: number
  /** of new_count: references without a grade or subject, registered but not queued (no namespace) */
  needs_metadata: number
}

/** Downloads in a row from one host that time out before the run leaves that host's other links for the next. */
export const SYNC_HOST_TIMEOUTS = 3

/**
 * A new running run of the source; a conflict naming the run already running, as a source has one at a
 * time (scrape_runs_one_running_idx): a second sync would download, read and register the same links.
 */
async function startRun(ctx: ServiceContext, source: string, at: Date, again = true): Promise<string> {
  const [row] = await asService(
    ctx.deps.sql,
    (tx) =>
      tx<{ run_id: string | null; running_id: string | null; running_started_at: Date | null; running_heartbeat_at: Date | null }[]>`
    select * from public.start_scrape_run(${source}, ${at})`,
  )
  if (row?.run_id) return row.run_id
  // the run ended between the insert and the look at it: the source is free again
  if (!row && again) return startRun(ctx, source, at, false)
  throw new DomainError(
    'conflict',
    row?.running_id
      ? `A sync of ${source} is already running (run ${row.running_id}, started ${row.running_started_at!.toISOString()}, last progress ${
        row.running_heartbeat_at!.toISOString()
      }): wait for it to end (GET /scraping/${source}/runs)`
      : `A sync of ${source} is already running: wait for it to end (GET /scraping/${source}/runs)`,
    row?.running_id ? { run_id: row.running_id } : {},
  )
}

export async function syncSource({ ctx, input: source }: { ctx: ServiceContext; input: Source }): Promise<SyncResult> {
  const log = ctx.deps.logs.forRequest('scraper', ctx.requestId)
  const closed = await closeAbandonedRuns(ctx.deps)
  if (closed > 0) log.warn({ source: source.name, runs: closed }, 'scrape runs without progress closed as failed (their sync died)')
  const now = () => new Date(ctx.deps.clock.now())
  const runId = await startRun(ctx, source.name, now())
  const counts = { new: 0, needs_metadata: 0, duplicate: 0, quality_failed: 0, error: 0, known: 0, changed: 0 }
  let links: DiscoveredLink[] = []
  let failure: string | null = null
  // listing pages that could not be read while others could: the run goes on with the links found
  const unread: ListingFailure[] = []
  // the run's progress, at each listing page and each link done: a run whose heartbeat stops is one whose
  // process died (closeAbandonedRuns), and what it had done by then stays in its counts. A heartbeat that
  // cannot be written is logged, not the end of the run.
  const heartbeat = async () => {
    try {
      await asService(ctx.deps.sql, (tx) =>
        tx`
        select public.heartbeat_scrape_run(${runId}, ${now()}, ${links.length}, ${counts.new + counts.needs_metadata}, ${counts.duplicate},
                                           ${counts.quality_failed}, ${counts.error + unread.length}, ${counts.changed})`)
    } catch (err) {
      log.warn({ source: source.name, run_id: runId, err: { message: (err as Error).message } }, 'scrape run heartbeat not written')
    }
  }
  try {
    links = await discoverLinks(
      source,
      {
        allowLoopback: ctx.deps.config.FETCH_ALLOW_LOOPBACK,
        maxBytes: MAX_PAGE_BYTES,
        timeoutMs: ctx.deps.config.FETCH_TIMEOUT_MS,
        resolve: ctx.deps.resolveHost,
        ...(ctx.deps.connectGuard ? { guard: ctx.deps.connectGuard } : {}),
      },
      (f) => {
        unread.push(f)
        log.warn({ source: source.name, url: f.url, err: { message: f.message } }, 'listing page skipped after an error')
      },
      heartbeat,
    )
  } catch (err) {
    failure = `listing failed: ${(err as Error).message}`
    log.error({ source: source.name, err: { message: (err as Error).message } }, 'scrape run failed')
  }
  // a host whose downloads time out SYNC_HOST_TIMEOUTS times in a row is not answering: its other links
  // are left for the next run (counted in errors), where each would have held the run FETCH_TIMEOUT_MS
  const timeouts = new Map<string, number>()
  const skipped = new Map<string, number>()
  // links whose download or reading failed: named in the run's message, as unread listing pages are
  const failedLinks: LinkFailure[] = []
  // links whose file the quality check refused (not a PDF, unreadable, encrypted, too short...): named
  // too, as the reason is otherwise only in ingestion_audit, which no route shows
  const rejectedLinks: LinkFailure[] = []
  await heartbeat()
  // links done when the process's shutdown began, if it did: the sync stops there, its run interrupted
  let interruptedAt: number | null = null
  for (const [i, link] of links.entries()) {
    if (ctx.deps.background.stopping.aborted) {
      interruptedAt = i
      break
    }
    const host = new URL(link.url).host
    if ((timeouts.get(host) ?? 0) >= SYNC_HOST_TIMEOUTS) {
      counts.error++
      skipped.set(host, (skipped.get(host) ?? 0) + 1)
      continue
    }
    try {
      counts[await processLink(ctx, source, runId, link, rejectedLinks)]++
      timeouts.set(host, 0)
    } catch (err) {
      counts.error++
      failedLinks.push({ url: link.url, message: (err as Error).message })
      const kind = err instanceof FetchError ? err.kind : 'unexpected'
      timeouts.set(host, kind === 'timeout' ? (timeouts.get(host) ?? 0) + 1 : 0)
      log.warn({ source: source.name, url: link.url, kind, err: { message: (err as Error).message } }, 'document skipped after an error')
    }
    await heartbeat()
  }
  for (const [host, n] of skipped) log.warn({ source: source.name, host, skipped: n }, 'links left for the next run: their host did not answer')
  const notes: string[] = []
  const status = failure ? 'failed' : interruptedAt !== null ? 'interrupted' : 'completed'
  if (interruptedAt !== null) {
    notes.push(`interrupted by the service's shutdown after ${interruptedAt} of ${links.length} links: the next sync goes on with the rest`)
    log.warn({ source: source.name, run_id: runId, done: interruptedAt, found: links.length }, 'scrape run interrupted by the shutdown')
  }
  // a run that read some listing pages and not others says which, as a failed run says why; which links
  // it could not download or read (the first five); and which hosts it left links of
  if (!failure && unread.length > 0) {
    const named = unread.slice(0, 5).map((f) => `${f.url}: ${f.message}`).join('; ')
    notes.push(`${unread.length} listing ${unread.length === 1 ? 'page' : 'pages'} could not be read: ${named}${unread.length > 5 ? '; ...' : ''}`)
  }
  if (!failure && failedLinks.length > 0) {
    const named = failedLinks.slice(0, 5).map((f) => `${f.url}: ${f.message}`).join('; ')
    notes.push(
      `${failedLinks.length} ${failedLinks.length === 1 ? 'link' : 'links'} could not be downloaded or read: ${named}${failedLinks.length > 5 ? '; ...' : ''}`,
    )
  }
  if (!failure && rejectedLinks.length > 0) {
    const named = rejectedLinks.slice(0, 5).map((f) => `${f.url}: ${f.message}`).join('; ')
    notes.push(
      `${rejectedLinks.length} ${rejectedLinks.length === 1 ? 'link gives' : 'links give'} no lesson the quality check accepts: ${named}${
        rejectedLinks.length > 5 ? '; ...' : ''
      }`,
    )
  }
  for (const [host, n] of skipped) {
    notes.push(`${n} ${n === 1 ? 'link' : 'links'} of ${host} left for the next run after ${SYNC_HOST_TIMEOUTS} downloads in a row timed out`)
  }
  if (!failure && notes.length > 0) failure = notes.join('; ').slice(0, 2000)
  const listingErrors = status === 'failed' ? Math.max(1, unread.length) : unread.length
  // written whatever the run's status: a run closed as abandoned while it was alive after all gets the
  // outcome it reached
  await asService(ctx.deps.sql, (tx) =>
    tx`
    select public.finish_scrape_run(${runId}, ${status}, ${now()}, ${links.length}, ${counts.new + counts.needs_metadata}, ${counts.duplicate},
                                    ${counts.quality_failed}, ${counts.error + listingErrors}, ${counts.changed}, ${failure})`)
  log.info({ source: source.name, run_id: runId, found: links.length, ...counts, new: counts.new + counts.needs_metadata }, 'scrape run finished')
  return {
    run_id: runId,
    source: source.name,
    status,
    found_count: links.length,
    new_count: counts.new + counts.needs_metadata,
    duplicates: counts.duplicate,
    quality_failed: counts.quality_failed,
    errors: counts.error + listingErrors,
    known: counts.known,
    changed: counts.changed,
    needs_metadata: counts.needs_metadata,
  }
}
