// The subject (and grade) of a question that names neither in its request, found in the catalogue
// rather than in a list. The question (and its translation, query.ts) is searched over every ready
// document the student may see (their grade when they gave it), and the best hits decide:
//
// - a hit's strength is the share of the question's word weight it holds (text_coverage: each word
//   weighs by its rarity in the catalogue) or, for a dense-only search, its cosine similarity; a subject's
//   weight is the strength of its hits among the first CHAT_INFER_VOTERS, each divided by its position,
//   so the first hits count most; the positions are those of the provider's rerank of the hits when it
//   reranks on this machine (CHAT_INFER_RERANK), as the answer's pages are chosen, else the search's;
// - nothing matches when no hit reaches CHAT_INFER_MIN_COVERAGE (hybrid) nor CHAT_INFER_MIN_SIMILARITY:
//   the question is not about the curriculum (a greeting, small talk) and the student is asked what
//   they need;
// - a subject the question names ("en physique", "في التاريخ") is searched on its own first, and wins
//   when its documents match;
// - two subjects within CHAT_INFER_TIE_RATIO of each other are a tie, broken by the subject vocabulary
//   (subjects.ts) when it can, else the student is asked which one.
import type { Deps } from '../deps.ts'
import type { DocumentRow } from '../ingestion/documents.ts'
import type { Candidate } from './retrieve.ts'
import { type PreparedQuery, searchCatalogue, searchQuestion } from './query.ts'
import { chunkTexts } from './retrieve.ts'
import { withoutCopies } from './copies.ts'
import { rerankByPage } from './pages.ts'
import type { RetrievalCaches } from './retrieve.ts'
import { namedSubjects, subjectKey, subjectScores } from '../text/subjects.ts'

interface Evidence {
  hits: number
  best_coverage: number
  best_similarity: number
  subjects: Record<string, number>
  named?: string[]
}

export interface CatalogueMatch {
  kind: 'match'
  subject: string
  grade: string | null
  /** how the hits weighed, for the logs and the usage details */
  evidence: Evidence & { decided_by: 'hits' | 'named' | 'vocabulary' }
}

export interface CatalogueMiss {
  kind: 'no_match' | 'tied'
  /** the subjects in the tie */
  subjects: string[]
  evidence: Evidence
}

const round = (x: number) => Math.round(x * 10_000) / 10_000

/** The grade and subject of each hit's document, as the search read them. */
function documentsOf(hits: readonly Candidate[]): Map<string, { grade: string | null; subject: string | null }> {
  return new Map(hits.map((h) => [h.file_id, { grade: h.grade ?? null, subject: h.subject ?? null }]))
}

/** A grade and subject of the ready documents, read with each question (settle.ts, refuseBeforeReading). */
export interface CatalogueSubject {
  grade: string | null
  subject: string
}

/**
 * The subjects of the ready documents (of a grade), read with each question: a document published a
 * moment ago is named (the cached places may be PLACES_TTL_MS old). Read with the wallet when the turn
 * gives them, else here.
 */
async function catalogueSubjects(deps: Deps, grade: string | null, catalogue?: readonly CatalogueSubject[]): Promise<string[]> {
  if (catalogue) {
    const wanted = grade?.toLowerCase()
    return [...new Set(catalogue.filter((c) => wanted === undefined || c.grade?.toLowerCase() === wanted).map((c) => c.subject))]
  }
  const rows = await deps.sql<{ subject: string }[]>`
    select distinct subject from public.documents
     where status = 'ready' and subject is not null and (${grade}::text is null or lower(grade) = lower(${grade}::text))`
  return rows.map((r) => r.subject)
}

interface Weighed {
  hits: Candidate[]
  docs: Map<string, { grade: string | null; subject: string | null }>
  ranked: [string, number][]
  matched: boolean
  evidence: Evidence
}

function weigh(deps: Deps, hits: Candidate[]): Weighed {
  const { config } = deps
  const docs = documentsOf(hits)
  const strength = (h: Candidate) => (h.text_coverage !== undefined ? h.text_coverage : Math.max(0, 1 - h.distance))
  const weights = new Map<string, number>()
  for (const [i, h] of hits.slice(0, config.CHAT_INFER_VOTERS).entries()) {
    const subject = docs.get(h.file_id)?.subject
    if (subject) weights.set(subject, (weights.get(subject) ?? 0) + strength(h) / (i + 1))
  }
  const ranked = [...weights].sort((a, b) => b[1] - a[1])
  const bestCoverage = hits.reduce((best, h) => Math.max(best, h.text_coverage ?? 0), 0)
  const bestSimilarity = hits.reduce((best, h) => Math.max(best, 1 - h.distance), 0)
  const hybrid = hits.some((h) => h.text_coverage !== undefined)
  const matched = ranked.length > 0 && ((hybrid && bestCoverage >= config.CHAT_INFER_MIN_COVERAGE) || bestSimilarity >= config.CHAT_INFER_MIN_SIMILARITY)
  const evidence: Evidence = {
    hits: hits.length,
    best_coverage: round(bestCoverage),
    best_similarity: round(bestSimilarity),
    subjects: Object.fromEntries(ranked.map(([s, w]) => [s, round(w)])),
  }
  return { hits, docs, ranked, matched, evidence }
}

/** The grade whose documents weigh most among the hits of a subject. */
function gradeOf(w: Weighed, subject: string): string | null {
  const grades = new Map<string, number>()
  for (const [i, h] of w.hits.entries()) {
    const doc = w.docs.get(h.file_id)
    if (doc?.subject === subject && doc.grade) grades.set(doc.grade, (grades.get(doc.grade) ?? 0) + 1 / (i + 1))
  }
  return [...grades].sort((a, b) => b[1] - a[1])[0]?.[0] ?? null
}

