// Stage 1 of retrieval (spec §1, chat turn): dense top-K from pgvector's HNSW index with prefilters on
// grade, subject and language (and the namespace grade-{grade}-{subject} when both are known), then the
// chunk text by chunk id through a cache whose key carries the document's ingestion timestamp.
//
// With a WHERE on metadata, HNSW returns only the ef_search nearest rows before filtering, so a selective
// filter would starve the result; pgvector 0.8's iterative scan (relaxed order) keeps scanning until K
// rows pass the filter. Relaxed order means rows come back nearly sorted, so they are re-sorted here.
// When the namespace is known, its primary-key range is small enough to rank exactly (the planner's
// choice, since match_chunks plans each query for its values).
import type { Deps } from '../deps.ts'
import type { TtlCache } from '../lib/ttl-cache.ts'
import { vectorLiteral } from '../lib/vector.ts'
import { namespaceFor } from '../catalogue/namespace.ts'
import type { CataloguePlace } from '../catalogue/filters.ts'

/**
 * chunk text by chunk id and ingestion timestamp; a ranking (chunk ids) by question, scope and tier; the
 * catalogue's grades and subjects (catalogue/filters.ts), read at most once every PLACES_TTL_MS
 */
export interface RetrievalCaches {
  chunks: TtlCache<ChunkText>
  rerank: TtlCache<string[]>
  places: TtlCache<Promise<CataloguePlace[]>>
}

export interface RetrievalFilters {
  grade?: string | null
  subject?: string | null
  language?: string | null
  /** one document only (a textbook the student picked) */
  fileId?: string | null
}

export interface Candidate {
  chunk_id: string
  file_id: string
  namespace: string
  distance: number
  page_number: number
  source_url: string | null
  ingestion_ts: string | null
  /** hybrid search: the rank in each branch (null when that branch did not find it) and the fused score */
  dense_rank?: number | null
  text_rank?: number | null
  score?: number
  /** hybrid search: the share of the question's word weight (idf) this chunk holds, 0..1 */
  text_coverage?: number
  /** its document's grade and subject (read in the search's statement: the subject inference votes with them) */
  grade?: string | null
  subject?: string | null
}

/** What chunkTexts reads of a chunk, and caches. */
export interface ChunkText {
  text: string
  title: string | null
  /** the chunk's place in its document: the order of a page's windows */
  chunk_index: number
  /**
   * what its lesson is about: the document's opening sentence (its first chunk's text up to the first
   * full stop, question or exclamation mark, TOPIC_CHARS at the most), as a lesson names itself
   * ("Leçon 3 : les équations du premier degré à une inconnue.", "الدرس التاسع: التشبيه.")
   */
  topic: string | null
}

/** The longest opening sentence a chunk's topic holds. */
export const TOPIC_CHARS = 200

/** A text's opening sentence (a full stop, question or exclamation mark ends it; a colon does not), TOPIC_CHARS at the most. */
export function openingSentence(text: string): string | null {
  const first = text.split(/(?<=[.!?؟])\s+/u)[0]!.trim()
  return first === '' ? null : Array.from(first).slice(0, TOPIC_CHARS).join('')
}

export interface RetrievedChunk extends Candidate, ChunkText {}

/** A vector as pgvector's text, made once per vector: a question's inference and retrieval search with the same one. */
const literals = new WeakMap<readonly number[], string>()
function literalOf(v: readonly number[]): string {
  let literal = literals.get(v)
  if (literal === undefined) literals.set(v, literal = vectorLiteral(v))
  return literal
}

/** The prefilters as both search functions take them: the namespace when grade and subject are known. */
function filterArgs(filters: RetrievalFilters) {
  return {
    namespace: filters.grade && filters.subject ? namespaceFor(filters.grade, filters.subject) : null,
    grade: filters.grade ?? null,
    subject: filters.subject ?? null,
    language: filters.language ?? null,
    file: filters.fileId ?? null,
  }
}

/** A row of public.match_chunks: the page, source and ingestion timestamp are read from the vector's metadata (text). */
interface MatchRow {
  id: string
  file_id: string
  namespace: string
  page_number: number | null
  source_url: string | null
  ingestion_ts: string | null
  distance: number
  /** joined from public.documents */
  grade: string | null
  subject: string | null
}

/** A row of public.hybrid_search: a match with its rank in each branch (null where that branch missed it) and the fused score. */
interface HybridRow extends MatchRow {
  dense_rank: number | null
  text_rank: number | null
  score: number
  text_coverage: number
}

