// retrieve_and_rerank (spec §1, chat turn): the question and, when the provider translates, its
// translation into the other curriculum language (query.ts), each searched (hybrid or dense top-K of the
// tier) and fused, chunk text, then rerank to the tier's N by the provider, which reads the candidates
// page by page (pages.ts), falling back to the search's order on error or after RERANK_TIMEOUT_MS. The
// rerank reads the question in French when it has it (an Arabic or Hassaniya question's translation),
// else as written. Rerank results are cached under
// sha256(query + namespace + tier) for RERANK_CACHE_TTL_SECONDS, as chunk ids.
import { sha256Hex } from '../lib/hash.ts'
import type { Deps } from '../deps.ts'
import type { Tier } from '../config.ts'
import { tierLimits } from '../config.ts'
import type { RetrievalCaches } from './retrieve.ts'
import { namespaceFor } from '../catalogue/namespace.ts'
import { chunkTexts, type RetrievalFilters, type RetrievedChunk } from './retrieve.ts'
import { withoutCopies } from './copies.ts'
import { rerankByPage } from './pages.ts'
import { type CrossLingualStatus, type PreparedQuery, prepareQuery, searchQuestion, translationUseful } from './query.ts'

export interface RetrievalResult {
  /** the text the rerank read */
  query: string
  /** an Arabic or Hassaniya question was translated to French */
  translated: boolean
  translation_failed: boolean
  /** the search of the question's translation into the other curriculum language */
  cross_lingual: { status: CrossLingualStatus; language: 'fr' | 'ar'; query: string | null }
  candidates: number
  snippets: RetrievedChunk[]
  rerank: 'model' | 'cache' | 'fallback_error' | 'fallback_timeout'
}

class RerankTimeout extends Error {}

/**
 * The namespace part of the rerank cache key: the vector namespace grade-{grade}-{subject} when both are
 * known; otherwise (and with a language or textbook filter) a spelling of the filters, so two searches
 * over different candidates never share a cached ranking.
 */
export function rerankScope(f: RetrievalFilters): string {
  const ns = f.grade && f.subject
    ? namespaceFor(f.grade, f.subject)
    : ['all', f.grade && `grade=${f.grade.toLowerCase()}`, f.subject && `subject=${f.subject}`].filter(Boolean).join(';')
  return [ns, f.language && `language=${f.language}`, f.fileId && `file=${f.fileId}`].filter(Boolean).join(';')
}

export async function retrieveAndRerank(
  deps: Deps,
  input: {
    message: string
    language: 'fr' | 'ar' | 'hassaniya'
    filters: RetrievalFilters
    tier: Tier
    /** the question as prepared for this turn (the subject inference did it); prepared here when absent */
    prepared?: PreparedQuery
    /** the subject filter was guessed: search without it when it finds nothing */
    relaxSubject?: boolean
    /** what the rerank reads when it is not the message searched (a follow-up: searched with the question before it, ranked by its own words) */
    rerankMessage?: string
    /** the time each part took, in ms, by name */
    timings?: Record<string, number>
  },
  caches: RetrievalCaches,
): Promise<RetrievalResult> {
  const limits = tierLimits(deps.config, input.tier)
  const timings = input.timings ?? {}
  const timed = async <T>(name: string, fn: () => Promise<T>): Promise<T> => {
    const start = performance.now()
    try {
      return await fn()
    } finally {
      timings[name] = Math.round((performance.now() - start) * 100) / 100
    }
  }
  const prepared = input.prepared ??
    (await prepareQuery(deps, input.message, input.language, { timed, translate: translationUseful(input.language, input.filters.language) }))
  const translated = input.language !== 'fr' && prepared.translation !== null
  const translationFailed = prepared.status === 'failed'
  const query = translated ? prepared.translation! : input.rerankMessage ?? input.message
  const cross = { status: prepared.status, language: prepared.other, query: prepared.translation }
  let filters = input.filters
  // the answer's retrieval does not read text coverage (the subject inference does)
  let candidates = await timed('search', () => searchQuestion(deps, prepared, limits.topK, filters, { coverage: false }))
  if (candidates.length === 0 && input.relaxSubject && filters.subject) {
    filters = { ...filters, subject: null }
    candidates = await timed('search_relaxed', () => searchQuestion(deps, prepared, limits.topK, filters, { coverage: false }))
  }
  // a lesson ingested twice (a copy the duplicate check let through) is one source, its first document's
  const chunks = withoutCopies(await timed('chunks', () => chunkTexts(deps, candidates, caches.chunks)))
  const namespace = rerankScope(filters)
  // a follow-up's ranking is of the candidates its search with the question before it found
  const key = sha256Hex(`${query}${input.rerankMessage === undefined ? '' : `\n${input.message}`}${namespace}${input.tier}`)
  const byId = new Map(chunks.map((c) => [c.chunk_id, c]))
  const dense = chunks.slice(0, limits.rerankN)

  const cached = caches.rerank.get(key)
  if (cached) {
    const ordered = cached.map((id) => byId.get(id)).filter((c): c is RetrievedChunk => c !== undefined)
    if (ordered.length > 0) {
      return {
        query,
        translated,
        translation_failed: translationFailed,
        cross_lingual: cross,
        candidates: chunks.length,
        snippets: ordered.slice(0, limits.rerankN),
        rerank: 'cache',
      }
    }
  }
  if (chunks.length <= 1) {
    return { query, translated, translation_failed: translationFailed, cross_lingual: cross, candidates: chunks.length, snippets: dense, rerank: 'model' }
  }

  const controller = new AbortController()
  let cancelTimer = () => {}
  const started = performance.now()
  try {
    const order = await Promise.race([
      rerankByPage(deps.ai, query, chunks, limits.rerankN, controller.signal),
      new Promise<never>((_, reject) => (cancelTimer = deps.clock.setTimer(deps.config.RERANK_TIMEOUT_MS, () => reject(new RerankTimeout())))),
    ])
    const ranked = order.map((i) => chunks[i]).filter((c): c is RetrievedChunk => c !== undefined).slice(0, limits.rerankN)
    if (ranked.length === 0) throw new Error('empty ranking')
    caches.rerank.set(key, ranked.map((c) => c.chunk_id))
    return { query, translated, translation_failed: translationFailed, cross_lingual: cross, candidates: chunks.length, snippets: ranked, rerank: 'model' }
  } catch (err) {
    controller.abort()
    return {
      query,
      translated,
      translation_failed: translationFailed,
      cross_lingual: cross,
      candidates: chunks.length,
      snippets: dense,
      rerank: err instanceof RerankTimeout ? 'fallback_timeout' : 'fallback_error',
    }
  } finally {
    cancelTimer()
    timings.rerank = Math.round((performance.now() - started) * 100) / 100
  }
}