/** Whether the subject's votes are ordered by the provider's rerank (CHAT_INFER_RERANK; auto: a rerank on this machine, the offline one). */
export const infersWithRerank = (deps: Deps): boolean =>
  deps.config.CHAT_INFER_RERANK === 'on' || (deps.config.CHAT_INFER_RERANK === 'auto' && deps.ai.name === 'offline')

/**
 * The hits in the order the provider's rerank puts them (the question read as the answer's rerank reads
 * it), within RERANK_TIMEOUT_MS; the search's order when the rerank is off, fails or is late.
 */
async function rerankedHits(deps: Deps, query: PreparedQuery, hits: Candidate[], chunks: RetrievalCaches['chunks']): Promise<Candidate[]> {
  if (hits.length < 2) return hits
  let cancel = () => {}
  const controller = new AbortController()
  try {
    // a lesson published twice votes once, as its pages are the turn's sources once (copies.ts): the
    // pages of a copy that the duplicate check let through doubled its subject's weight
    const texts = withoutCopies(await chunkTexts(deps, hits, chunks))
    if (!infersWithRerank(deps)) return texts
    const rerankQuery = query.language !== 'fr' && query.translation !== null ? query.translation : query.message
    const order = await Promise.race([
      rerankByPage(deps.ai, rerankQuery, texts, texts.length, controller.signal),
      new Promise<never>((_, reject) => (cancel = deps.clock.setTimer(deps.config.RERANK_TIMEOUT_MS, () => reject(new Error('rerank timeout'))))),
    ])
    const ranked = order.map((i) => texts[i]).filter((c): c is (typeof texts)[number] => c !== undefined)
    // a ranking that leaves hits out (a model's) keeps the rest in the search's order after it
    const seen = new Set(ranked.map((c) => c.chunk_id))
    return [...ranked, ...texts.filter((c) => !seen.has(c.chunk_id))]
  } catch {
    controller.abort()
    return hits
  } finally {
    cancel()
  }
}

export async function inferFromCatalogue(
  deps: Deps,
  input: {
    query: PreparedQuery
    grade: string | null
    language: string | null
    /** the retrieval's number of candidates (the tier's top-K): the search finds each subject's with the catalogue's hits */
    retrievalK?: number
    /** the catalogue's grades and subjects, when the turn read them */
    catalogue?: readonly CatalogueSubject[]
  },
  chunks: RetrievalCaches['chunks'],
): Promise<CatalogueMatch | CatalogueMiss> {
  const { config } = deps
  const filters = { grade: input.grade, language: input.language }
  const message = input.query.message
  const subjects = await catalogueSubjects(deps, input.grade, input.catalogue)
  const named = namedSubjects(message, subjects)
  if (named.length === 1) {
    const w = weigh(deps, await searchQuestion(deps, input.query, config.CHAT_INFER_DEPTH, { ...filters, subject: named[0]! }))
    if (w.matched) {
      return { kind: 'match', subject: named[0]!, grade: input.grade ?? gradeOf(w, named[0]!), evidence: { ...w.evidence, named, decided_by: 'named' } }
    }
  }
  const hits = input.retrievalK === undefined
    ? await searchQuestion(deps, input.query, config.CHAT_INFER_DEPTH, filters)
    // the candidates of the subjects the hits are likely to choose (weighed in the search's order)
    : await searchCatalogue(deps, input.query, config.CHAT_INFER_DEPTH, filters, {
      subjects,
      k: input.retrievalK,
      voters: config.CHAT_INFER_VOTERS,
      ratio: config.CHAT_INFER_TIE_RATIO,
    })
  const w = weigh(deps, await rerankedHits(deps, input.query, hits, chunks))
  const evidence = named.length > 0 ? { ...w.evidence, named } : w.evidence
  if (!w.matched) return { kind: 'no_match', subjects: [], evidence }

  const tied = w.ranked.filter(([, weight]) => weight >= w.ranked[0]![1] * config.CHAT_INFER_TIE_RATIO).map(([s]) => s)
  if (tied.length === 1) return { kind: 'match', subject: tied[0]!, grade: input.grade ?? gradeOf(w, tied[0]!), evidence: { ...evidence, decided_by: 'hits' } }
  // a subject the question names, or else its vocabulary, decides between the tied subjects when one leads
  const namedInTie = tied.filter((s) => named.includes(s))
  if (namedInTie.length === 1) {
    return { kind: 'match', subject: namedInTie[0]!, grade: input.grade ?? gradeOf(w, namedInTie[0]!), evidence: { ...evidence, decided_by: 'named' } }
  }
  const vocabulary = subjectScores(message)
  const byVocabulary = tied.map((s) => [s, vocabulary.get(subjectKey(s) ?? s) ?? 0] as const).sort((a, b) => b[1] - a[1])
  if (byVocabulary[0]![1] > (byVocabulary[1]?.[1] ?? 0)) {
    const subject = byVocabulary[0]![0]
    return { kind: 'match', subject, grade: input.grade ?? gradeOf(w, subject), evidence: { ...evidence, decided_by: 'vocabulary' } }
  }
  return { kind: 'tied', subjects: tied, evidence }
}

/** What the catalogue offers (ready documents): its subjects and grades, to name in a clarifying question. */
export async function catalogueOptions(deps: Deps): Promise<{ subjects: string[]; grades: string[] }> {
  const rows = await deps.sql<Pick<DocumentRow, 'subject' | 'grade'>[]>`select distinct subject, grade from public.documents where status = 'ready'`
  const subjects = [...new Set(rows.map((r) => r.subject).filter((s): s is string => !!s))].sort()
  const grades = [...new Set(rows.map((r) => r.grade).filter((g): g is string => !!g))].sort()
  return { subjects, grades }
}