/** A row of match_chunks or hybrid_search as a candidate. */
const toCandidate = (r: MatchRow): Candidate => ({
  chunk_id: r.id,
  file_id: r.file_id,
  namespace: r.namespace,
  distance: Number(r.distance),
  page_number: Number(r.page_number ?? 0),
  source_url: r.source_url,
  ingestion_ts: r.ingestion_ts,
  grade: r.grade,
  subject: r.subject,
})

export async function denseSearch(deps: Deps, vector: readonly number[], k: number, filters: RetrievalFilters): Promise<Candidate[]> {
  const { namespace, grade, subject, language, file } = filterArgs(filters)
  // one statement: public.match_chunks puts only the filters present into the query and runs it with
  // the iterative scan on (see the chat migration)
  const rows = await deps.sql<MatchRow[]>`
    select h.*, d.grade, d.subject
      from public.match_chunks(${deps.config.VECTOR_INDEX_NAME}, ${literalOf(vector)}::extensions.vector, ${k},
                               ${namespace}, ${grade}, ${subject}, ${language}, ${file}::uuid,
                               p_exact_below => ${deps.config.RETRIEVAL_EXACT_BELOW}, p_ef_search => ${deps.config.HNSW_EF_SEARCH}) with ordinality h
      left join public.documents d on d.id = h.file_id
     order by h.ordinality`
  return rows.map(toCandidate).sort((a, b) => a.distance - b.distance)
}

/** A row of public.catalogue_search: a hybrid_search row of one scope (null: the catalogue, else a subject). */
interface ScopedRow extends HybridRow {
  scope: string | null
}

const hybridCandidate = (r: HybridRow): Candidate => ({
  ...toCandidate(r),
  dense_rank: r.dense_rank === null ? null : Number(r.dense_rank),
  text_rank: r.text_rank === null ? null : Number(r.text_rank),
  score: Number(r.score),
  text_coverage: Number(r.text_coverage),
})

/**
 * The subjects whose candidates catalogueSearch finds with the catalogue's hits (those of `subjects` the
 * hits hold; with `voters` and `ratio`, only those whose vote over the first `voters` hits reaches
 * `ratio` of the best's), and how many (the retrieval's k).
 */
export interface CatalogueScope {
  subjects: readonly string[]
  k: number
  voters?: number
  ratio?: number
}

/** The inference's hits over the catalogue and, by subject, the retrieval's candidates of that subject. */
export interface CatalogueHits {
  hits: Candidate[]
  /** what hybridSearch(k = scope.k, the subject added to the filters, coverage off) returns, for each subject searched */
  scoped: Map<string, Candidate[]>
}

/**
 * The search of a question whose subject is to be found (public.catalogue_search), in one statement:
 * the catalogue under the grade and language filters ranked as hybridSearch ranks it (k hits, with their
 * text coverage), and, for each of `scope.subjects` that those hits hold, that subject's candidates as
 * the retrieval's hybridSearch would find them once the subject is chosen; the question's words and
 * postings are read once for all of them.
 */
export async function catalogueSearch(
  deps: Deps,
  vector: readonly number[],
  queryText: string,
  k: number,
  filters: RetrievalFilters,
  scope: CatalogueScope,
): Promise<CatalogueHits> {
  const { config } = deps
  const grade = filters.grade ?? null
  const namespaces = scope.subjects.map((s) => (grade ? namespaceFor(grade, s) : null))
  const depth = (n: number, factor: number) => Math.ceil(n * factor)
  const rows = await deps.sql<ScopedRow[]>`
    select h.* from public.catalogue_search(${config.VECTOR_INDEX_NAME}, ${literalOf(vector)}::extensions.vector, ${queryText}, ${k},
                                            ${grade}, ${filters.language ?? null}, ${scope.subjects as string[]}::text[], ${namespaces}::text[],
                                            ${scope.k}, ${depth(k, config.RETRIEVAL_DENSE_DEPTH_FACTOR)}, ${depth(k, config.RETRIEVAL_TEXT_DEPTH_FACTOR)},
                                            ${depth(scope.k, config.RETRIEVAL_DENSE_DEPTH_FACTOR)}, ${depth(scope.k, config.RETRIEVAL_TEXT_DEPTH_FACTOR)},
                                            ${config.RETRIEVAL_RRF_K}, ${config.RETRIEVAL_DENSE_WEIGHT}, ${config.RETRIEVAL_TEXT_WEIGHT},
                                            ${config.RETRIEVAL_EXACT_BELOW}, ${config.HNSW_EF_SEARCH}, ${config.RETRIEVAL_TEXT_COMMON},
                                            ${config.RETRIEVAL_TEXT_POSTINGS}, ${scope.voters ?? null}::int, ${scope.ratio ?? null}::float8) with ordinality h
     order by h.ordinality`
  const hits: Candidate[] = []
  const scoped = new Map<string, Candidate[]>()
  for (const r of rows) {
    if (r.scope === null) hits.push(hybridCandidate(r))
    else {
      const list = scoped.get(r.scope) ?? []
      if (list.length === 0) scoped.set(r.scope, list)
      list.push(hybridCandidate(r))
    }
  }
  return { hits, scoped }
}

