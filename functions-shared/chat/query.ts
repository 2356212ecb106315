// The question as the searches take it: its own text and, when the provider can translate, its
// translation into the other curriculum language (French for an Arabic or Hassaniya question, Arabic
// for a French one), both embedded in one call. A lesson that exists in one language only is found from
// a question in the other: each form is searched and the lists are fused (by best rank, fuseLists). One
// preparation per turn serves the subject inference and the retrieval alike.
import type { Deps } from '../deps.ts'
import { type Candidate, type CatalogueScope, catalogueSearch, type RetrievalFilters, search, type SearchOptions } from './retrieve.ts'

export type QuestionLanguage = 'fr' | 'ar' | 'hassaniya'

/**
 * What became of the translation into the other curriculum language: `searched` (both forms are
 * searched), `unchanged` (the provider returned the text as it was), `failed` (the provider erred: the
 * question alone is searched), `not_possible` (the provider cannot translate: offline), `not_needed` (the
 * search keeps to documents in the question's own language).
 */
export type CrossLingualStatus = 'searched' | 'unchanged' | 'failed' | 'not_possible' | 'not_needed'

export interface PreparedQuery {
  message: string
  language: QuestionLanguage
  /** the other curriculum language, into which the question is translated */
  other: 'fr' | 'ar'
  /** the question's translation, when it is searched */
  translation: string | null
  status: CrossLingualStatus
  /** the texts searched (the question first) and their vectors, in the same order */
  texts: string[]
  vectors: number[][]
  /** searches already made for it (a subject's candidates found with the catalogue's, searchCatalogue), by searchKey */
  found?: Map<string, Candidate[]>
}

export const otherLanguage = (language: QuestionLanguage): 'fr' | 'ar' => (language === 'fr' ? 'ar' : 'fr')

/** Whether a translation can find anything: not when the search keeps to the question's own language. */
export const translationUseful = (language: QuestionLanguage, documentLanguage: string | null | undefined): boolean =>
  !documentLanguage || documentLanguage === otherLanguage(language)

export async function prepareQuery(
  deps: Deps,
  message: string,
  language: QuestionLanguage,
  options: { translate?: boolean; timed?: <T>(name: string, fn: () => Promise<T>) => Promise<T> } = {},
): Promise<PreparedQuery> {
  const timed = options.timed ?? ((_name, fn) => fn())
  const other = otherLanguage(language)
  let translation: string | null = null
  let status: CrossLingualStatus = options.translate === false ? 'not_needed' : 'not_possible'
  if (deps.ai.translates && options.translate !== false) {
    try {
      const text = (await timed('translate', () => deps.ai.translate(message, language, other))).trim()
      if (text !== '' && text !== message.trim()) {
        translation = text
        status = 'searched'
      } else status = 'unchanged'
    } catch {
      status = 'failed' // the question alone is searched
    }
  }
  const texts = translation ? [message, translation] : [message]
  const vectors = await timed('embed', () => deps.ai.embed(texts))
  return { message, language, other, translation, status, texts, vectors }
}

/**
 * Candidates fused from the lists of the question's forms: each chunk scores its best 1/(k + rank) over
 * the lists that hold it, ties going to the chunk that holds more of a question's words (text coverage),
 * then to the nearer. The best rank rather than the sum (plain reciprocal rank fusion): the forms are
 * in two languages, and a chunk that one form finds first (the lesson in the other language) must not
 * lose to chunks both forms find by the vectors alone. One list is returned as it is.
 */
export function fuseLists(lists: readonly Candidate[][], k: number, limit: number): Candidate[] {
  if (lists.length === 1) return lists[0]!.slice(0, limit)
  const fused = new Map<string, Candidate & { fused: number }>()
  for (const list of lists) {
    for (const [i, c] of list.entries()) {
      const seen = fused.get(c.chunk_id)
      const score = 1 / (k + i + 1)
      if (!seen) fused.set(c.chunk_id, { ...c, fused: score })
      else {
        seen.fused = Math.max(seen.fused, score)
        seen.distance = Math.min(seen.distance, c.distance)
        if (c.text_coverage !== undefined) seen.text_coverage = Math.max(seen.text_coverage ?? 0, c.text_coverage)
      }
    }
  }
  return [...fused.values()]
    .sort((a, b) => b.fused - a.fused || (b.text_coverage ?? 0) - (a.text_coverage ?? 0) || a.distance - b.distance)
    .slice(0, limit)
    .map(({ fused, ...c }) => ({ ...c, score: fused }))
}

/** What a search is asked, as the searches already made are found by. */
const searchKey = (k: number, filters: RetrievalFilters, options: SearchOptions) =>
  JSON.stringify([k, filters.grade ?? null, filters.subject ?? null, filters.language ?? null, filters.fileId ?? null, options.coverage ?? true])

/** Every form of the question searched with the same filters (in parallel), fused; a search already made for it is not made again. */
export async function searchQuestion(
  deps: Deps,
  query: PreparedQuery,
  k: number,
  filters: RetrievalFilters,
  options: SearchOptions = {},
): Promise<Candidate[]> {
  const found = query.found?.get(searchKey(k, filters, options))
  if (found) return found
  const lists = await Promise.all(query.texts.map((text, i) => search(deps, query.vectors[i]!, text, k, filters, options)))
  return fuseLists(lists, deps.config.RETRIEVAL_RRF_K, k)
}

/**
 * The subject inference's search over the catalogue (k hits under the grade and language filters), which
 * also finds, for each of `scope.subjects` its hits hold, the candidates the retrieval will search for
 * once that subject is chosen (scope.k of them, coverage off): kept with the question, so that the
 * retrieval's searchQuestion does not search again (one search per question). A subject some form of the
 * question did not find among its hits is searched by the retrieval as before. Dense retrieval
 * (RETRIEVAL_MODE) searches as searchQuestion does.
 */
export async function searchCatalogue(
  deps: Deps,
  query: PreparedQuery,
  k: number,
  filters: RetrievalFilters,
  scope: CatalogueScope,
): Promise<Candidate[]> {
  if (deps.config.RETRIEVAL_MODE !== 'hybrid') return searchQuestion(deps, query, k, filters)
  const results = await Promise.all(query.texts.map((text, i) => catalogueSearch(deps, query.vectors[i]!, text, k, filters, scope)))
  const found = query.found ?? (query.found = new Map())
  for (const subject of scope.subjects) {
    const lists = results.map((r) => r.scoped.get(subject))
    if (lists.every((l): l is Candidate[] => l !== undefined)) {
      found.set(searchKey(scope.k, { ...filters, subject }, { coverage: false }), fuseLists(lists, deps.config.RETRIEVAL_RRF_K, scope.k))
    }
  }
  return fuseLists(results.map((r) => r.hits), deps.config.RETRIEVAL_RRF_K, k)
}