/** Options of a search: `coverage` false spares reading the search vector of rows only the dense branch found (their text_coverage is then 0). */
export interface SearchOptions {
  coverage?: boolean
}

/**
 * Hybrid search (public.hybrid_search): the dense branch above and PostgreSQL full-text search over the
 * chunk text, under the same prefilters, fused by reciprocal rank fusion, in one statement. The query
 * text is folded and stemmed in SQL exactly as the chunks were (private.search_vector, which also takes
 * out format characters: a zero-width joiner or a soft hyphen inside a word).
 */
export async function hybridSearch(
  deps: Deps,
  vector: readonly number[],
  queryText: string,
  k: number,
  filters: RetrievalFilters,
  options: SearchOptions = {},
): Promise<Candidate[]> {
  const { config } = deps
  const { namespace, grade, subject, language, file } = filterArgs(filters)
  const depth = (factor: number) => Math.ceil(k * factor)
  // the hits' documents (grade, subject) joined in the same statement, the search's order kept
  const rows = await deps.sql<HybridRow[]>`
    select h.*, d.grade, d.subject
      from public.hybrid_search(${config.VECTOR_INDEX_NAME}, ${literalOf(vector)}::extensions.vector, ${queryText}, ${k},
                                ${namespace}, ${grade}, ${subject}, ${language}, ${file}::uuid,
                                ${depth(config.RETRIEVAL_DENSE_DEPTH_FACTOR)}, ${depth(config.RETRIEVAL_TEXT_DEPTH_FACTOR)}, ${config.RETRIEVAL_RRF_K},
                                ${config.RETRIEVAL_DENSE_WEIGHT}, ${config.RETRIEVAL_TEXT_WEIGHT},
                                p_exact_below => ${config.RETRIEVAL_EXACT_BELOW}, p_ef_search => ${config.HNSW_EF_SEARCH}, p_text_common => ${config.RETRIEVAL_TEXT_COMMON},
                                p_text_postings => ${config.RETRIEVAL_TEXT_POSTINGS}, p_coverage => ${options.coverage ?? true}) with ordinality h
      left join public.documents d on d.id = h.file_id
     order by h.ordinality`
  return rows.map(hybridCandidate)
}

/** The configured search: hybrid, or dense alone (RETRIEVAL_MODE). */
export function search(
  deps: Deps,
  vector: readonly number[],
  queryText: string,
  k: number,
  filters: RetrievalFilters,
  options: SearchOptions = {},
): Promise<Candidate[]> {
  return deps.config.RETRIEVAL_MODE === 'hybrid' ? hybridSearch(deps, vector, queryText, k, filters, options) : denseSearch(deps, vector, k, filters)
}

/** Chunk text by id, through the cache; chunks of documents that are not ready are dropped. */
export async function chunkTexts(deps: Deps, candidates: readonly Candidate[], cache: TtlCache<ChunkText>): Promise<RetrievedChunk[]> {
  const key = (c: Candidate) => `${c.chunk_id}@${c.ingestion_ts ?? ''}`
  const found = new Map<string, ChunkText>()
  const missing: Candidate[] = []
  for (const c of candidates) {
    const hit = cache.get(key(c))
    if (hit) found.set(c.chunk_id, hit)
    else missing.push(c)
  }
  if (missing.length > 0) {
    // each document's first chunk (its opening, read through the (file_id, page_number, chunk_index) key)
    // one read, not a transaction with a role (the chunks of ready documents are public)
    const rows = await deps.sql<{ id: string; content: string; title: string | null; chunk_index: number; opening: string | null }[]>`
      select c.id, c.content, d.title, c.chunk_index,
             (select left(f.content, ${
      TOPIC_CHARS * 2
    }) from public.document_chunks f where f.file_id = c.file_id order by f.page_number, f.chunk_index limit 1) as opening
        from public.document_chunks c join public.documents d on d.id = c.file_id
       where c.id = any(${missing.map((m) => m.chunk_id)}) and d.status = 'ready'`
    for (const r of rows) {
      const entry = { text: r.content, title: r.title, chunk_index: Number(r.chunk_index), topic: r.opening === null ? null : openingSentence(r.opening) }
      found.set(r.id, entry)
      const candidate = missing.find((m) => m.chunk_id === r.id)!
      cache.set(key(candidate), entry)
    }
  }
  return candidates.filter((c) => found.has(c.chunk_id)).map((c) => ({ ...c, ...found.get(c.chunk_id)! }))
}
